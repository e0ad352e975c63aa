"""Whether deleting really removes it: the whole flow through the API, then every
place a resume could have gone is searched, in every encoding.

Places: the database file and its sidecars (-journal, -wal, -shm), all log
output at DEBUG (google-adk and google-genai included), and django-q2's
tables (the purge runs as a django-q2 task here). Content is stored sealed, so
in the database files the resume is never in clear; there the search looks
for the session's ciphertext, recorded while the session lived. The control
cases switch one protection off and show that the same search then finds
the ciphertext.
"""

import datetime as dt
import tempfile
from pathlib import Path

import pytest
import time_machine
from django.conf import settings
from django.db import connection
from django.utils import timezone
from django_q.models import OrmQ, Schedule, Task
from django_q.tasks import async_task

from sessions_app.models import AgentSession, AppState, DeletionAudit, SessionEvent, UserState
from tests.support.privacy import (
    database_files,
    find_chunks,
    find_in_text,
    find_markers,
    fixture_markers,
    fixture_resume,
    sealed_chunks,
)

pytestmark = pytest.mark.django_db(transaction=True)

MESSAGES = ("請依照履歷規劃求職 Quokka-4417", "Focus on remote roles Quokka-9923")


def _converse(api) -> tuple[str, str]:
    created = api.post("/agent/sessions", {"resume_text": fixture_resume()}, format="json").json()
    url = f"/agent/sessions/{created['session_id']}"
    for message in MESSAGES:
        turn = api.post(f"{url}/messages", {"message": message}, format="json", HTTP_X_SESSION_TOKEN=created["token"])
        assert turn.status_code == 200
    return created["session_id"], created["token"]


def _end(api, how: str, session_id: str, token: str) -> None:
    if how == "delete":
        assert api.delete(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).status_code == 204
    else:  # the TTL purge, as the scheduler runs it: a django-q2 task (sync in tests)
        with time_machine.travel(timezone.now() + dt.timedelta(hours=25)):
            async_task("sessions_app.tasks.purge_expired_sessions")


def _django_q_text() -> str:
    rows = [
        *Task.objects.values_list("name", "func", "args", "kwargs", "result"),
        *OrmQ.objects.values_list("key", "payload"),
        *Schedule.objects.values_list("name", "func", "args", "kwargs", "task"),
    ]
    return "\n".join(repr(row) for row in rows)


def _cache_text() -> str:
    """Every key and value the cache holds now: the SQLite cache's files, or Redis's keys."""
    location = settings.CACHES["default"]["LOCATION"]
    if not location.startswith(("redis://", "rediss://")):
        return "\n".join(path.read_bytes().decode("utf-8", "surrogateescape") for path in _files_under(Path(location)))
    import redis

    client = redis.Redis.from_url(location)
    # GET gives a value's bytes as stored (DUMP would give Redis's compressed encoding).
    values = [
        (key, client.get(key) if client.type(key) == b"string" else client.dump(key)) for key in client.scan_iter()
    ]
    text = b"\n".join(key + b"=" + (value or b"") for key, value in values)
    return text.decode("utf-8", "surrogateescape")


def _files_under(folder: Path, pattern: str = "**/*") -> set[Path]:
    return {path for path in folder.glob(pattern) if path.is_file()} if folder.exists() else set()


@pytest.mark.parametrize("how", ["delete", "purge"])
def test_nothing_of_the_resume_is_left_anywhere(api, stored_files, captured_logs, settings, how):
    protected_logs, _ = captured_logs
    temp_dir = Path(tempfile.gettempdir())
    temp_files_before = _files_under(temp_dir, "*")
    session_id, token = _converse(api)
    secrets = fixture_markers() + list(MESSAGES) + [token]
    # Before: the resume and the messages are not in the file in clear; their
    # ciphertext is, every piece of it (state and events), so the search works.
    assert find_markers(stored_files(), secrets) == []
    chunks = sealed_chunks()
    assert len(chunks) > 1 + 2 * len(MESSAGES)  # the state, and each turn's events
    assert {index for _, index in find_chunks(stored_files(), chunks)} == set(range(len(chunks)))

    _end(api, how, session_id, token)

    assert (AgentSession.objects.count(), SessionEvent.objects.count(), UserState.objects.count()) == (0, 0, 0)
    assert AppState.objects.count() == 0
    assert DeletionAudit.objects.get().trigger == ("api" if how == "delete" else "ttl")
    if how == "purge":
        assert Task.objects.filter(func="sessions_app.tasks.purge_expired_sessions").exists()
    if connection.vendor == "sqlite":
        # secure_delete overwrote the ciphertext too. PostgreSQL keeps a deleted row's
        # bytes until VACUUM reuses the space (and in WAL): ciphertext whose key only
        # the token gives, so there the guarantee is the line below.
        assert find_chunks(stored_files(), chunks) == []
    assert find_markers(stored_files(), secrets) == []
    assert find_in_text(protected_logs.getvalue(), secrets) == []
    assert find_in_text(_django_q_text(), secrets) == []
    # Caches (throttle counters) and temporary files never held any of it.
    assert find_in_text(_cache_text(), secrets) == []
    assert find_markers(sorted(_files_under(temp_dir, "*") - temp_files_before), secrets) == []


@pytest.mark.parametrize("value", ["short", "long"])
def test_the_cache_scan_finds_what_the_cache_holds(value):
    """Control of the cache scan above, on the file cache or Redis, whichever this run has.
    Its marker is new on every run: what it leaves in the cache's file matches no other scan."""
    import uuid

    from django.core.cache import cache

    marker = f"快取控制-{uuid.uuid4().hex}" * (1 if value == "short" else 50)
    cache.set("scan-control", {"text": marker})
    assert find_in_text(_cache_text(), [marker]) != []
    cache.delete("scan-control")


PROTECTIONS_OFF = {
    "secure_delete off": ("PRAGMA secure_delete=OFF", "test_sessions"),
    "rollback journal kept (PERSIST)": ("PRAGMA journal_mode=PERSIST", "-journal"),
    "WAL without checkpoint": ("PRAGMA journal_mode=WAL", "-wal"),
}


def _switch_off(monkeypatch, pragma: str) -> None:
    """Every connection, this one and any the purge task opens, gets `pragma`.

    This build's SQLite defaults secure_delete to on, so it is switched off
    explicitly; our receiver's own setting is replaced, not just removed.
    """
    from sessions_app.infra import sqlite

    setting = pragma.split()[1].split("=")[0]
    others = tuple(p for p in sqlite.CONNECTION_PRAGMAS if setting not in p)
    monkeypatch.setattr(sqlite, "CONNECTION_PRAGMAS", others + (pragma,))
    monkeypatch.setattr(sqlite, "secure_delete_enabled", lambda connection: True)
    with connection.cursor() as cursor:
        cursor.execute(pragma)


# WAL is left out for the purge: the django-q2 worker closes its connection
# after the task, and when the last connection to a WAL database closes SQLite
# checkpoints with secure_delete on and removes the -wal file, so that case
# ends clean here (a running server keeps connections open; see
# docs/JOURNAL_MODES.md, rows 10-17).
CONTROL_CASES = [
    (protection, how)
    for protection in sorted(PROTECTIONS_OFF)
    for how in ("delete", "purge")
    if (protection, how) != ("WAL without checkpoint", "purge")
]


@pytest.mark.sqlite_only
@pytest.mark.parametrize("protection,how", CONTROL_CASES)
def test_the_search_finds_the_resume_when_a_protection_is_off(
    api, db_path, restore_sqlite_settings, monkeypatch, how, protection
):
    pragma, expected_in = PROTECTIONS_OFF[protection]
    _switch_off(monkeypatch, pragma)
    session_id, token = _converse(api)
    chunks = sealed_chunks()
    _end(api, how, session_id, token)
    assert AgentSession.objects.count() == 0
    hits = find_chunks(database_files(db_path), chunks)
    where = {
        "-journal" if name.endswith("-journal") else "-wal" if name.endswith("-wal") else "test_sessions"
        for name, _ in hits
    }
    assert expected_in in where, hits
    # Even then, only ciphertext is left: never the resume in clear.
    assert find_markers(database_files(db_path), fixture_markers()) == []
