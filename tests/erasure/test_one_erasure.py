"""One erasure, whoever asks (issue 29): the owner's DELETE, the admin, ADK's delete_session, the
scheduled purge and the start-up purge all run `erasure.erase`, inside one transaction that
their own caller opens, and leave the same audit row and the same empty tables."""

import datetime as dt
import os

import pytest
import time_machine
from asgiref.sync import async_to_sync
from django.core.management import call_command
from django.db import connections, transaction
from django.urls import reverse
from django.utils import timezone

from agent import APP_NAME
from sessions_app import erasure
from sessions_app.adk.service import DjangoSessionService
from sessions_app.infra import supervisor
from sessions_app.management.commands.serve import METRICS_READY
from sessions_app.models import AgentSession, AppState, DeletionAudit, SessionEvent, UserState
from sessions_app.purge import purge_expired
from sessions_app.security.tokens import owner_id_for
from tests.support.privacy import fixture_resume

CHANGELIST = reverse("admin:sessions_app_agentsession_changelist")


class ServeStopped(Exception):
    """Raised where `serve` would become the supervisor: the start-up purge has run by then."""


@pytest.fixture
def erasures(monkeypatch):
    """Every call of the one erase function, with the trigger it was given."""
    calls, real = [], erasure.erase

    def recorded(sessions, trigger, **options):
        calls.append(str(trigger))
        return real(sessions, trigger, **options)

    monkeypatch.setattr(erasure, "erase", recorded)
    return calls


def _started(client) -> tuple[str, str]:
    body = client.post("/agent/sessions", {"resume_text": fixture_resume()}, content_type="application/json").json()
    session_id, token = body["session_id"], body["token"]
    answer = client.post(
        f"/agent/sessions/{session_id}/messages",
        {"message": "Please draft my job-search plan"},
        content_type="application/json",
        headers={"X-Session-Token": token},
    )
    assert answer.status_code == 200
    return session_id, token


def _by_the_owner(client, admin_user, monkeypatch, session_id, token):
    assert client.delete(f"/agent/sessions/{session_id}", headers={"X-Session-Token": token}).status_code == 204


def _by_the_admin(client, admin_user, monkeypatch, session_id, token):
    client.force_login(admin_user)
    pk = AgentSession.objects.get(session_id=session_id).pk
    client.post(CHANGELIST, {"action": "delete_selected_securely", "_selected_action": [pk], "post": "yes"})


def _by_adk(client, admin_user, monkeypatch, session_id, token):
    service = DjangoSessionService()
    async_to_sync(service.delete_session)(app_name=APP_NAME, user_id=owner_id_for(token), session_id=session_id)


def _by_the_purge(client, admin_user, monkeypatch, session_id, token):
    with time_machine.travel(timezone.now() + dt.timedelta(days=8)):
        purge_expired(trigger=DeletionAudit.Trigger.TTL)


def _at_start_up(client, admin_user, monkeypatch, session_id, token):
    def stop(*args):
        raise ServeStopped

    # `serve`'s second start, its metrics directory ready (serve.py): the one that purges.
    monkeypatch.setenv(METRICS_READY, "1")
    monkeypatch.setattr("subprocess.run", lambda *args, **kwargs: None)  # the system checks' child process
    monkeypatch.setattr(os, "execv", stop)  # PostgreSQL: serve becomes the supervisor
    monkeypatch.setattr(supervisor, "supervise_forks", stop)  # SQLite: serve forks its children
    monkeypatch.setattr(connections, "close_all", lambda: None)  # the test's own transaction stays open
    with time_machine.travel(timezone.now() + dt.timedelta(days=8)), pytest.raises(ServeStopped):
        call_command("serve")


def _with_the_account(client, admin_user, monkeypatch, session_id, token):
    """The session kept by a passkey account (docs/ACCOUNTS.md), erased by deleting the account."""
    from tests.support.account_client import AccountClient

    account = AccountClient(client)
    account.register()
    assert account.keep(session_id, token).status_code == 201
    assert account.delete().status_code == 200


WAYS = {
    "api": _by_the_owner,
    "admin": _by_the_admin,
    "adk": _by_adk,
    "ttl": _by_the_purge,
    "startup": _at_start_up,
    "account": _with_the_account,
}


@pytest.mark.django_db
@pytest.mark.parametrize("trigger", list(WAYS))
def test_every_way_of_deleting_runs_the_one_erasure_and_leaves_the_same_traces(
    trigger, client, admin_user, monkeypatch, erasures
):
    session_id, token = _started(client)
    events = SessionEvent.objects.count()
    assert events > 0

    WAYS[trigger](client, admin_user, monkeypatch, session_id, token)

    assert erasures == [trigger]
    assert list(DeletionAudit.objects.values_list("trigger", "sessions_deleted", "events_deleted")) == [
        (trigger, 1, events)
    ]
    for model in (AgentSession, SessionEvent, UserState, AppState):
        assert not model.objects.exists(), model.__name__


@pytest.mark.django_db(transaction=True)
def test_the_erasure_never_opens_its_own_transaction():
    """The caller decides what commits with it (the API's liveness check, a purge's batch): called
    outside a transaction it refuses, and erases nothing."""
    from tests.support.factories import make_session

    make_session()
    with pytest.raises(transaction.TransactionManagementError):
        erasure.erase(AgentSession.objects.all(), DeletionAudit.Trigger.API)
    assert AgentSession.objects.count() == 1 and not DeletionAudit.objects.exists()
