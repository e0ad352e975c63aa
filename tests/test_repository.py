"""The session repository and the layers on it: one erase for every way of deleting, the
turn's domain errors (a bug is a logged 500, not a model failure), the one private ADK
name the adapter uses, and appends in one call."""

import contextlib
import datetime as dt

import pytest
from asgiref.sync import async_to_sync
from django.utils import timezone
from google.adk.events.event import Event, EventActions

from agent import APP_NAME
from sessions_app import purge
from sessions_app.adk.service import DjangoSessionService, split_state
from sessions_app.models import AgentSession, AppState, DeletionAudit, SessionEvent, UserState
from sessions_app.security.crypto import token_context
from sessions_app.security.tokens import owner_id_for
from sessions_app.storage import appending, sessions
from tests.support.scripted_llm import call_response, text_response
from tests.support.session_client import say

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/sessions_app/agentsession/"


# --- one erase, whichever way a session is deleted ------------------------------------------


def _delete_through_adk(session_id, token, api, admin_client):
    async_to_sync(DjangoSessionService().delete_session)(
        app_name=APP_NAME, user_id=owner_id_for(token), session_id=session_id
    )


def _delete_through_the_api(session_id, token, api, admin_client):
    assert api.delete(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).status_code == 204


def _delete_through_the_admin(session_id, token, api, admin_client):
    pk = AgentSession.objects.get(session_id=session_id).pk
    selection = {"action": "delete_selected_securely", "_selected_action": [pk], "post": "yes"}
    assert admin_client.post(CHANGELIST, selection).status_code == 302


def _delete_through_the_purge(session_id, token, api, admin_client):
    AgentSession.objects.filter(session_id=session_id).update(last_activity_at=timezone.now() - dt.timedelta(days=30))
    assert purge.purge_expired(trigger=DeletionAudit.Trigger.TTL).sessions == 1


DELETIONS = {
    "adk": (_delete_through_adk, DeletionAudit.Trigger.ADK),
    "api": (_delete_through_the_api, DeletionAudit.Trigger.API),
    "admin": (_delete_through_the_admin, DeletionAudit.Trigger.ADMIN),
    "purge": (_delete_through_the_purge, DeletionAudit.Trigger.TTL),
}


@pytest.mark.parametrize("way", DELETIONS)
def test_every_way_of_deleting_leaves_the_same_audit_row_and_empty_tables(
    way, api, new_session, scripted_model, admin_client, settings
):
    settings.PURGE_BATCH_PAUSE_SECONDS = 0
    session_id, token = new_session()
    scripted_model(text_response("Hi 林語晴, the first answer."))
    assert say(api, session_id, token).status_code == 200  # the user's message and the reply
    delete, trigger = DELETIONS[way]

    delete(session_id, token, api, admin_client)

    # The same empty tables: no session, no event, no owner state (our agent writes no
    # `user:` keys; ADK's delete_session would keep them, as ADK's services do).
    assert [model.objects.count() for model in (AgentSession, SessionEvent, UserState)] == [0, 0, 0]
    assert AppState.objects.filter(state__gt={}).count() == 0
    # The same audit row: one, counts only.
    (audit,) = DeletionAudit.objects.values("trigger", "sessions_deleted", "events_deleted")
    assert audit == {"trigger": trigger, "sessions_deleted": 1, "events_deleted": 2}


# --- the turn: domain errors, and bugs are not model failures --------------------------------

QUOTED = "a bug's message quoting " + "林語晴"


def test_a_bug_in_a_tool_is_a_logged_500_not_a_model_failure(
    api, new_session, scripted_model, monkeypatch, captured_logs
):
    from agent import plans

    protected, _ = captured_logs
    session_id, token = new_session()

    def broken(*args, **kwargs):
        raise RuntimeError(QUOTED)

    monkeypatch.setattr(plans, "new_version_delta", broken)
    scripted_model(call_response("save_plan", {"plan": "1. Apply."}), text_response("Saved."))
    response = say(api, session_id, token)

    assert response.status_code == 500
    logged = protected.getvalue()
    assert "unhandled RuntimeError in API view" in logged and "in broken" in logged  # where, with the traceback
    assert QUOTED not in logged and "model turn failed" not in logged
    # Nothing half-saved, nothing left locked: the next turn runs.
    assert SessionEvent.objects.count() == 0
    monkeypatch.undo()
    scripted_model(text_response("Hi again."))
    assert say(api, session_id, token).status_code == 200


def test_no_token_in_context_is_a_logged_500_not_a_404(api, new_session, monkeypatch, captured_logs):
    """KeyUnavailable means the code forgot the caller's token: a bug of ours, not a miss."""
    from sessions_app.api import views

    protected, _ = captured_logs
    session_id, token = new_session()
    monkeypatch.setattr(views, "token_context", lambda token: contextlib.nullcontext())

    response = api.get(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token)

    assert response.status_code == 500
    assert "unhandled KeyUnavailable in API view" in protected.getvalue()


def test_a_session_deleted_while_the_model_runs_is_the_uniform_404(api, new_session, scripted_model, monkeypatch):
    from sessions_app.turns import service as turns

    session_id, token = new_session()
    scripted_model(text_response("Hi."))
    submit = turns.event_loop.submit

    class ThenDelete:
        """The running turn, but another request deletes the session once the model has answered,
        before the turn's writes."""

        def __init__(self, running):
            self.running = running

        def result(self, timeout=None):
            events = self.running.result(timeout)
            async_to_sync(DjangoSessionService().delete_session)(
                app_name=APP_NAME, user_id=owner_id_for(token), session_id=session_id
            )
            return events

        async def finished(self):
            await self.running.finished()

        def done(self):
            return self.running.done()

        def cancel(self):
            self.running.cancel()

    monkeypatch.setattr(turns.event_loop, "submit", lambda coroutine: ThenDelete(submit(coroutine)))
    response = say(api, session_id, token)
    assert response.status_code == 404
    assert SessionEvent.objects.count() == 0


# --- the repository without HTTP -------------------------------------------------------------

NO_DELTAS = {"app": {}, "user": {}, "session": {}}


def _event(n, **delta):
    return Event(
        id=f"e{n}", author="user", invocation_id="inv", timestamp=1000.0 + n, actions=EventActions(state_delta=delta)
    )


def test_append_events_stores_a_turn_in_one_call_and_a_retry_once():
    with token_context("repository-test-token"):
        created = sessions.create("app", "owner", None, {**NO_DELTAS, "session": {"k": 0}})
        events = [(_event(n), {**NO_DELTAS, "session": {"k": n}}) for n in (1, 2, 3)]
        appended = appending.append_events("app", "owner", created.session_id, events, appending.WriterView(0))
        assert (appended.revision, appended.stored) == (3, [True, True, True])

        again = appending.append_events("app", "owner", created.session_id, events, appending.WriterView(3))
        assert (again.revision, again.stored) == (3, [False, False, False])
        with pytest.raises(appending.StaleWriter):
            appending.append_events(
                "app", "owner", created.session_id, [(_event(4), NO_DELTAS)], appending.WriterView(2)
            )

        loaded = sessions.load("app", "owner", created.session_id)
    assert (loaded.revision, loaded.state, [e.id for e in loaded.events]) == (3, {"k": 3}, ["e1", "e2", "e3"])
    assert list(SessionEvent.objects.order_by("seq").values_list("seq", flat=True)) == [1, 2, 3]


def test_split_state_is_adk_s_own_split():
    """The adapter splits with ADK's public prefixes and pydantic-core: prefixes split, temp
    dropped, values made JSON-safe as ADK's database services store them."""
    when = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    deltas = split_state({"app:a": 1, "user:u": [1], "temp:t": "gone", "s": when})
    assert deltas == {"app": {"a": 1}, "user": {"u": [1]}, "session": {"s": "2026-01-02T03:04:05Z"}}
    assert split_state(None) == NO_DELTAS


@pytest.mark.parametrize(
    "state",
    [
        {},
        {"app:a": 1, "user:u": [1], "temp:t": "gone", "s": dt.datetime(2026, 1, 2, tzinfo=dt.UTC)},
        {"app:": "empty key", "user:nested": {"a": [1, {"b": None}]}, "temp:": 0, "plain": "語晴"},
        {"callback": len, "ok": 2, "app:set": {3}, "bytes": b"\x00"},
    ],
    ids=["empty", "prefixes", "edges", "not-json"],
)
def test_split_state_matches_adk_s_private_helper(state):
    """What ADK's own services do (google.adk.sessions._session_util, private, compared here
    only: the adapter does not import it), for the pinned ADK."""
    from google.adk.sessions import _session_util

    assert split_state(state) == _session_util.extract_json_safe_state_delta(state)


# --- the write gate is the database backend's -------------------------------------------------


@pytest.mark.sqlite_only
@pytest.mark.django_db(transaction=True)
def test_every_transaction_passes_the_write_gate_of_our_backend():
    """The gate lives in a database backend of ours (ENGINE), not in patched wrapper methods:
    a transaction holds it from BEGIN to COMMIT or ROLLBACK."""
    from django.db import connections, transaction

    from sessions_app.infra.sqlite_backend.base import DatabaseWrapper

    connection = connections["default"]
    assert isinstance(connection, DatabaseWrapper)
    assert connection._holds_write_gate is None
    with transaction.atomic():
        assert connection._holds_write_gate is not None
    assert connection._holds_write_gate is None
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        assert connection._holds_write_gate is not None
        raise ZeroDivisionError
    assert connection._holds_write_gate is None
