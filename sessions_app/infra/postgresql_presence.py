"""This process's presence on PostgreSQL: one connection it opens once and keeps while it lives.

A turn's row lock names this connection as its holder (`holder()`: the backend's pid and start
time), not the turn's own connection: a turn gives its connection back while the model thinks
(`turns/service.py`), so the turns a server holds at once are not bounded by the database's
connections. The presence ends with its process, kill -9 included: its backend leaves
`pg_stat_activity` and the locks of the process's turns are free at once.
"""

from __future__ import annotations

import os
import threading

import psycopg

# How a holder is written, here and where its liveness is checked (storage/turn_lock.py).
HOLDER = "'pg:' || pid || ':' || extract(epoch from backend_start)"
THIS_CONNECTION = f"SELECT {HOLDER} FROM pg_stat_activity WHERE pid = pg_backend_pid()"

_lock = threading.Lock()
# By process: a forked child must not use, or close, its parent's (closing it would end the
# parent's backend and free its locks), so an inherited one is kept here untouched.
_presences: dict[int, psycopg.Connection] = {}


def holder(connection) -> str:
    """The holder this process writes into a row lock: its presence connection, opened with the
    parameters of Django's `connection` the first time (again if the server lost it)."""
    with _lock:
        presence = _presences.get(os.getpid())
        try:
            if presence is not None and not presence.closed:
                return presence.execute(THIS_CONNECTION).fetchone()[0]
        except psycopg.OperationalError:  # the server restarted: this presence is gone
            presence.close()
        presence = _presences[os.getpid()] = psycopg.connect(**connection.get_connection_params(), autocommit=True)
        return presence.execute(THIS_CONNECTION).fetchone()[0]


def close() -> None:
    """Ends this process's presence: before a test run drops its database (a row lock it still
    names then counts as a dead holder's)."""
    with _lock:
        presence = _presences.pop(os.getpid(), None)
    if presence is not None:
        presence.close()
