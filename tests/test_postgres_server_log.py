"""PostgreSQL's own log holds no content, even when a statement carrying content fails.

With `log_min_error_statement = error` (the default) the server logs the text of every
statement that fails, and Django's psycopg binds parameters on the client, so the failing
statement is logged with its values inlined (a bytea in hex). Content reaches PostgreSQL
sealed, so what such a line can hold is ciphertext. The test makes the repository's INSERT
of a message fail (an event already stored where the next one goes, as a history put back
would leave it) and reads the server's log file. (Runs in the PostgreSQL + Redis leg.)
"""

import uuid
from pathlib import Path

import pytest
from django.db import connection
from google.adk.events.event import Event
from google.genai import types

from agent import APP_NAME
from sessions_app.models import AgentSession, SessionEvent
from sessions_app.security import crypto, sealing
from sessions_app.security.crypto import token_context
from sessions_app.storage import appending
from tests.support.privacy import find_in_text

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]


def _server_log() -> Path:
    """The file the server logs to: its log collector's, or Debian's (pg_ctlcluster sends
    the server's stderr to /var/log/postgresql/postgresql-<major>-<cluster>.log)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_logfile(), current_setting('data_directory')")
        collector_file, data_directory = cursor.fetchone()
    data_directory = Path(data_directory)
    if collector_file:
        return data_directory / collector_file
    major = connection.pg_version // 10000
    path = Path(f"/var/log/postgresql/postgresql-{major}-{data_directory.name}.log")
    assert path.is_file(), f"the server's log is neither collected nor at {path}: cannot check it here"
    return path


def _an_append_whose_insert_fails(api, message: str) -> None:
    """The repository's append of a user's message, its INSERT failing on the (session, seq) key."""
    created = api.post("/agent/sessions", {"resume_text": "Lin Yu-Ching\nData Analyst"}, format="json")
    session_id, token = created.json()["session_id"], created.json()["token"]
    session = AgentSession.objects.get(session_id=session_id)
    SessionEvent.objects.create(
        agent_session=session, seq=session.revision + 1, event_id="x", timestamp=0, event_data=b""
    )
    event = Event(author="user", content=types.Content(role="user", parts=[types.Part(text=message)]))
    no_deltas = {"app": {}, "user": {}, "session": {}}
    with token_context(token), pytest.raises(sealing.IntegrityCheckFailed):
        appending.append_events(
            APP_NAME, session.owner_id, session_id, [(event, no_deltas)], appending.WriterView(session.revision)
        )


def _logged_since(log: Path, offset: int) -> str:
    with open(log, "rb") as file:
        file.seek(offset)
        return file.read().decode("utf-8", errors="replace")


def test_a_failing_statement_leaves_no_content_in_the_server_log(api):
    log = _server_log()
    offset, marker = log.stat().st_size, f"日誌標記-{uuid.uuid4().hex}"
    _an_append_whose_insert_fails(api, f"{marker} please plan")
    logged = _logged_since(log, offset)
    assert "duplicate key value violates unique constraint" in logged  # the statement was logged
    assert "STATEMENT:" in logged
    assert find_in_text(logged, [marker]) == []


def test_the_log_scan_finds_a_message_stored_without_sealing(api, monkeypatch):
    """Control: with sealing a pass-through, the same failing statement puts the message in the log."""
    monkeypatch.setattr(crypto.Sealer, "seal", lambda self, plaintext, place: plaintext)
    monkeypatch.setattr(crypto.Sealer, "open", lambda self, sealed, place: bytes(sealed))
    log = _server_log()
    offset, marker = log.stat().st_size, f"日誌標記-{uuid.uuid4().hex}"
    _an_append_whose_insert_fails(api, f"{marker} please plan")
    assert find_in_text(_logged_since(log, offset), [marker]) != []
