"""The project's database backend: Django's SQLite backend with a write gate.

Every transaction (`transaction.atomic`, which on SQLite starts
with BEGIN IMMEDIATE) first takes a lock shared by all threads and processes
that write to files in the same directory: a thread lock within the
process, then an exclusive flock(2) on the directory holding the database
(no file is created; the kernel drops the flock if a process dies). Why:
SQLite cannot wake a waiting writer: one that finds the write lock taken
sleeps in SQLite's busy handler with growing pauses, so under concurrent
writes most of the waiting is sleeping past the moment the lock came free
(the strace figures: benchmarks/results/sqlite_choices.md). Writers of one
process wait on the thread lock (woken at release); processes poll the
flock every 0.5-2 ms. The gate waits at most
the busy timeout, then raises "database is locked" as SQLite would. It only
changes who waits how: SQLite's own locking still guarantees correctness,
and writes outside a transaction (autocommit statements) are not gated.

The gate is this backend's, not a patch of Django's wrapper: `ENGINE` names this
module where settings use SQLite (config/settings/base.py). The PRAGMAs every
connection gets stay in `sessions_app.infra.sqlite`'s `connection_created` receiver.
"""

import contextlib
import os
import threading
import time

from django.db import OperationalError
from django.db.backends.sqlite3 import base as sqlite3

try:
    import fcntl
except ImportError:  # not POSIX: the gate still orders the threads of one process
    fcntl = None


class WriteGate:
    """One writer at a time per database file, across threads and processes (see the module docstring)."""

    def __init__(self, directory: str):
        self.directory = directory
        self._fd = None
        self._init_for_this_process()

    def _init_for_this_process(self) -> None:
        # After a fork (gunicorn workers, qcluster) the child must not share the
        # parent's open file description: flock belongs to it, not to the process.
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)  # the child's copy; the parent's stays open
        self._pid = os.getpid()
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd = None

    def acquire(self, timeout: float) -> None:
        if self._pid != os.getpid():
            self._init_for_this_process()
        deadline = time.monotonic() + timeout
        if not self._thread_lock.acquire(timeout=timeout):
            raise OperationalError("database is locked")
        if self._depth:  # this thread already holds it (a second connection to the same file)
            self._depth += 1
            return
        try:
            if fcntl is not None and self._fd is None:
                self._fd = os.open(self.directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
            delay = 0.0005
            while fcntl is not None:
                try:
                    fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise OperationalError("database is locked") from None
                    time.sleep(delay)
                    delay = min(delay * 2, 0.002)
        except BaseException:
            self._thread_lock.release()
            raise
        self._depth = 1

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0 and fcntl is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._thread_lock.release()


_gates: dict[str, WriteGate] = {}  # by directory
_gate_by_name: dict[str, WriteGate] = {}  # by settings NAME, to skip realpath() per transaction
_gates_lock = threading.Lock()


def write_gate(database_path: str) -> WriteGate:
    gate = _gate_by_name.get(database_path)
    if gate is None:
        directory = os.path.dirname(os.path.realpath(database_path))
        with _gates_lock:
            gate = _gate_by_name[database_path] = _gates.setdefault(directory, WriteGate(directory))
    return gate


class DatabaseWrapper(sqlite3.DatabaseWrapper):
    """SQLite whose transactions (BEGIN under autocommit, which is IMMEDIATE here) pass the
    write gate first and leave it at COMMIT, ROLLBACK or close."""

    _holds_write_gate = None  # the gate this connection holds now, if any

    def _release_write_gate(self) -> None:
        gate, self._holds_write_gate = self._holds_write_gate, None
        if gate is not None:
            gate.release()

    def _start_transaction_under_autocommit(self):
        # The gate is looked up per transaction: the test runner renames the
        # database of a connection wrapper after it first connected.
        if self.is_in_memory_db():
            return super()._start_transaction_under_autocommit()
        gate = write_gate(str(self.settings_dict["NAME"]))
        gate.acquire(float(self.settings_dict.get("OPTIONS", {}).get("timeout", 5)))
        self._holds_write_gate = gate
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self._release_write_gate()
            raise

    def _commit(self):
        try:
            return super()._commit()
        finally:
            self._release_write_gate()

    def _rollback(self):
        try:
            return super()._rollback()
        finally:
            self._release_write_gate()

    def _close(self):
        try:
            return super()._close()
        finally:
            self._release_write_gate()
