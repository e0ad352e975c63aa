"""A rolled back or truncated history fails like tampering (hardening issue, item 5).

Someone who can write the database but holds no token puts back an older
sealed state, deletes events or reorders them. Each must get the uniform 404
on every read, one log line naming the session and the kind of failure (no
content, no token), and a count on the admin's retention policy page.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid

import pytest
from asgiref.sync import async_to_sync
from django.urls import reverse
from django.utils import timezone
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import GetSessionConfig

from agent import APP_NAME
from sessions_app import selectors, selectors_admin
from sessions_app.adk.service import DjangoSessionService
from sessions_app.models import AgentSession, SessionEvent
from sessions_app.security.crypto import token_context
from sessions_app.security.tokens import owner_id_for
from sessions_app.storage import turn_lock
from tests.support.answers import comparable
from tests.support.privacy import encodings, fixture_markers
from tests.support.session_client import say

pytestmark = pytest.mark.django_db

TURNS = ("請依照履歷規劃求職 Quokka-4410", "Focus on remote roles Quokka-8823")
READS = [
    ("get", "/agent/sessions/{id}", None),
    ("get", "/agent/sessions/{id}/messages", None),
    ("post", "/agent/sessions/{id}/messages", {"message": "請更新我的計畫"}),
    ("get", "/agent/sessions/{id}/export", None),
]
POLICY = reverse("admin:sessions_app_agentsession_policy")


def _events(session_id: str) -> list[SessionEvent]:
    return list(SessionEvent.objects.filter(agent_session__session_id=session_id).order_by("pk"))


@pytest.fixture
def two_turns(api, new_session):
    """A session after two turns (offline model), with what was stored after turn 1."""
    session_id, token = new_session()
    assert say(api, session_id, token, TURNS[0]).status_code == 200
    row = AgentSession.objects.get(session_id=session_id)
    after_turn_1 = {"state": row.state, "revision": row.revision, "events": [e.pk for e in _events(session_id)]}
    assert say(api, session_id, token, TURNS[1]).status_code == 200
    assert len(_events(session_id)) > len(after_turn_1["events"]) + 1
    return session_id, token, after_turn_1


def _assert_every_read_is_the_uniform_404(api, session_id, token, kind, caplog):
    baseline = comparable(api.get(f"/agent/sessions/{uuid.uuid4()}", HTTP_X_SESSION_TOKEN=token))
    rows_before = (SessionEvent.objects.count(), AgentSession.objects.get(session_id=session_id).revision)
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        for method, path, body in READS:
            response = getattr(api, method)(path.format(id=session_id), body, format="json", HTTP_X_SESSION_TOKEN=token)
            assert comparable(response) == baseline, (method, path, response.content)
    # Nothing was written by the refused turn, and its lock was released.
    assert (SessionEvent.objects.count(), AgentSession.objects.get(session_id=session_id).revision) == rows_before
    assert not turn_lock.turn_is_locked(AgentSession.objects.get(session_id=session_id).pk)

    # One line per refused read: the session's public id and the kind, nothing else.
    lines = [r.getMessage() for r in caplog.records if r.name == "sessions_app.storage.failure_counts"]
    assert lines == [f"integrity failure: session={session_id} kind={kind}"] * len(READS)
    assert all(r.levelno == logging.WARNING for r in caplog.records if r.name == "sessions_app.storage.failure_counts")
    logged = caplog.text.encode("utf-8")
    for secret in fixture_markers() + list(TURNS) + [token]:
        for form, needle in encodings(secret).items():
            assert needle not in logged, (secret, form)


# --- (a) an older state put back --------------------------------------------------------


def test_turn_1_state_put_back_with_its_revision_is_refused(api, two_turns, caplog):
    session_id, token, after_turn_1 = two_turns
    AgentSession.objects.filter(session_id=session_id).update(
        state=after_turn_1["state"], revision=after_turn_1["revision"]
    )
    _assert_every_read_is_the_uniform_404(api, session_id, token, "state_replayed", caplog)


def test_turn_1_state_put_back_alone_is_refused(api, two_turns, caplog):
    session_id, token, after_turn_1 = two_turns
    AgentSession.objects.filter(session_id=session_id).update(state=after_turn_1["state"])
    _assert_every_read_is_the_uniform_404(api, session_id, token, "state_tampered", caplog)


# --- (b) truncated: turn 2's events deleted -----------------------------------------------


def test_turn_2_events_deleted_are_refused(api, two_turns, caplog):
    session_id, token, after_turn_1 = two_turns
    SessionEvent.objects.filter(agent_session__session_id=session_id).exclude(pk__in=after_turn_1["events"]).delete()
    _assert_every_read_is_the_uniform_404(api, session_id, token, "events_missing", caplog)


def test_turn_2_events_deleted_and_revision_put_back_are_refused(api, two_turns, caplog):
    # The revision matches the events again, but the state was sealed at turn 2's revision.
    session_id, token, after_turn_1 = two_turns
    SessionEvent.objects.filter(agent_session__session_id=session_id).exclude(pk__in=after_turn_1["events"]).delete()
    AgentSession.objects.filter(session_id=session_id).update(revision=after_turn_1["revision"])
    _assert_every_read_is_the_uniform_404(api, session_id, token, "state_tampered", caplog)


# --- (c) a middle event deleted ---------------------------------------------------------------


def test_a_middle_event_deleted_is_refused(api, two_turns, caplog):
    session_id, token, _ = two_turns
    events = _events(session_id)
    SessionEvent.objects.filter(pk=events[len(events) // 2].pk).delete()
    _assert_every_read_is_the_uniform_404(api, session_id, token, "events_missing", caplog)


# --- (d) two events swapped -------------------------------------------------------------------


def test_two_events_swapped_whole_are_refused(api, two_turns, caplog):
    """Every column that describes the event moves, so each still opens as itself
    (id and time included): only its position in the conversation changed."""
    session_id, token, _ = two_turns
    first, last = _events(session_id)[0], _events(session_id)[-1]
    columns = ("event_id", "invocation_id", "author", "timestamp", "event_data")
    SessionEvent.objects.filter(pk=first.pk).update(**{c: getattr(last, c) for c in columns})
    SessionEvent.objects.filter(pk=last.pk).update(**{c: getattr(first, c) for c in columns})
    _assert_every_read_is_the_uniform_404(api, session_id, token, "event_tampered", caplog)


# --- windows of the ADK store, and no false alarm ------------------------------------------------

WINDOWS = {
    "no events": GetSessionConfig(num_recent_events=0),
    "the last one": GetSessionConfig(num_recent_events=1),
    "after a time": GetSessionConfig(after_timestamp=0.0),
}


@pytest.mark.parametrize("config", WINDOWS.values(), ids=WINDOWS.keys())
def test_the_store_refuses_a_truncated_session_whatever_window_it_loads(two_turns, config):
    session_id, token, after_turn_1 = two_turns
    SessionEvent.objects.filter(pk=_events(session_id)[-2].pk).delete()  # not in the last-one window
    with token_context(token), pytest.raises(Exception) as failure:
        async_to_sync(DjangoSessionService().get_session)(
            app_name=APP_NAME, user_id=owner_id_for(token), session_id=session_id, config=config
        )
    assert (type(failure.value).__name__, failure.value.kind) == ("IntegrityCheckFailed", "events_missing")


def test_an_append_onto_a_put_back_revision_is_refused_not_a_500(two_turns):
    """A writer that never read the session (no storage marker) appends after the rollback:
    its event's number is taken, which the unique (session, seq) constraint reports."""
    from google.adk.sessions.session import Session

    session_id, token, after_turn_1 = two_turns
    AgentSession.objects.filter(session_id=session_id).update(
        state=after_turn_1["state"], revision=after_turn_1["revision"]
    )
    events_before = SessionEvent.objects.count()
    session = Session(app_name=APP_NAME, user_id=owner_id_for(token), id=session_id, last_update_time=2e9)
    with token_context(token), pytest.raises(Exception) as failure:
        async_to_sync(DjangoSessionService().append_event)(session, Event(author="user", invocation_id="late"))
    assert (type(failure.value).__name__, failure.value.kind) == ("IntegrityCheckFailed", "state_replayed")
    assert SessionEvent.objects.count() == events_before


def test_an_append_between_reading_the_row_and_its_events_is_no_failure(two_turns):
    """The API reads the session row, then its events: a turn that commits in
    between adds events past the row's revision, which is not tampering."""
    session_id, token, _ = two_turns
    row = AgentSession.objects.get(session_id=session_id)
    service = DjangoSessionService()
    with token_context(token):
        adk_session = async_to_sync(service.get_session)(
            app_name=APP_NAME, user_id=owner_id_for(token), session_id=session_id
        )
        async_to_sync(service.append_event)(adk_session, Event(author="user", invocation_id="late"))
        content = selectors.session_content(row)  # the row as read before the append
    assert [e.id for e in content.events] == [e.id for e in adk_session.events[:-1]]
    assert AgentSession.objects.get(session_id=session_id).revision == row.revision + 1


# --- (e) the count on the admin's retention page ----------------------------------------------


@pytest.mark.usefixtures("in_english")
def test_the_policy_page_counts_integrity_failures_by_kind(api, two_turns, admin_client):
    from sessions_app.models import IntegrityFailure

    session_id, token, after_turn_1 = two_turns
    AgentSession.objects.filter(session_id=session_id).update(
        state=after_turn_1["state"], revision=after_turn_1["revision"]
    )
    for _ in range(2):
        assert api.get(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).status_code == 404
    IntegrityFailure.objects.filter(pk=IntegrityFailure.objects.earliest("created_at").pk).update(
        created_at=timezone.now() - dt.timedelta(hours=25)
    )

    html = admin_client.get(POLICY).content.decode()
    table = html[html.index('id="integrity-failures"') :]
    table = table[: table.index("</table>")]
    assert "revision behind the stored events" in table
    assert "<td>1</td><td>2</td>" in table.replace("\n", "").replace(" ", "")  # last 24 h, total
    assert session_id not in html  # counts only


def _failures(now, *kinds_and_ages):
    from sessions_app.models import IntegrityFailure

    for kind, age in kinds_and_ages:
        failure = IntegrityFailure.objects.create(kind=kind)
        IntegrityFailure.objects.filter(pk=failure.pk).update(created_at=now - age)


def test_the_last_day_of_integrity_failures_is_24_hours_to_the_second():
    now = timezone.now()
    day = dt.timedelta(hours=24)
    _failures(now, ("state_replayed", day), ("state_replayed", day + dt.timedelta(seconds=1)))
    counts = selectors_admin.integrity_failure_counts(now)
    assert (counts.last_day, counts.total) == (1, 2)


def test_integrity_failures_are_listed_most_frequent_first_then_by_kind_with_totals_over_every_kind():
    from sessions_app.choices import FailureKind

    now, hour = timezone.now(), dt.timedelta(hours=1)
    # Stored in the reverse of the expected order, and kinds sorting otherwise than their counts.
    _failures(now, ("state_tampered", hour), ("events_missing", 30 * hour), ("event_tampered", hour))
    _failures(now, *[("state_replayed", hour)] * 2, ("state_replayed", 30 * hour))
    counts = selectors_admin.integrity_failure_counts(now)
    assert counts.by_kind == [
        (FailureKind.STATE_REPLAYED.label, 2, 3),
        (FailureKind.EVENT_TAMPERED.label, 1, 1),
        (FailureKind.EVENTS_MISSING.label, 0, 1),
        (FailureKind.STATE_TAMPERED.label, 1, 1),
    ]
    assert (counts.last_day, counts.total) == (4, 6)


def test_a_kind_of_integrity_failure_no_longer_known_is_shown_by_its_stored_value(admin_client):
    now = timezone.now()
    _failures(now, ("retired_kind", dt.timedelta(hours=1)), ("state_replayed", dt.timedelta(hours=1)))
    assert selectors_admin.integrity_failure_counts(now).by_kind[0][0] == "retired_kind"
    html = admin_client.get(POLICY).content.decode()
    table = html[html.index('id="integrity-failures"') :]
    table = table[: table.index("</table>")].replace("\n", "").replace(" ", "")
    assert "<td>retired_kind</td><td>1</td><td>1</td>" in table
    assert "<td>2</td><td>2</td></tr>" in table  # all kinds: last 24 h, total
