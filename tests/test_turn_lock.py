"""The turn lock: one turn at a time per session, and it dies with its holder: a server killed
mid-turn (kill -9) leaves no session locked for the others. The holder here is a process of the
service of its own, on this test's database, killed with SIGKILL while it holds the lock, as a
crashed server would be. On SQLite the lock is a file lock and writes nothing; on PostgreSQL (and
on a system without open file description locks, `row_lock`) it is the session's row."""

import datetime as dt
import os
import signal
import stat
import subprocess
import sys

import pytest
import time_machine
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sessions_app.infra import file_range_locks, postgresql_presence
from sessions_app.models import AgentSession
from sessions_app.storage import turn_lock
from tests.support.factories import make_session
from tests.support.servers import ROOT, service_env
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
TURN_TIMEOUT = 60  # a lock is taken over as stale after 90 s: far beyond this test's wait

HOLD_THE_LOCK = """
import sys
import django

django.setup()
from sessions_app.storage import turn_lock

assert turn_lock.lock_turn(int(sys.argv[1]), 60)
print("locked", flush=True)
sys.stdin.read()  # holds it until killed
"""


@pytest.fixture
def row_lock(monkeypatch):
    """The lock as it is where the system has no open file description locks: the session's row."""
    monkeypatch.setattr(file_range_locks, "AVAILABLE", False)


@pytest.fixture
def holder(tmp_path):
    """A function that starts a process holding the turn lock of a session; killed at the end."""
    started = []

    def hold(session_pk: int) -> subprocess.Popen:
        process = subprocess.Popen(
            [sys.executable, "-c", HOLD_THE_LOCK, str(session_pk)],
            cwd=ROOT,
            env=service_env(tmp_path),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        assert process.stdout.readline().strip() == "locked"
        return process

    yield hold
    for process in started:
        process.kill()
        process.wait()


def _taken_within(session_pk: int, seconds: float) -> bool:
    return bool(wait_until(lambda: turn_lock.lock_turn(session_pk, TURN_TIMEOUT), timeout=seconds, interval=0.05))


@pytest.mark.slow
def test_a_lock_held_by_a_running_process_is_not_taken(holder):
    session = make_session()
    process = holder(session.pk)
    assert not _taken_within(session.pk, 1)
    assert process.poll() is None  # asking whether the holder runs leaves it running


def _a_dead_process_id() -> int:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    return ended.pid


@pytest.mark.slow
def test_a_lock_whose_holder_was_killed_is_free_at_once(holder):
    session = make_session()
    process = holder(session.pk)
    assert not turn_lock.lock_turn(session.pk, TURN_TIMEOUT)
    process.send_signal(signal.SIGKILL)
    process.wait()  # reaped, as the server's parent (or init) reaps it
    # At once: a PostgreSQL backend ends as soon as its client's socket closes.
    assert _taken_within(session.pk, 5)


@pytest.mark.parametrize("holder_kind", ["", "other-kind:", "other-kind:dead"])
def test_a_lock_whose_holder_cannot_be_checked_waits_for_the_timeout(holder_kind, row_lock):
    """As a lock of an older server (no holder written) or a holder this backend cannot check,
    even one whose identity reads like the number of a process that has ended."""
    holder_written = holder_kind.replace("dead", str(_a_dead_process_id()))
    session = make_session()
    AgentSession.objects.filter(pk=session.pk).update(turn_started_at=timezone.now(), turn_holder=holder_written)
    assert not turn_lock.lock_turn(session.pk, TURN_TIMEOUT)


def test_a_row_lock_is_one_sessions_and_is_seen_until_freed(row_lock):
    """The row lock as `turn_is_locked` sees it (the admin's "turn running"): the locked session's,
    not its neighbour's; freed, not seen. (mutmut: the row path's filter dropped or inverted.)"""
    locked, neighbour = make_session(owner_id="anon-locked"), make_session(owner_id="anon-neighbour")
    assert not turn_lock.turn_is_locked(locked.pk)
    assert turn_lock.lock_turn(locked.pk, TURN_TIMEOUT)
    assert turn_lock.turn_is_locked(locked.pk) and not turn_lock.turn_is_locked(neighbour.pk)
    assert not turn_lock.lock_turn(locked.pk, TURN_TIMEOUT) and turn_lock.lock_turn(neighbour.pk, TURN_TIMEOUT)
    turn_lock.release_turn(locked.pk)
    assert not turn_lock.turn_is_locked(locked.pk) and turn_lock.turn_is_locked(neighbour.pk)


def test_a_row_lock_holder_names_its_kind_and_a_dead_process_is_not_alive(row_lock):
    """`pid:<n>` on SQLite, checked with the process table; another kind, or one that cannot be
    checked, counts as running."""
    session = make_session()
    assert turn_lock.lock_turn(session.pk, TURN_TIMEOUT)
    holder = AgentSession.objects.get(pk=session.pk).turn_holder
    if connection.vendor == "sqlite":
        assert holder == f"pid:{os.getpid()}" and turn_lock.holder_is_alive(holder)
        assert not turn_lock.holder_is_alive(f"pid:{_a_dead_process_id()}")
        assert turn_lock.holder_is_alive(f"pg:{_a_dead_process_id()}")  # not this database's kind: cannot tell
    else:
        assert holder.startswith("pg:") and turn_lock.holder_is_alive(holder)
        assert not turn_lock.holder_is_alive("pg:0")  # no such backend
    assert turn_lock.holder_is_alive("unknown")


@pytest.mark.postgres_only
def test_a_process_names_one_presence_as_holder_and_opens_it_again_when_lost():
    """A row lock names the process's presence connection, not the turn's (a turn gives its own
    back while the model thinks); a presence the server ended is replaced, and its old name is
    dead from then on."""
    first = postgresql_presence.holder(connection)
    connection.close()  # the turn's own connection goes; the holder stays
    assert postgresql_presence.holder(connection) == first and turn_lock.holder_is_alive(first)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [int(first.split(":")[1])])
    second = postgresql_presence.holder(connection)
    assert second != first and turn_lock.holder_is_alive(second) and not turn_lock.holder_is_alive(first)


@pytest.mark.sqlite_only  # a holder's process is checked on SQLite; PostgreSQL checks its connection
def test_a_holder_of_another_user_counts_as_running(monkeypatch, row_lock):
    """Signalling another user's process is refused (EPERM): it exists, so its lock is kept."""
    import os

    def not_ours(pid, signal_number):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "kill", not_ours)
    assert turn_lock.holder_is_alive("pid:4242") is True


# A turn cannot outlive AGENT_TURN_TIMEOUT_SECONDS; a row lock older than that plus a margin
# of 30 s was left by a crashed worker and may be taken over, a younger one may not.
@pytest.mark.parametrize("age_beyond_timeout,taken_over", [(29.5, False), (30.5, True)])
def test_a_row_lock_is_taken_over_only_past_the_timeout_and_its_margin(age_beyond_timeout, taken_over, row_lock):
    session = make_session()
    timeout = 60
    with time_machine.travel(dt.datetime(2031, 1, 1, 12, 0, tzinfo=dt.UTC), tick=False) as traveller:
        assert turn_lock.lock_turn(session.pk, timeout)
        assert not turn_lock.lock_turn(session.pk, timeout)  # held
        traveller.shift(timeout + age_beyond_timeout)
        assert turn_lock.lock_turn(session.pk, timeout) is taken_over


@pytest.mark.sqlite_only
def test_a_file_lock_held_by_a_live_turn_is_never_taken_over():
    """It needs no age limit: it ends with its holder's file, and a live holder's turn ends by its timeout."""
    session = make_session()
    with time_machine.travel(dt.datetime(2031, 1, 1, 12, 0, tzinfo=dt.UTC), tick=False) as traveller:
        assert turn_lock.lock_turn(session.pk, TURN_TIMEOUT)
        traveller.shift(dt.timedelta(days=1))
        assert not turn_lock.lock_turn(session.pk, TURN_TIMEOUT)
    turn_lock.release_turn(session.pk)
    assert turn_lock.lock_turn(session.pk, TURN_TIMEOUT)
    turn_lock.release_turn(session.pk)


@pytest.mark.sqlite_only
def test_on_sqlite_the_turn_lock_writes_nothing():
    """Taking and freeing it sends no statement to SQLite (its one writer is not waited for), and
    its file stays empty and owner-only."""
    session = make_session()
    with CaptureQueriesContext(connection) as queries:
        assert turn_lock.lock_turn(session.pk, TURN_TIMEOUT)
        assert turn_lock.turn_is_locked(session.pk)
        turn_lock.release_turn(session.pk)
    assert queries.captured_queries == []
    assert not turn_lock.turn_is_locked(session.pk)
    lock_file = os.stat(str(connection.settings_dict["NAME"]) + turn_lock.LOCK_FILE_SUFFIX)
    assert (lock_file.st_size, stat.S_IMODE(lock_file.st_mode)) == (0, 0o600)


def test_a_stored_turn_frees_its_lock_only_once_its_writes_are_committed():
    """Freed earlier, a second turn could start on the state without the first one's writes."""
    session = make_session()
    assert turn_lock.lock_turn(session.pk, TURN_TIMEOUT)
    held_at_commit = []
    with turn_lock.storing_then_releasing(session.pk):
        AgentSession.objects.filter(pk=session.pk).update(revision=7)  # the turn's writes
        transaction.on_commit(lambda: held_at_commit.append(turn_lock.turn_is_locked(session.pk)))
        assert turn_lock.turn_is_locked(session.pk)
    assert not turn_lock.turn_is_locked(session.pk)
    # The row lock is freed by the committing transaction itself; the file lock just after it.
    assert held_at_commit == [connection.vendor == "sqlite"]


def test_a_turn_whose_writes_roll_back_keeps_its_lock_until_released():
    session = make_session()
    assert turn_lock.lock_turn(session.pk, TURN_TIMEOUT)
    with pytest.raises(ZeroDivisionError), turn_lock.storing_then_releasing(session.pk):
        raise ZeroDivisionError  # a write the database refused
    assert turn_lock.turn_is_locked(session.pk)
    turn_lock.release_turn(session.pk)  # what the turn's close() does
    assert not turn_lock.turn_is_locked(session.pk)


def test_file_locks_exclude_each_other_within_one_process_too(tmp_path):
    """Two turns of one process on one session: the second is refused (an OFD lock belongs to an
    open file, not to the process, as a POSIX record lock would)."""
    if not file_range_locks.AVAILABLE:
        pytest.skip("no open file description locks on this system")
    locks = file_range_locks.FileRangeLocks(str(tmp_path / "locks"))
    other = file_range_locks.FileRangeLocks(str(tmp_path / "locks"))
    assert locks.try_lock(3) and not locks.try_lock(3) and not other.try_lock(3)
    assert other.try_lock(4)  # each number is a lock of its own
    assert locks.is_locked(3) and other.is_locked(3) and not locks.is_locked(5)
    locks.unlock(3)
    assert other.try_lock(3)
    other.unlock(3)
    other.unlock(4)
    assert (tmp_path / "locks").stat().st_size == 0
