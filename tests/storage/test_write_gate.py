"""The write gate: one writer at a time per database directory, across threads and processes.

`sessions_app.infra.sqlite_backend.base.WriteGate` on its own, on a temporary directory: a thread
lock within the process, then an exclusive flock on the directory. "Another
process" is played by a second open file description of the directory (flock
belongs to it, not to the process) or, for the fork rules, by a real fork.
"""

import contextlib
import os
import select
import threading

import pytest
from django.db import OperationalError

from sessions_app.infra.sqlite_backend import base as gate_module
from sessions_app.infra.sqlite_backend.base import WriteGate

pytestmark = [pytest.mark.skipif(gate_module.fcntl is None, reason="flock is POSIX"), pytest.mark.sqlite_only]
fcntl = gate_module.fcntl

WAIT = 10  # seconds a step may take on a loaded machine before the test gives up


def _directory_flock_is_free(directory) -> bool:
    """Whether another process could take the gate's flock now (a fresh open file description tries)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # drops the test's flock with it


def _open_fds_on(directory) -> int:
    """How many of this process's descriptors are open on `directory` (Linux /proc)."""
    target = os.path.realpath(directory)
    count = 0
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed by now
            count += os.readlink(f"/proc/self/fd/{name}") == target
    return count


needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")


def test_a_held_gate_holds_the_directory_flock_until_released(tmp_path):
    gate = WriteGate(str(tmp_path))
    assert _directory_flock_is_free(tmp_path)
    gate.acquire(1)
    assert not _directory_flock_is_free(tmp_path)
    gate.release()
    assert _directory_flock_is_free(tmp_path)


def test_a_thread_holding_the_gate_takes_it_again_and_keeps_it_until_the_last_release(tmp_path):
    # A second connection to the same file in one thread: nested BEGINs must not deadlock.
    gate = WriteGate(str(tmp_path))
    gate.acquire(1)
    gate.acquire(1)
    gate.release()
    assert not _directory_flock_is_free(tmp_path)
    gate.release()
    assert _directory_flock_is_free(tmp_path)


def test_a_second_thread_waits_for_the_first_to_release(tmp_path):
    gate = WriteGate(str(tmp_path))
    gate.acquire(1)
    acquired = threading.Event()

    def writer():
        gate.acquire(WAIT)
        acquired.set()
        gate.release()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert not acquired.wait(0.2)  # blocked while the first thread holds it
    finally:
        gate.release()
    assert acquired.wait(WAIT)
    thread.join(WAIT)
    assert _directory_flock_is_free(tmp_path)


def test_a_thread_gives_up_after_the_timeout_as_sqlite_would(tmp_path):
    gate = WriteGate(str(tmp_path))
    gate.acquire(1)
    failures = []

    def writer():
        try:
            gate.acquire(0.05)
        except OperationalError as exc:
            failures.append(str(exc))

    thread = threading.Thread(target=writer)
    thread.start()
    thread.join(WAIT)
    gate.release()
    assert failures == ["database is locked"]


def test_the_gate_gives_up_after_the_timeout_while_another_process_writes(tmp_path):
    gate = WriteGate(str(tmp_path))
    other = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(OperationalError, match="^database is locked$"):
            gate.acquire(0.05)
        fcntl.flock(other, fcntl.LOCK_UN)
        # The failed attempt let go of the thread lock: the gate still works, from any thread.
        done = threading.Event()
        thread = threading.Thread(target=lambda: (gate.acquire(1), gate.release(), done.set()))
        thread.start()
        thread.join(WAIT)
        assert done.is_set()
    finally:
        os.close(other)


def test_a_gate_first_used_after_a_fork_works_in_the_child(tmp_path):
    # gunicorn's master imports the app (the gate may exist) but never writes before forking.
    gate = WriteGate(str(tmp_path))
    gate._pid = -1  # as a forked child sees it: made by another process
    gate.acquire(1)
    assert not _directory_flock_is_free(tmp_path)
    gate.release()
    assert _directory_flock_is_free(tmp_path)


@needs_proc
def test_after_a_fork_the_child_closes_the_inherited_descriptor_and_locks_its_own(tmp_path):
    gate = WriteGate(str(tmp_path))
    gate.acquire(1)
    gate.release()  # the parent's descriptor stays open for its next write
    assert _open_fds_on(tmp_path) == 1
    child_holds_r, child_holds_w = os.pipe()
    parent_done_r, parent_done_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: only the gate and the pipes, then _exit (no pytest teardown here)
        status = 1
        try:
            gate.acquire(WAIT)
            os.write(child_holds_w, str(_open_fds_on(tmp_path)).encode())
            select.select([parent_done_r], [], [], WAIT)
            gate.release()
            status = 0
        finally:
            os._exit(status)
    try:
        ready, _, _ = select.select([child_holds_r], [], [], WAIT)
        assert ready, "the child did not take the gate"
        # One descriptor on the directory in the child: its own, not the parent's copy besides.
        assert os.read(child_holds_r, 16) == b"1"
        # The child's flock is on its own open file description, so it excludes the parent.
        with pytest.raises(OperationalError, match="database is locked"):
            gate.acquire(0.05)
    finally:
        os.write(parent_done_w, b"x")
        _, status = os.waitpid(pid, 0)
        for fd in (child_holds_r, child_holds_w, parent_done_r, parent_done_w):
            os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0
    gate.acquire(1)  # the child let go: the parent writes again
    gate.release()
