"""AgentSession.objects: the selections every caller makes (live, expired, expiring, owned), each
the SQL of `retention.expires_at`, and the one erasure's ErasureCounts (live count, receipts)."""

import datetime as dt

import pytest
from django.utils import timezone

from sessions_app import erasure, retention
from sessions_app.choices import ErasureTrigger
from sessions_app.deletion_log.formats.lookup import receipt_lookup
from sessions_app.models import AgentSession
from tests.support.factories import make_session

pytestmark = pytest.mark.django_db


def _sessions_at_the_limits():
    """One session each side of the TTL and of the maximum age, and one well inside both."""
    now, tick = timezone.now(), dt.timedelta(seconds=5)
    ttl, max_age = retention.ttl(), retention.max_age()
    return {
        "fresh": make_session("anon-fresh"),
        "idle_past_ttl": make_session("anon-idle", last_activity=now - ttl - tick),
        "idle_within_ttl": make_session("anon-idle-ok", last_activity=now - ttl + dt.timedelta(minutes=30)),
        "too_old": make_session("anon-old", created=now - max_age - tick, last_activity=now),
    }


def test_live_and_expired_split_every_session_as_expires_at_says():
    made = _sessions_at_the_limits()
    now = timezone.now()
    live = set(AgentSession.objects.live().values_list("owner_id", flat=True))
    expired = set(AgentSession.objects.expired().values_list("owner_id", flat=True))
    assert live.isdisjoint(expired) and live | expired == {s.owner_id for s in made.values()}
    for session in made.values():
        assert (session.owner_id in live) == (retention.expires_at(session.created_at, session.last_activity_at) > now)
    assert expired == {"anon-idle", "anon-old"}


def test_expiring_is_live_now_and_expired_within_the_window():
    _sessions_at_the_limits()
    expiring = set(AgentSession.objects.expiring(dt.timedelta(hours=1)).values_list("owner_id", flat=True))
    assert expiring == {"anon-idle-ok"}


def test_owned_is_one_owners_session_by_its_id_live_or_expired():
    made = _sessions_at_the_limits()
    idle = made["idle_past_ttl"]
    assert list(AgentSession.objects.owned(idle.app_name, idle.owner_id, idle.session_id)) == [idle]
    assert not AgentSession.objects.owned(idle.app_name, "anon-fresh", idle.session_id).exists()
    assert not AgentSession.objects.owned(idle.app_name, idle.owner_id, idle.session_id).live().exists()


def test_the_erasure_counts_live_sessions_and_names_each_receipt():
    made = _sessions_at_the_limits()
    counts = erasure.erase_sessions(AgentSession.objects.all(), trigger=ErasureTrigger.ADMIN)
    assert (counts.sessions, counts.events, counts.live) == (4, 8, 2)
    assert sorted(counts.receipts) == sorted(receipt_lookup(s.owner_id, s.session_id) for s in made.values())
    assert not AgentSession.objects.exists()
