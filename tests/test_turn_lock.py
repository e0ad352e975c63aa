"""The turn lock dies with its holder: a server killed mid-turn (kill -9) leaves no session
locked for the others. The holder here is a process of the service of its own, on this
test's database, killed with SIGKILL while it holds the lock, as a crashed server would be."""

import signal
import subprocess
import sys

import pytest
from django.utils import timezone

from sessions_app.models import AgentSession
from sessions_app.storage import repository
from tests.factories import make_session
from tests.test_servers import ROOT, service_env
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
TURN_TIMEOUT = 60  # a lock is taken over as stale after 90 s: far beyond this test's wait

HOLD_THE_LOCK = """
import sys
import django

django.setup()
from sessions_app.storage import repository

assert repository.lock_turn(int(sys.argv[1]), 60)
print("locked", flush=True)
sys.stdin.read()  # holds it until killed
"""


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
    return bool(wait_until(lambda: repository.lock_turn(session_pk, TURN_TIMEOUT), timeout=seconds, interval=0.05))


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
    assert not repository.lock_turn(session.pk, TURN_TIMEOUT)
    process.send_signal(signal.SIGKILL)
    process.wait()  # reaped, as the server's parent (or init) reaps it
    # At once: a PostgreSQL backend ends as soon as its client's socket closes.
    assert _taken_within(session.pk, 5)


@pytest.mark.parametrize("holder_kind", ["", "other-kind:", "other-kind:dead"])
def test_a_lock_whose_holder_cannot_be_checked_waits_for_the_timeout(holder_kind):
    """As a lock of an older server (no holder written) or a holder this backend cannot check,
    even one whose identity reads like the number of a process that has ended."""
    holder_written = holder_kind.replace("dead", str(_a_dead_process_id()))
    session = make_session()
    AgentSession.objects.filter(pk=session.pk).update(turn_started_at=timezone.now(), turn_holder=holder_written)
    assert not repository.lock_turn(session.pk, TURN_TIMEOUT)


@pytest.mark.sqlite_only  # a holder's process is checked on SQLite; PostgreSQL checks its connection
def test_a_holder_of_another_user_counts_as_running(monkeypatch):
    """Signalling another user's process is refused (EPERM): it exists, so its lock is kept."""
    import os

    def not_ours(pid, signal_number):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "kill", not_ours)
    assert repository.holder_is_alive("pid:4242") is True
