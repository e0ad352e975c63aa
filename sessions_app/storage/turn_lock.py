"""The turn lock: one turn at a time per session, across threads, processes and servers.

A second turn that asks while one runs is refused at once (TurnInProgress, a 409), never queued.
A lock dies with its holder: a server killed mid-turn (kill -9) leaves no session locked.

- **SQLite** (every server on the one machine that holds the file): an open file description
  lock on the session's byte of an empty file beside the database
  (sessions_app.infra.file_range_locks). Taking and freeing it writes nothing, so it never
  waits for, or holds, SQLite's one writer (benchmarks/results/service.md: three of a cycle's
  eight write transactions were this lock's).
- **PostgreSQL** (several servers), or SQLite where the system has no such locks: the session's
  row (`turn_started_at`, `turn_holder`), taken with one `UPDATE ... WHERE free`. The holder is
  the process: on PostgreSQL its presence connection (infra/postgresql_presence.py: a killed
  server's backends leave pg_stat_activity at once; the turn's own connection is given back
  while the model thinks), on SQLite its pid; a holder that cannot be checked keeps the lock
  until the turn timeout and a margin have passed.

A turn that is stored frees its lock as its write transaction commits (`storing_then_releasing`;
the row lock's release is part of that transaction), so no other turn starts before the writes
are stored; one that is not frees it with `release_turn`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
from collections.abc import Iterator

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from sessions_app.infra import file_range_locks, postgresql_presence
from sessions_app.models import AgentSession

LOCK_FILE_SUFFIX = "-turns"  # beside the database file: "<name>-turns", empty


@functools.cache
def _file_locks_at(path: str) -> file_range_locks.FileRangeLocks:
    return file_range_locks.FileRangeLocks(path)


def _file_locks() -> file_range_locks.FileRangeLocks | None:
    """The file locks of this SQLite database, or None where the row is the lock."""
    connection = transaction.get_connection()
    if connection.vendor != "sqlite" or not file_range_locks.AVAILABLE:
        return None
    return _file_locks_at(str(connection.settings_dict["NAME"]) + LOCK_FILE_SUFFIX)


def lock_turn(session_pk: int, turn_timeout_seconds: float) -> bool:
    """Takes the session's turn lock; False when another turn holds it."""
    locks = _file_locks()
    if locks is not None:
        return locks.try_lock(session_pk)
    return _lock_row(session_pk, turn_timeout_seconds)


def release_turn(session_pk: int) -> None:
    """Frees the session's turn lock (a turn that stores nothing: failed, timed out, cancelled)."""
    locks = _file_locks()
    if locks is not None:
        locks.unlock(session_pk)
    else:
        _free_row(session_pk)


@contextlib.contextmanager
def storing_then_releasing(session_pk: int) -> Iterator[None]:
    """A transaction for a turn's writes that frees the session's turn lock as it commits, never
    before: a second turn starting earlier would read the state without the first one's writes.
    If the transaction rolls back, the lock stays taken (the turn's close() frees it)."""
    locks = _file_locks()
    with transaction.atomic():
        yield
        if locks is None:
            _free_row(session_pk)  # part of the transaction
    if locks is not None:
        locks.unlock(session_pk)


def turn_is_locked(session_pk: int) -> bool:
    """Whether a turn holds the session's lock."""
    locks = _file_locks()
    if locks is not None:
        return locks.is_locked(session_pk)
    return AgentSession.objects.filter(pk=session_pk, turn_started_at__isnull=False).exists()


# --- The row lock ------------------------------------------------------------------------


def _stale_lock_cutoff(turn_timeout_seconds: float) -> dt.datetime:
    # A turn cannot outlive its timeout; a lock older than that was left by a
    # holder nobody can check on, and may be taken over.
    return timezone.now() - dt.timedelta(seconds=turn_timeout_seconds + 30)


# Who holds a row lock: the process, named on PostgreSQL by its presence connection's backend
# (pid and start time), on SQLite by its pid. A pid used again by a new process looks alive: that
# lock waits for the cutoff, as an unknown holder's does.
LIVE_CONNECTION = f"SELECT 1 FROM pg_stat_activity WHERE {postgresql_presence.HOLDER} = %s"


def _this_holder(connection) -> str:
    if connection.vendor == "postgresql":
        return postgresql_presence.holder(connection)
    return f"pid:{os.getpid()}"


def holder_is_alive(holder: str) -> bool:
    """Whether the row lock's holder may still be running its turn (True when it cannot be told)."""
    kind, _, identity = holder.partition(":")
    connection = transaction.get_connection()
    if kind == "pg" and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(LIVE_CONNECTION, [holder])
            return cursor.fetchone() is not None
    if kind == "pid" and connection.vendor == "sqlite" and identity.isdigit():
        try:
            os.kill(int(identity), 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # another user's process
            return True
    return True


# In a transaction, so it passes the write gate (sessions_app.infra.sqlite_backend)
# instead of waiting in SQLite's busy handler. Taking the lock is one
# `UPDATE ... WHERE free`, and taking a dead holder's lock one `UPDATE ... WHERE
# holder = the dead one`: atomic on SQLite (one writer at a time) and on PostgreSQL
# under READ COMMITTED, where a second UPDATE of the same row waits for the first
# to commit, then rechecks its WHERE on the row as the first left it (taken: it
# updates nothing).
def _free_row(session_pk: int) -> None:
    # One statement: inside a turn's transaction it needs no savepoint of its own.
    with transaction.atomic(savepoint=False):
        AgentSession.objects.filter(pk=session_pk).update(turn_started_at=None, turn_holder="")


def _lock_row(session_pk: int, turn_timeout_seconds: float) -> bool:
    holder = _this_holder(transaction.get_connection())
    taken = {"turn_started_at": timezone.now(), "turn_holder": holder}
    session = AgentSession.objects.filter(pk=session_pk)
    with transaction.atomic():
        free = Q(turn_started_at__isnull=True) | Q(turn_started_at__lt=_stale_lock_cutoff(turn_timeout_seconds))
        if session.filter(free).update(**taken):
            return True
        current = session.values_list("turn_holder", flat=True).first()
        if not current or holder_is_alive(current):
            return False
        return bool(session.filter(turn_holder=current).update(**taken))
