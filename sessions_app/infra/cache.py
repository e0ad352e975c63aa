"""A Django cache backend on one SQLite file, whose `add` and `incr` are atomic across processes.

Why: the API's throttles count requests with `cache.add(key, 0)` then
`cache.incr(key)` (sessions_app.api.throttles), which only holds a limit if
both are atomic across every gunicorn worker. Django's file and database
caches are shared but not atomic (`incr` is a get then a set, `add` a check
then a set); its local-memory cache is atomic but per process; Redis and
Memcached are atomic but need a server. Here each operation is ONE SQLite
statement (an UPSERT, an `UPDATE ... RETURNING`), and SQLite runs a write
statement under its database write lock, whichever process sends it.

What it holds: throttle counters under SHA-256 hashes of their keys (a key
names a client address or an owner id; neither is stored in clear), in its
own file, apart from the sessions database, so counting never waits on the
sessions' write lock. WAL with synchronous=NORMAL: a counter lost at a power
failure is harmless, an fsync per request is not. Integers and floats are
stored as SQLite numbers (so `incr` can add in SQL); other values are
pickled, as Django's own file and database caches do.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sqlite3
import threading
import time

from django.core.cache.backends.base import DEFAULT_TIMEOUT, BaseCache

from sessions_app.infra.private_files import PrivateSQLiteConnection

FILE_NAME = "cache.sqlite3"
BUSY_TIMEOUT_SECONDS = 20
CULL_EVERY_SECONDS = 60  # expired rows are deleted at most this often per connection

_SCHEMA = "CREATE TABLE IF NOT EXISTS cache (key TEXT PRIMARY KEY, value BLOB NOT NULL, expires REAL)"
_LIVE = "(expires IS NULL OR expires > ?)"


class SQLiteCache(BaseCache):
    """CACHES backend "sessions_app.infra.cache.SQLiteCache"; LOCATION is a directory."""

    def __init__(self, location: str, params: dict):
        super().__init__(params)
        self.path = os.path.join(location, FILE_NAME)
        self._local = threading.local()

    # --- connection: one per thread, new after a fork ---------------------------
    def _db(self) -> sqlite3.Connection:
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
            # isolation_level=None: every statement commits on its own.
            # Owner-only file (0600) and sidecars, like the sessions database.
            db = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, factory=PrivateSQLiteConnection
            )
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(_SCHEMA)
            local.db, local.pid, local.culled_at = db, os.getpid(), 0.0
        return local.db

    def _run(self, sql: str, params=()) -> list[tuple]:
        # fetchall() steps the statement to its end, so its write commits now.
        return self._db().execute(sql, params).fetchall()

    def _changes(self, sql: str, params=()) -> int:
        return self._db().execute(sql, params).rowcount

    # --- keys and values ------------------------------------------------------------
    def _key(self, key, version) -> str:
        return hashlib.sha256(self.make_and_validate_key(key, version=version).encode()).hexdigest()

    @staticmethod
    def _dump(value):
        if type(value) in (int, float):
            return value
        return pickle.dumps(value, pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def _load(value):
        return value if isinstance(value, (int, float)) else pickle.loads(value)

    def _cull(self, now: float) -> None:
        if now - self._local.culled_at >= CULL_EVERY_SECONDS:
            self._local.culled_at = now
            self._changes("DELETE FROM cache WHERE expires IS NOT NULL AND expires <= ?", (now,))

    # --- the cache API ---------------------------------------------------------------
    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None) -> bool:
        """Stores `value` only if no live value is stored: one statement, so one concurrent add wins."""
        now = time.time()
        added = self._changes(
            "INSERT INTO cache (key, value, expires) VALUES (?, ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires = excluded.expires"
            " WHERE cache.expires IS NOT NULL AND cache.expires <= ?",
            (self._key(key, version), self._dump(value), self.get_backend_timeout(timeout), now),
        )
        self._cull(now)
        return added == 1

    def get(self, key, default=None, version=None):
        rows = self._run(f"SELECT value FROM cache WHERE key = ? AND {_LIVE}", (self._key(key, version), time.time()))
        return self._load(rows[0][0]) if rows else default

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None) -> None:
        now = time.time()
        self._changes(
            "INSERT INTO cache (key, value, expires) VALUES (?, ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires = excluded.expires",
            (self._key(key, version), self._dump(value), self.get_backend_timeout(timeout)),
        )
        self._cull(now)

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None) -> bool:
        return (
            self._changes(
                f"UPDATE cache SET expires = ? WHERE key = ? AND {_LIVE}",
                (self.get_backend_timeout(timeout), self._key(key, version), time.time()),
            )
            == 1
        )

    def delete(self, key, version=None) -> bool:
        return (
            self._changes(f"DELETE FROM cache WHERE key = ? AND {_LIVE}", (self._key(key, version), time.time())) == 1
        )

    def has_key(self, key, version=None) -> bool:
        return bool(self._run(f"SELECT 1 FROM cache WHERE key = ? AND {_LIVE}", (self._key(key, version), time.time())))

    def incr(self, key, delta=1, version=None):
        """Adds `delta` in one statement: concurrent increments are all counted; keeps the expiry."""
        db_key, now = self._key(key, version), time.time()
        rows = self._run(
            f"UPDATE cache SET value = value + ? WHERE key = ? AND {_LIVE}"
            " AND typeof(value) IN ('integer', 'real') RETURNING value",
            (delta, db_key, now),
        )
        if rows:
            return rows[0][0]
        if self.has_key(key, version):
            raise TypeError("the cached value is not a number")
        raise ValueError(f"Key '{key}' not found")

    def clear(self) -> None:
        self._changes("DELETE FROM cache")
