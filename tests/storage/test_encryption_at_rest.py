"""Encryption at rest keyed by the owner's token (issue 7).

What someone holding the database file (or a copy of it) can read: metadata
only. What a wrong key, an altered or a moved ciphertext gets through the API:
the uniform 404, never a 500 and never garbled text. And the store refuses to
read or write content without a token, while deleting needs none.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions import Session

from agent import APP_NAME
from sessions_app import selectors
from sessions_app.adk.service import DjangoSessionService
from sessions_app.models import AgentSession, AppState, SessionEvent, UserState
from sessions_app.security import crypto, sealing
from sessions_app.security.crypto import VERSION, DecryptionFailed, KeyUnavailable, token_context
from sessions_app.security.tokens import owner_id_for
from sessions_app.storage import turn_lock
from tests.support.answers import comparable
from tests.support.privacy import encodings, find_chunks, find_markers, fixture_markers, fixture_resume, sealed_chunks
from tests.support.scripted_llm import text_response
from tests.support.session_client import say

MESSAGES = ("請依照履歷規劃求職 Wombat-5531", "Focus on remote roles Wombat-7702")
USER_STATE_MARKER = "偏好遠端 Wombat-user-state"
SECRETS = fixture_markers() + list(MESSAGES)

# --- what may be read without the token ----------------------------------------------
# docs/DATA_INVENTORY.md, "Encryption at rest", lists the same columns.
CLEAR_COLUMNS = {
    AgentSession: {
        "id",
        "app_name",
        "owner_id",
        "session_id",
        "created_at",
        "last_activity_at",
        "revision",
        "turn_started_at",
        "turn_holder",
        "model_providers",  # which model providers received the content (no personal data)
        "plan_versions",  # how many plans were saved, a count: the deletion log's entry needs it without a key
    },
    SessionEvent: {"id", "agent_session_id", "seq", "event_id", "invocation_id", "author", "timestamp"},
    UserState: {"id", "app_name", "owner_id", "updated_at"},
    # ADK `app:` state has no owner to key it: in clear, and it must stay empty.
    AppState: {"id", "app_name", "state", "updated_at"},
}
SEALED_COLUMNS = {AgentSession: {"state"}, SessionEvent: {"event_data"}, UserState: {"state"}, AppState: set()}


def _converse(api, new_session) -> tuple[str, str]:
    session_id, token = new_session()
    for message in MESSAGES:
        assert say(api, session_id, token, message).status_code == 200
    return session_id, token


def _vacuum_copy(path: Path) -> Path:
    """What an operator's backup would hold: `VACUUM INTO` a fresh file."""
    with connection.cursor() as cursor:
        cursor.execute("VACUUM INTO %s", [str(path)])
    return path


# --- nothing in clear, at any point ----------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_resume_is_never_in_clear_in_the_files_or_a_backup(api, stored_files, tmp_path):
    # A backup copy is SQLite's VACUUM INTO; on PostgreSQL the data directory and WAL.
    sqlite = connection.vendor == "sqlite"

    def scan(step: str) -> None:
        files = stored_files() + ([_vacuum_copy(tmp_path / f"backup-{step}.db")] if sqlite else [])
        assert find_markers(files, SECRETS) == [], step

    created = api.post("/agent/sessions", {"resume_text": fixture_resume()}, format="json").json()
    session_id, token = created["session_id"], created["token"]
    scan("after create")
    for index, message in enumerate(MESSAGES):
        assert say(api, session_id, token, message).status_code == 200
        scan(f"after turn {index + 1}")
    export = api.get(f"/agent/sessions/{session_id}/export", HTTP_X_SESSION_TOKEN=token)
    assert export.status_code == 200
    scan("after export")

    # Control: the backup holds the session (its ciphertext), and the same
    # scan finds every marker, in both encodings, in what the values say once
    # opened: stored in clear, the scan would have failed.
    backup = [_vacuum_copy(tmp_path / "backup-control.db")] if sqlite else stored_files()
    chunks = sealed_chunks()
    assert {index for _, index in find_chunks(backup, chunks)} == set(range(len(chunks)))
    opened = tmp_path / "opened.json"
    opened.write_bytes(_opened_values(session_id, token))
    found = find_markers([opened], SECRETS)
    assert {marker for _, marker, _ in found} == set(SECRETS)
    assert {encoding for _, marker, encoding in found if marker == "林語晴"} >= {"utf-8", "json-escaped"}

    assert api.delete(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).status_code == 204
    scan("after delete")


@pytest.mark.django_db(transaction=True)
def test_the_scan_finds_a_resume_stored_without_sealing(api, stored_files, monkeypatch):
    """Control of the scans above, on whichever database runs (on PostgreSQL its data
    directory and WAL): with sealing made a pass-through, the same scan finds the resume.
    Its marker is new on every run, so what it leaves in a server's WAL matches no other scan."""
    marker = f"控制標記-{uuid.uuid4().hex}"
    monkeypatch.setattr(crypto.Sealer, "seal", lambda self, plaintext, place: plaintext)
    created = api.post("/agent/sessions", {"resume_text": f"{marker}\nData Analyst"}, format="json")
    assert created.status_code == 201
    assert {encoding for _, _, encoding in find_markers(stored_files(), [marker])} >= {"json-escaped"}
    AgentSession.objects.all().delete()


def _opened_values(session_id: str, token: str) -> bytes:
    """The session's stored values, opened, as the store serialises them before sealing."""
    session = AgentSession.objects.get(session_id=session_id)
    with token_context(token):
        content = selectors.session_content(session)
    state = json.dumps(content.state).encode("ascii")
    events = [event.model_dump_json(exclude_none=True).encode() for event in content.events]
    return b"\n".join([state, *events])


# --- only metadata is readable -----------------------------------------------------------


def _columns(model) -> set[str]:
    return {field.column for field in model._meta.concrete_fields}


@pytest.mark.django_db(transaction=True)
def test_only_metadata_columns_are_readable_without_the_token(api, new_session):
    session_id, token = _converse(api, new_session)
    # Our agent writes no `user:` state; a future one might, so write some.
    owner_id = owner_id_for(token)
    with token_context(token):
        service = DjangoSessionService()
        session = async_to_sync(service.get_session)(app_name=APP_NAME, user_id=owner_id, session_id=session_id)
        event = Event(
            author="user",
            invocation_id="inv-user-state",
            actions=EventActions(state_delta={"user:pref": USER_STATE_MARKER}),
        )
        async_to_sync(service.append_event)(session, event)
    secrets = SECRETS + [USER_STATE_MARKER, token]

    # Every column is classified: a new one fails here until it is.
    for model in CLEAR_COLUMNS:
        assert _columns(model) == CLEAR_COLUMNS[model] | SEALED_COLUMNS[model], model.__name__
    assert AppState.objects.count() == 0  # in clear, so it must hold nothing

    with connection.cursor() as cursor:
        for model in CLEAR_COLUMNS:
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(model._meta.db_table)}")
            names = [column[0] for column in cursor.description]
            for row in cursor.fetchall():
                for name, value in zip(names, row, strict=True):
                    if name in SEALED_COLUMNS[model]:
                        assert _is_sealed(value), (model.__name__, name)
                    raw = value if isinstance(value, bytes) else str(value).encode("utf-8")
                    for secret in secrets:
                        for form, needle in encodings(secret).items():
                            assert needle not in raw, (model.__name__, name, secret, form)

    # The sealed values are ours, and open with the owner's token only.
    stored = AgentSession.objects.get(session_id=session_id)
    with token_context(token):
        content = selectors.session_content(stored)
        assert "resume_text" in content.state and len(content.events) == SessionEvent.objects.count()
        sealed_user_state = UserState.objects.get(owner_id=owner_id).state
        owner = sealing.owner_sealer(APP_NAME, owner_id)
        assert sealing.open_user_state(owner, sealed_user_state) == {"pref": USER_STATE_MARKER}
    with token_context("x" * 43), pytest.raises(DecryptionFailed):
        selectors.session_content(stored)


def _is_sealed(value) -> bool:
    return isinstance(value, bytes) and len(value) >= 1 + 12 + 16 and value[0] == VERSION


# --- a wrong key, altered or moved ciphertext: the uniform 404 ----------------------------

READS = [
    ("get", "/agent/sessions/{id}", None),
    ("get", "/agent/sessions/{id}/messages", None),
    ("post", "/agent/sessions/{id}/messages", {"message": "請更新我的計畫"}),
    ("get", "/agent/sessions/{id}/export", None),
]


def _flip_a_byte(sealed: bytes) -> bytes:
    altered = bytearray(sealed)
    altered[len(altered) // 2] ^= 0x01
    return bytes(altered)


def _events(session_id: str) -> list[SessionEvent]:
    return list(SessionEvent.objects.filter(agent_session__session_id=session_id).order_by("pk"))


def _alter_state(mine, other):
    row = AgentSession.objects.get(session_id=mine)
    AgentSession.objects.filter(pk=row.pk).update(state=_flip_a_byte(row.state))


def _alter_event(mine, other):
    event = _events(mine)[1]
    SessionEvent.objects.filter(pk=event.pk).update(event_data=_flip_a_byte(event.event_data))


def _swap_two_events(mine, other):
    first, second = _events(mine)[:2]
    SessionEvent.objects.filter(pk=first.pk).update(event_data=second.event_data)
    SessionEvent.objects.filter(pk=second.pk).update(event_data=first.event_data)


def _state_of_another_session(mine, other):
    AgentSession.objects.filter(session_id=mine).update(state=AgentSession.objects.get(session_id=other).state)


def _event_of_another_session(mine, other):
    # The other session's event, id and time included: only the key differs.
    theirs = _events(other)[0]
    SessionEvent.objects.filter(pk=_events(mine)[0].pk).update(
        event_id=theirs.event_id, timestamp=theirs.timestamp, event_data=theirs.event_data
    )


def _state_in_clear(mine, other):
    # A row written before encryption (or by hand): JSON text, not sealed bytes.
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {AgentSession._meta.db_table} SET state = %s WHERE session_id = %s",
            [json.dumps({"resume_text": "in clear"}), mine],
        )


TAMPERING = {
    "one state byte altered": _alter_state,
    "one event byte altered": _alter_event,
    "two events' ciphertexts swapped": _swap_two_events,
    "state of another session": _state_of_another_session,
    "event of another session": _event_of_another_session,
    "state stored in clear": _state_in_clear,
}


@pytest.fixture
def two_sessions(api, new_session, scripted_model):
    """Two sessions with a turn each; afterwards any model call would fail the turn."""
    sessions = []
    for _ in range(2):
        scripted_model(text_response("Hi 林語晴, noted."))
        session_id, token = new_session()
        assert say(api, session_id, token, "first").status_code == 200
        sessions.append((session_id, token))
    return sessions, scripted_model()


@pytest.mark.django_db
@pytest.mark.parametrize("tamper", TAMPERING.values(), ids=TAMPERING.keys())
def test_altered_or_moved_ciphertext_is_the_uniform_404(api, two_sessions, tamper):
    ((mine, token), (other, _)), model = two_sessions
    baseline = comparable(api.get(f"/agent/sessions/{uuid.uuid4()}", HTTP_X_SESSION_TOKEN=token))
    tamper(mine, other)
    rows_before = (SessionEvent.objects.count(), AgentSession.objects.get(session_id=mine).revision)

    for method, path, body in READS:
        response = getattr(api, method)(path.format(id=mine), body, format="json", HTTP_X_SESSION_TOKEN=token)
        assert comparable(response) == baseline, (method, path, response.content)
    assert model.requests == []  # no turn started
    assert (SessionEvent.objects.count(), AgentSession.objects.get(session_id=mine).revision) == rows_before
    assert not turn_lock.turn_is_locked(AgentSession.objects.get(session_id=mine).pk)  # the turn lock was released
    # The owner can still delete it: deleting needs no key.
    assert api.delete(f"/agent/sessions/{mine}", HTTP_X_SESSION_TOKEN=token).status_code == 204


@pytest.mark.django_db
def test_another_sessions_token_opens_nothing_even_on_a_row_moved_to_its_owner(api, two_sessions):
    """Someone who can write the database moves my session to their owner id.

    Their token now finds the row, but it derives another key: the uniform 404.
    """
    ((mine, _), (other, their_token)), model = two_sessions
    baseline = comparable(api.get(f"/agent/sessions/{uuid.uuid4()}", HTTP_X_SESSION_TOKEN=their_token))
    AgentSession.objects.filter(session_id=mine).update(owner_id=owner_id_for(their_token))

    for method, path, body in READS:
        response = getattr(api, method)(path.format(id=mine), body, format="json", HTTP_X_SESSION_TOKEN=their_token)
        assert comparable(response) == baseline, (method, path)
    assert model.requests == []
    assert api.get(f"/agent/sessions/{other}", HTTP_X_SESSION_TOKEN=their_token).status_code == 200


# --- the store and the key --------------------------------------------------------------

APP, USER = "my_app", "store-user"


@pytest.mark.django_db(transaction=True)
def test_the_store_reads_and_writes_content_only_with_a_token():
    service = DjangoSessionService()
    with pytest.raises(KeyUnavailable):
        async_to_sync(service.create_session)(app_name=APP, user_id=USER, state={"resume_text": "x"})
    assert AgentSession.objects.count() == 0  # nothing written

    with token_context("store-test-token"):
        session = async_to_sync(service.create_session)(app_name=APP, user_id=USER, state={"k": "v"})
    with pytest.raises(KeyUnavailable):
        async_to_sync(service.append_event)(session, Event(author="user", invocation_id="inv", timestamp=time.time()))
    assert SessionEvent.objects.count() == 0
    with pytest.raises(KeyUnavailable):
        async_to_sync(service.get_session)(app_name=APP, user_id=USER, session_id=session.id)
    with token_context("another-token"), pytest.raises(DecryptionFailed):
        async_to_sync(service.get_session)(app_name=APP, user_id=USER, session_id=session.id)

    # Deleting needs no key, as the purge and the admin need none.
    async_to_sync(service.delete_session)(app_name=APP, user_id=USER, session_id=session.id)
    assert AgentSession.objects.count() == 0


# --- one owner, several sessions: each value is bound to its own session -------------------


def _same_owner_sessions_with_one_event_each(service, token: str) -> tuple[Session, Session]:
    """Two sessions of ONE owner under ONE token (ADK's service allows it, the API does not), each
    at revision 1 with one event, so a state or an event copied from one to the other sits at the
    very place (revision, sequence number, event id, time) it was sealed for."""
    sessions = []
    with token_context(token):
        for label in ("first", "second"):
            session = async_to_sync(service.create_session)(app_name=APP, user_id=USER, state={"note": label})
            event = Event(author="user", invocation_id=f"inv-{label}", timestamp=1_700_000_000.0)
            async_to_sync(service.append_event)(session, event)
            sessions.append(session)
    return tuple(sessions)


def _copy_state(source: str, target: str) -> None:
    AgentSession.objects.filter(session_id=target).update(state=AgentSession.objects.get(session_id=source).state)


def _copy_event(source: str, target: str) -> None:
    theirs = _events(source)[0]
    SessionEvent.objects.filter(pk=_events(target)[0].pk).update(
        event_id=theirs.event_id, timestamp=theirs.timestamp, event_data=theirs.event_data
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("copy", [_copy_state, _copy_event], ids=["state", "event"])
def test_a_value_copied_between_two_sessions_of_one_owner_does_not_open(copy):
    """The sealing scope names the session id (issue 39, finding 12): one owner's token derives a
    key per session, so the same token cannot open one session's value in another. Seen failing
    with the id dropped from SessionSealer's scope (the copied value then opened as the second
    session's)."""
    service, token = DjangoSessionService(), "one-owner-two-sessions-token"
    first, second = _same_owner_sessions_with_one_event_each(service, token)
    copy(first.id, second.id)

    with token_context(token):
        assert async_to_sync(service.get_session)(app_name=APP, user_id=USER, session_id=first.id).state["note"] == (
            "first"
        )
        with pytest.raises(sealing.IntegrityCheckFailed):
            async_to_sync(service.get_session)(app_name=APP, user_id=USER, session_id=second.id)
