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

With `OPTIONS["pool"]` (a size: `DATABASE_POOL_SIZE`, which `manage.py serve` gives its web
workers), a connection Django closes outside a transaction is kept open for the next one, up
to that many idle per process and file, as Django's own PostgreSQL pool does. Why: an ASGI
request runs its sync steps in a thread of its own, so without it every request (and a turn
twice, since it gives its connection back while the model thinks) opened the file, had
Django register its SQL functions and our receiver set its PRAGMAs, and closed it again. A
connection taken from the pool is sent `connection_created` like a new one, so the receiver
still checks `secure_delete` on every connection Django hands out.
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


class ConnectionPool:
    """Idle SQLite connections of this process, at most `size`, for the next thread to take."""

    def __init__(self, size: int):
        self.size, self._idle, self._lock, self._pid = size, [], threading.Lock(), os.getpid()

    def take(self):
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's connections are not its own
                self._idle, self._pid = [], os.getpid()
            return self._idle.pop() if self._idle else None

    def give_back(self, raw) -> bool:
        """Keeps `raw` (no transaction open) unless the pool is full; False: the caller closes it."""
        with self._lock:
            if self._pid == os.getpid() and len(self._idle) < self.size:
                self._idle.append(raw)
                return True
        return False


_pools: dict[str, ConnectionPool] = {}  # by settings NAME


def connection_pool(database_path: str, size: int) -> ConnectionPool:
    with _gates_lock:
        return _pools.setdefault(database_path, ConnectionPool(size))


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
    _pool = None  # with OPTIONS["pool"]: where a closed connection waits for the next request

    def get_connection_params(self):
        params = super().get_connection_params()
        size = params.pop("pool", 0)  # ours, not sqlite3.connect()'s
        if size and not self.is_in_memory_db():
            self._pool = connection_pool(str(self.settings_dict["NAME"]), int(size))
        return params

    def get_new_connection(self, conn_params):
        raw = self._pool.take() if self._pool is not None else None
        return raw if raw is not None else super().get_new_connection(conn_params)

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
            raw = self.connection
            # Only a connection with nothing open and nothing gone wrong waits for the next request.
            if self._pool is None or raw.in_transaction or self.errors_occurred or not self._pool.give_back(raw):
                return super()._close()
        finally:
            self._release_write_gate()
