"""SQLite settings that every connection of the project gets.

`secure_delete=ON` makes SQLite overwrite deleted content with zeros instead
of only unlinking it from the b-tree, so a deleted resume leaves no bytes in
the database file. Debian builds SQLite with it on by default, stock SQLite
(macOS, python.org builds, most distributions) with it off, so we set it
ourselves on every connection and never rely on the platform.

journal_mode=DELETE: the rollback journal holds the before-images of a
transaction's pages (for a delete, the very text being deleted) and is
unlinked when the transaction commits, so after commit no sidecar file holds
them. PERSIST would keep them in a `-journal` file, and WAL keeps the
inserted text in `-wal` frames until a checkpoint that any open reader can
hold back. What remains outside SQLite's reach (freed filesystem blocks) is
discussed in docs/DATA_INVENTORY.md.

temp_store=MEMORY keeps statement journals and temporary tables off disk:
otherwise SQLite may spill them into unlinked temp files.

File modes: the database file is created 0600 (and an existing one and its
sidecars made so) before SQLite opens it, by the connection factory that
settings put in DATABASES OPTIONS (config.private_files); the journal SQLite
creates gets the database file's mode. Not done here: connection_created
fires after SQLite has already created the file.

The busy timeout is the `timeout` option in settings.DATABASES.

synchronous stays FULL (SQLite's default; not set here). NORMAL was
measured (benchmarks/service_bench.py, same machine, runs interleaved):
11.5-11.8 turns/s at 8 clients against 12.1-14.7 with FULL, turn p99 within
noise, because a turn now commits twice (sessions_app.turns) and an fsync
costs ~1 ms here. And in journal_mode=DELETE, NORMAL does not merely risk
losing the last transaction on power loss, as it does in WAL mode: SQLite's
documentation says a power failure at the wrong moment can corrupt the
database on older filesystems ("probably" safe on modern ones). No gain
for that risk.

Write gate: every transaction (`transaction.atomic`, which on SQLite starts
with BEGIN IMMEDIATE) first takes a lock shared by all threads and processes
that write to files in the same directory: a thread lock within the
process, then an exclusive flock(2) on the directory holding the database
(no file is created; the kernel drops the flock if a process dies). Why:
SQLite cannot wake a waiting writer. A writer that finds the write lock
taken sleeps in SQLite's busy handler for 1, 2, 5, 10, ... up to 100 ms
between retries, so under concurrent writes most of the waiting is sleeping
past the moment the lock came free. Measured with strace under 8
closed-loop API clients (gunicorn, 2 workers x 4 threads, 12 s): the worker
threads slept 29 s in that handler (~20 ms per sleep) while a CPU stayed
idle; behind the gate, 7 s (~2 ms per sleep), turn p99 went from ~2 s to
under 1 s. Writers of one process wait on the thread lock (woken at
release); processes poll the flock every 0.5-2 ms. The gate waits at most
the busy timeout, then raises "database is locked" as SQLite would. It only
changes who waits how: SQLite's own locking still guarantees correctness,
and writes outside a transaction (autocommit statements) are not gated.
"""

import os
import threading
import time

from django.core.checks import Error, register
from django.db import OperationalError, connections
from django.db.backends.signals import connection_created
from django.dispatch import receiver

try:
    import fcntl
except ImportError:  # not POSIX: the gate still orders the threads of one process
    fcntl = None

CONNECTION_PRAGMAS = (
    "PRAGMA secure_delete=ON",
    "PRAGMA journal_mode=DELETE",
    "PRAGMA temp_store=MEMORY",
)


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
            try:
                os.close(self._fd)  # the child's copy; the parent's stays open
            except OSError:
                pass
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


def _gate_transactions(connection) -> None:
    """Wraps this connection wrapper's BEGIN / COMMIT / ROLLBACK / close with the write gate (once)."""
    if getattr(connection, "_write_gate_wrapped", False):
        return
    connection._write_gate_wrapped = True
    connection._holds_write_gate = None  # the gate this connection holds now, if any
    begin, commit, rollback, close = (
        connection._start_transaction_under_autocommit,
        connection._commit,
        connection._rollback,
        connection._close,
    )

    def release() -> None:
        gate, connection._holds_write_gate = connection._holds_write_gate, None
        if gate is not None:
            gate.release()

    def gated_begin() -> None:
        # The gate is looked up per transaction: the test runner renames the
        # database of a connection wrapper after it first connected.
        if connection.is_in_memory_db():
            return begin()
        gate = write_gate(str(connection.settings_dict["NAME"]))
        gate.acquire(float(connection.settings_dict.get("OPTIONS", {}).get("timeout", 5)))
        connection._holds_write_gate = gate
        try:
            begin()
        except BaseException:
            release()
            raise

    def releasing(end):
        def end_then_release():
            try:
                return end()
            finally:
                release()

        return end_then_release

    connection._start_transaction_under_autocommit = gated_begin
    connection._commit = releasing(commit)
    connection._rollback = releasing(rollback)
    connection._close = releasing(close)


def secure_delete_enabled(connection) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA secure_delete")
        return cursor.fetchone()[0] == 1


@receiver(connection_created, dispatch_uid="sessions_app.configure_sqlite_connection")
def configure_sqlite_connection(sender, connection, **kwargs) -> None:
    if connection.vendor != "sqlite":
        return
    _gate_transactions(connection)
    with connection.cursor() as cursor:
        for pragma in CONNECTION_PRAGMAS:
            cursor.execute(pragma)
    # Fail closed: a connection that would leave deleted resumes readable in
    # the file must not be used at all.
    if not secure_delete_enabled(connection):
        raise RuntimeError("SQLite refused PRAGMA secure_delete=ON on a new connection")


@register("database")
def check_secure_delete(app_configs=None, databases=None, **kwargs) -> list[Error]:
    errors = []
    for alias in databases or []:
        connection = connections[alias]
        if connection.vendor == "sqlite" and not secure_delete_enabled(connection):
            errors.append(
                Error(
                    f"SQLite connection '{alias}' has secure_delete off: deleted sessions"
                    " would stay readable in the database file.",
                    hint="sessions_app.sqlite.configure_sqlite_connection must run on every"
                    " connection (it is connected in SessionsAppConfig.ready()).",
                    id="sessions_app.E001",
                )
            )
    return errors
