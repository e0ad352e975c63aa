"""A database that refuses writes for lack of space: a documented 507 on every endpoint, never a 500.

On both backends, with the database's own error: SQLite really cannot grow its file
(`PRAGMA max_page_count` set to the pages it has: SQLITE_FULL, "database or disk is full"),
PostgreSQL raises SQLSTATE 53100 disk_full (from a trigger: filling a server's disk that
others share is not a test's to do). The full filesystem itself is tests/erasure/test_disk_full.py.
Also: the headroom refusal (507 `storage_low`) in both languages, the scheduled purge's one
log line, and what the admin shows.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3

import psycopg
import pytest
from django.db import DatabaseError, connection, transaction
from django.db.backends.signals import connection_created
from django.test import RequestFactory
from django.urls import reverse
from django.utils import timezone

from sessions_app import purge, selectors, selectors_admin, tasks
from sessions_app.api.middleware import DiskFullAnswers
from sessions_app.infra import disk_space
from sessions_app.models import AgentSession, SessionEvent
from sessions_app.storage import turn_lock
from tests.support.factories import make_session
from tests.support.privacy import find_in_text, fixture_markers, fixture_resume


def _erase_through_attempts(work):
    """`work` run as sessions_app/erasure.py runs an erasure: through `disk_space.erasure_attempts`."""
    for attempt in disk_space.erasure_attempts():
        with attempt:
            return work()
    raise AssertionError("the last attempt never swallows what its work raised")


pytestmark = pytest.mark.django_db(transaction=True)

REFUSING_TABLES = ("sessions_app_agentsession", "sessions_app_sessionevent")


@pytest.fixture
def refuse_writes():
    """Returns a function that makes the database refuse new content with its own disk-full error."""
    undo, page_limit = [], []

    def limit_new_connections(sender, connection, **kwargs) -> None:
        # SQLite's limit is a connection's, a full disk everyone's: a turn opens a new connection
        # to store itself (it gives its own back while the model thinks).
        if page_limit and connection.vendor == "sqlite":
            with connection.cursor() as cursor:
                cursor.execute(f"PRAGMA max_page_count = {page_limit[0]}")

    connection_created.connect(limit_new_connections)

    def refuse() -> None:
        with connection.cursor() as cursor:
            if connection.vendor == "sqlite":
                cursor.execute("VACUUM")  # no free pages left inside the file
                cursor.execute("PRAGMA page_count")
                page_limit[:] = [cursor.fetchone()[0]]
                cursor.execute(f"PRAGMA max_page_count = {page_limit[0]}")
                undo.append("PRAGMA max_page_count = 4294967294")
            else:
                cursor.execute(
                    "CREATE FUNCTION test_disk_full() RETURNS trigger LANGUAGE plpgsql AS"
                    " $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device'"
                    " USING ERRCODE = 'disk_full'; END $$"
                )
                for table in REFUSING_TABLES:
                    cursor.execute(
                        f"CREATE TRIGGER test_disk_full BEFORE INSERT OR UPDATE ON {table}"
                        " FOR EACH ROW EXECUTE FUNCTION test_disk_full()"
                    )
                undo.append("DROP FUNCTION test_disk_full() CASCADE")

    def allow() -> None:
        page_limit.clear()
        with connection.cursor() as cursor:
            while undo:
                cursor.execute(undo.pop())

    refuse.allow = allow
    yield refuse
    allow()
    connection_created.disconnect(limit_new_connections)


def _disk_full_error() -> DatabaseError:
    """The error the database raises now for a new session's row."""
    try:
        with transaction.atomic():
            make_session(events=1, text="x" * 20_000)
    except DatabaseError as exc:
        return exc
    pytest.fail("the database took the write")


def _headers(language: str) -> dict:
    return {"HTTP_ACCEPT_LANGUAGE": language}


def test_the_database_error_is_told_apart_from_others(refuse_writes):
    refuse_writes()
    assert disk_space.is_disk_full(_disk_full_error())
    with pytest.raises(DatabaseError) as other, connection.cursor() as cursor:
        cursor.execute("SELECT * FROM no_such_table")
    assert not disk_space.is_disk_full(other.value)


def _raised_from(error: Exception, cause: BaseException) -> Exception:
    error.__cause__ = cause
    return error


@pytest.mark.parametrize(
    "error, full",
    [
        (_raised_from(DatabaseError("could not extend file"), psycopg.errors.DiskFull("no space")), True),
        (_raised_from(DatabaseError("deadlock"), psycopg.errors.DeadlockDetected("deadlock")), False),
        (sqlite3.OperationalError("an error without a code"), False),
        (_raised_from(DatabaseError("disk I/O error"), sqlite3.OperationalError("disk I/O error")), False),
    ],
    ids=["PostgreSQL disk full", "PostgreSQL other", "SQLite without a code", "SQLite other"],
)
def test_disk_full_is_told_apart_by_the_databases_own_code(error, full):
    """SQLITE_FULL (in any extended code) from SQLite, SQLSTATE 53100 from PostgreSQL, wherever
    in the chain of causes; any other error, with or without a code, is not a full disk."""
    if isinstance(error.__cause__, sqlite3.Error):
        error.__cause__.sqlite_errorcode = sqlite3.SQLITE_IOERR
    assert disk_space.is_disk_full(error) is full


def test_a_full_disk_under_an_extended_sqlite_code_is_a_full_disk():
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = sqlite3.SQLITE_FULL | (3 << 8)
    assert disk_space.is_disk_full(_raised_from(DatabaseError("database or disk is full"), full))


def test_a_chain_of_causes_that_loops_ends():
    first, second = DatabaseError("one"), DatabaseError("two")
    first.__context__, second.__context__ = second, first
    assert disk_space.is_disk_full(first) is False


def test_a_streamed_turn_that_meets_a_full_disk_gets_the_507_as_its_error_event(refuse_writes, captured_logs):
    """After the stream has begun the answer is an event (errors.error_answer), with the status and
    body the API gives; its log line names no view, there being none."""
    from sessions_app.api.errors import error_answer

    refuse_writes()
    status, body = error_answer(_disk_full_error())
    assert (status, body["code"]) == (507, "storage_full")
    lines = [line for line in captured_logs[0].getvalue().splitlines() if "refused a write" in line]
    assert lines == ["ERROR sessions_app.api.errors: database refused a write: disk full (OperationalError in ?)"]


def test_any_other_database_error_is_the_logged_500_not_507(api, new_session, monkeypatch, captured_logs):
    from django.db import OperationalError

    session_id, token = new_session()

    def locked(*args, **kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(selectors, "owned_live_session", locked)
    answer = api.get(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token, HTTP_ACCEPT_LANGUAGE="en")
    assert answer.status_code == 500
    assert answer.json() == {"detail": "Something went wrong on the server. No data was lost; please try again later."}
    assert "unhandled OperationalError in API view" in captured_logs[0].getvalue()
    assert "disk full" not in captured_logs[0].getvalue()


def test_create_on_a_database_that_refuses_writes_answers_507(api, refuse_writes, captured_logs):
    refuse_writes()
    resume = {"resume_text": (fixture_resume() + "\n") * 30}  # more than the file's pages have room for
    answer = api.post("/agent/sessions", resume, format="json", **_headers("en"))
    assert answer.status_code == 507, answer.content
    assert answer.json()["code"] == "storage_full"
    assert "storage is full" in answer.json()["detail"]
    assert "Cache-Control" in answer and "no-store" in answer["Cache-Control"]
    assert AgentSession.objects.count() == 0
    zh = api.post("/agent/sessions", resume, format="json", **_headers("zh-hant"))
    assert zh.status_code == 507 and zh.json()["code"] == "storage_full"
    assert "儲存空間已滿" in zh.json()["detail"]
    protected, raw = captured_logs
    lines = [line for line in protected.getvalue().splitlines() if "disk full" in line]
    expected = (
        "ERROR sessions_app.api.errors: database refused a write: disk full (OperationalError in SessionCreateView)"
    )
    assert lines == [expected] * 2
    assert "Traceback" not in protected.getvalue()
    assert find_in_text(raw.getvalue(), fixture_markers()) == []


def test_a_message_on_a_database_that_refuses_writes_answers_507_and_stores_nothing(api, new_session, refuse_writes):
    session_id, token = new_session()
    events = SessionEvent.objects.count()
    refuse_writes()
    answer = api.post(
        f"/agent/sessions/{session_id}/messages",
        {"message": "Please draft my plan " + "x" * 3000},
        format="json",
        HTTP_X_SESSION_TOKEN=token,
        **_headers("en"),
    )
    assert answer.status_code == 507, answer.content
    assert answer.json()["code"] == "storage_full"
    assert SessionEvent.objects.count() == events


def test_under_the_headroom_content_is_refused_before_anything_is_written(api, new_session, settings, tmp_path):
    session_id, token = new_session()
    settings.STORAGE_VOLUME_PATH = str(tmp_path)  # so that PostgreSQL's leg checks a volume too
    settings.STORAGE_HEADROOM_BYTES = disk_space.free_bytes(tmp_path) + 2**40
    sessions, events = AgentSession.objects.count(), SessionEvent.objects.count()
    for language, words in (("en", "short of storage space"), ("zh-hant", "儲存空間不足")):
        created = api.post("/agent/sessions", {"resume_text": fixture_resume()}, format="json", **_headers(language))
        assert created.status_code == 507 and created.json()["code"] == "storage_low"
        assert words in created.json()["detail"]
        message = api.post(
            f"/agent/sessions/{session_id}/messages",
            {"message": "Plan"},
            format="json",
            HTTP_X_SESSION_TOKEN=token,
            **_headers(language),
        )
        assert message.status_code == 507 and message.json()["code"] == "storage_low"
        assert words in message.json()["detail"]
    assert (AgentSession.objects.count(), SessionEvent.objects.count()) == (sessions, events)
    assert not turn_lock.turn_is_locked(AgentSession.objects.get().pk)  # not even the turn lock was taken
    # Reading and deleting are never refused for lack of room.
    assert api.get(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).status_code == 200
    assert api.delete(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).status_code == 204
    assert AgentSession.objects.count() == 0


def test_every_operation_documents_507(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    # The session API's operations (7) and the passkey accounts' (15, docs/ACCOUNTS.md); the deletion
    # log's public reads (4) and the probes (2: /healthz, /readyz) write nothing, so never answer 507.
    paths = {path: item for path, item in schema["paths"].items() if path.startswith("/agent/")}
    operations = [op for item in paths.values() for op in item.values() if "operationId" in op]
    assert len(operations) == 7 + 15 and len(schema["paths"]) == len(paths) + 4 + 2
    for operation in operations:
        assert "507" in operation["responses"], operation["operationId"]
    enums = [c.get("enum") for c in schema["components"]["schemas"].values()]
    assert ["storage_low", "storage_full"] in enums, json.dumps(schema["components"]["schemas"])[:2000]


def test_pages_outside_the_api_answer_507_too(refuse_writes, captured_logs, settings):
    assert "sessions_app.api.middleware.DiskFullAnswers" in settings.MIDDLEWARE
    refuse_writes()
    error = _disk_full_error()
    request = RequestFactory().post(reverse("admin:sessions_app_agentsession_purge"))
    request.resolver_match = None
    answer = DiskFullAnswers(lambda request: None).process_exception(request, error)
    assert answer.status_code == 507
    assert answer["Content-Type"].startswith("text/plain")
    assert DiskFullAnswers(lambda request: None).process_exception(request, ValueError("other")) is None
    lines = [line for line in captured_logs[0].getvalue().splitlines() if "disk full" in line]
    assert len(lines) == 1


@pytest.fixture
def disk_full_purge(monkeypatch, refuse_writes):
    """The purge meets the database's own disk-full error (taken from the database, which then
    takes writes again: on SQLite an erasure needs no new pages, so it would not fail by itself)."""
    refuse_writes()
    error = _disk_full_error()
    refuse_writes.allow()

    def erase_in_batches(selection, **kwargs):
        raise error

    monkeypatch.setattr(purge, "_erase_in_batches", erase_in_batches)


def test_a_scheduled_purge_that_cannot_run_logs_one_line(disk_full_purge, captured_logs):
    assert tasks.purge_expired_sessions() == {"failed": "disk_full"}
    protected, _ = captured_logs
    lines = [line for line in protected.getvalue().splitlines() if "purge" in line]
    assert lines == ["ERROR sessions_app.tasks: scheduled purge could not run: disk full"]
    assert selectors_admin.last_purge().outcome == "disk_full"


def test_the_admin_shows_storage_and_the_purge_that_could_not_run(admin_client, disk_full_purge, settings):
    settings.LANGUAGE_CODE = "en"
    disk_space.restore_reserve()  # as the service keeps it beside an SQLite file (a no-op on PostgreSQL)
    make_session(last_activity=timezone.now() - dt.timedelta(hours=48))
    make_session()
    tasks.purge_expired_sessions()
    for url in (reverse("admin:sessions_app_agentsession_policy"), reverse("admin:sessions_app_agentsession_purge")):
        page = admin_client.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()
        assert "above the headroom" in page if connection.vendor == "sqlite" else "not known here" in page
        assert "STORAGE_HEADROOM_BYTES" in page
        assert '<td id="storage-expired">1</td>' in page
        assert "could not run: disk full" in page
        if connection.vendor == "sqlite":
            assert "in place:" in page  # the reserve beside the file
        else:
            assert "none (PostgreSQL, or ERASURE_RESERVE_BYTES is 0)" in page
    zh = admin_client.get(reverse("admin:sessions_app_agentsession_policy"), HTTP_ACCEPT_LANGUAGE="zh-hant")
    assert "無法執行：磁碟已滿" in zh.content.decode()


@pytest.mark.parametrize(
    "language, said",
    [
        ("en", "The purge could not run: the database&#x27;s disk is full, even with the erasure reserve given back."),
        ("zh-hant", "清除無法執行：資料庫所在的磁碟已滿，即使釋出了刪除用的保留空間也不夠。"),
    ],
)
def test_the_admin_purge_on_a_full_disk_says_so_as_an_error(admin_client, disk_full_purge, language, said):
    answer = admin_client.post(
        reverse("admin:sessions_app_agentsession_purge"), HTTP_ACCEPT_LANGUAGE=language, follow=True
    )
    assert answer.status_code == 200
    assert f'<li class="error">{said}</li>' in answer.content.decode()


@pytest.mark.sqlite_only
def test_an_erasure_that_meets_a_full_disk_gives_the_reserve_back_retries_and_makes_it_again(settings, captured_logs):
    """In-process, the steps `tests/erasure/test_disk_full.py` shows on a real full filesystem: the first
    attempt finds the disk full, the retry runs with the reserve's blocks given back, and the
    reserve is made whole again afterwards."""
    import sqlite3

    from django.db import OperationalError

    assert disk_space.restore_reserve()  # as the service keeps it (and leaves it, below)
    path = disk_space.reserve_path()
    assert disk_space.reserve_size(path) >= settings.ERASURE_RESERVE_BYTES
    reserve_during_attempts = []

    def erasure():
        reserve_during_attempts.append(disk_space.reserve_size(path))
        if len(reserve_during_attempts) == 1:
            full = sqlite3.OperationalError("database or disk is full")
            full.sqlite_errorcode = sqlite3.SQLITE_FULL
            raise OperationalError("database or disk is full") from full
        return "erased"

    assert _erase_through_attempts(erasure) == "erased"
    assert reserve_during_attempts[0] >= settings.ERASURE_RESERVE_BYTES
    assert reserve_during_attempts[1:] == [0]  # the retry ran with the reserve given back
    assert disk_space.reserve_size(path) >= settings.ERASURE_RESERVE_BYTES  # and it is back
    lines = [line for line in captured_logs[0].getvalue().splitlines() if "reserve" in line]
    assert lines == [
        "WARNING sessions_app.infra.disk_space: disk full during an erasure: released the erasure reserve"
        f" ({reserve_during_attempts[0]} bytes) and retrying"
    ]


@pytest.mark.sqlite_only
def test_a_reserve_that_cannot_be_made_again_after_an_erasure_is_one_log_line(settings, captured_logs, monkeypatch):
    import errno
    import os
    import sqlite3

    from django.db import OperationalError

    attempts = []

    def erasure():
        attempts.append(1)
        if len(attempts) == 1:
            full = sqlite3.OperationalError("database or disk is full")
            full.sqlite_errorcode = sqlite3.SQLITE_FULL
            raise OperationalError("database or disk is full") from full
        return "erased"

    def still_full(fd, offset, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    assert disk_space.restore_reserve()
    with monkeypatch.context() as patched:
        patched.setattr(os, "posix_fallocate", still_full)
        assert _erase_through_attempts(erasure) == "erased"  # the erasure is done all the same
    assert disk_space.reserve_size() == 0
    lines = [line for line in captured_logs[0].getvalue().splitlines() if "made again" in line]
    assert lines == [
        "WARNING sessions_app.infra.disk_space: disk full: the erasure reserve could not be made again"
        f" ({settings.ERASURE_RESERVE_BYTES} bytes wanted)"
    ]
    assert disk_space.restore_reserve()  # room again: the reserve as the service keeps it
