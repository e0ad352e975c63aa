"""Room on the database's volume: the headroom new content needs, and the reserve erasure falls back on.

Two protections, so that "delete it now" and "gone after the TTL" hold when storage runs out:

- Headroom (`ensure_headroom`). Before a create or a message, the free space of the volume that
  holds the database and its journal is compared with `STORAGE_HEADROOM_BYTES`; under it, no new
  content is taken in (`InsufficientStorage`, which the API answers 507) and nothing is written.
  Deleting and purging never ask.
- The erasure reserve (SQLite). A file of `ERASURE_RESERVE_BYTES` beside the database,
  preallocated (posix_fallocate, so its blocks are really taken). A delete under
  secure_delete first copies every page it changes into the rollback journal; on a full disk
  that copy fails ("database or disk is full") and nothing is deleted. `erasure_attempts` then
  gives the reserve's blocks back to the filesystem, runs the erasure once more, and makes the
  reserve again afterwards where there is room.

`is_disk_full` tells a database's "disk full" apart from its other errors: SQLITE_FULL from
SQLite, SQLSTATE 53100 (disk_full) from PostgreSQL. Nothing here knows HTTP; the API maps the
exceptions (sessions_app/api/errors.py). On PostgreSQL there is no file of ours beside the
database and no local volume unless STORAGE_VOLUME_PATH names one (docs/RETENTION.md, "When the disk is full").
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connections, transaction

logger = logging.getLogger(__name__)


POSTGRESQL_DISK_FULL = "53100"
RESERVE_SUFFIX = "-erasure-reserve"


class InsufficientStorage(Exception):
    """The database's volume has less free space than the headroom: no new content is taken in."""


def is_disk_full(exc: BaseException | None) -> bool:
    """Whether `exc` (or what it was raised from) is a database refusing a write for lack of space."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, sqlite3.Error) and (getattr(exc, "sqlite_errorcode", 0) & 0xFF) == sqlite3.SQLITE_FULL:
            return True
        if getattr(exc, "sqlstate", None) == POSTGRESQL_DISK_FULL:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _database() -> dict:
    return connections["default"].settings_dict


def _sqlite_file() -> Path | None:
    database = _database()
    if connections["default"].vendor != "sqlite" or str(database["NAME"]) in ("", ":memory:"):
        return None
    return Path(database["NAME"])


def volume_path() -> Path | None:
    """A directory on the volume holding the database and its journal; None when not known here
    (PostgreSQL without STORAGE_VOLUME_PATH)."""
    if settings.STORAGE_VOLUME_PATH:
        return Path(settings.STORAGE_VOLUME_PATH)
    database = _sqlite_file()
    return database.parent if database else None


def free_bytes(path: Path) -> int:
    """What an unprivileged writer may still write on `path`'s filesystem."""
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


def reserve_path() -> Path | None:
    database = _sqlite_file()
    return database.with_name(database.name + RESERVE_SUFFIX) if database else None


def reserve_size(path: Path | None = None) -> int:
    """Bytes the reserve holds on disk now (0: none)."""
    path = path or reserve_path()
    try:
        return os.stat(path).st_blocks * 512 if path else 0
    except FileNotFoundError:
        return 0


def restore_reserve() -> bool:
    """Makes the reserve whole where it is missing or short and there is room; True if it is whole."""
    path, wanted = reserve_path(), settings.ERASURE_RESERVE_BYTES
    if path is None or wanted <= 0:
        return True
    if reserve_size(path) >= wanted:
        return True
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.posix_fallocate(fd, 0, wanted)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        # A partial reserve would hold blocks the journal may need: all or nothing.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return False
    finally:
        os.close(fd)
    return True


def release_reserve() -> int:
    """Gives the reserve's blocks back to the filesystem; returns how many bytes it held."""
    path = reserve_path()
    held = reserve_size(path)
    if path is not None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    return held


class ErasureAttempt:
    """One try of an erasure, as a `with` block around its transaction (`erasure_attempts`)."""

    def __init__(self, *, may_retry: bool, on_the_reserve: bool = False):
        self.may_retry, self.on_the_reserve = may_retry, on_the_reserve
        self.found_the_disk_full = False

    def __enter__(self) -> ErasureAttempt:
        return self

    def __exit__(self, kind, exc, traceback) -> bool:
        if self.on_the_reserve:
            # After a failed retry too: once its journal is gone, the room is back.
            if not restore_reserve():
                wanted = reserve_wanted()
                logger.warning("disk full: the erasure reserve could not be made again (%d bytes wanted)", wanted)
            return False
        if self.may_retry and isinstance(exc, DatabaseError) and is_disk_full(exc):
            released = release_reserve()
            logger.warning(
                "disk full during an erasure: released the erasure reserve (%d bytes) and retrying", released
            )
            self.found_the_disk_full = True
            return True  # the next attempt runs it again
        return False


def erasure_attempts() -> Iterator[ErasureAttempt]:
    """The tries an erasure gets, its transaction run by the caller in each (this module calls
    nothing of the caller's):

        for attempt in disk_space.erasure_attempts():
            with attempt, transaction.atomic():
                return erase(...)

    When the database finds the disk full, the reserve is given back and one more attempt follows,
    after which the reserve is made again where there is room. Inside someone else's transaction
    there is one attempt: only the outermost transaction can be retried. Two erasures meeting a
    full disk at once both retry; the first to finish may take the room back for the reserve
    before the other's retry, which then fails as before.
    """
    first = ErasureAttempt(may_retry=not transaction.get_connection().in_atomic_block)
    yield first
    if first.found_the_disk_full:
        yield ErasureAttempt(may_retry=False, on_the_reserve=True)


def reserve_wanted() -> int:
    return settings.ERASURE_RESERVE_BYTES if reserve_path() else 0


def ensure_headroom() -> None:
    """Raises InsufficientStorage when the database's volume is under the headroom.

    Called before new content is taken in; remakes a missing reserve first, but only where that
    leaves the headroom free, so taking in content never takes the last room from an erasure."""
    path = volume_path()
    if path is None:
        return
    free = free_bytes(path)
    missing = reserve_wanted() - reserve_size()
    if missing > 0 and free - missing >= settings.STORAGE_HEADROOM_BYTES and restore_reserve():
        free = free_bytes(path)
    if free < settings.STORAGE_HEADROOM_BYTES:
        logger.warning(
            "new content refused: %d bytes free on the database's volume, headroom %d",
            free,
            settings.STORAGE_HEADROOM_BYTES,
        )
        raise InsufficientStorage


@dataclass(frozen=True)
class SpaceReport:
    """What the operator sees: free space against the headroom, and the reserve."""

    free_bytes: int | None
    headroom_bytes: int
    reserve_wanted: int
    reserve_bytes: int

    @property
    def below_headroom(self) -> bool:
        return self.free_bytes is not None and self.free_bytes < self.headroom_bytes

    @property
    def reserve_whole(self) -> bool:
        return self.reserve_bytes >= self.reserve_wanted


def space_report() -> SpaceReport:
    path = volume_path()
    return SpaceReport(
        free_bytes=free_bytes(path) if path else None,
        headroom_bytes=settings.STORAGE_HEADROOM_BYTES,
        reserve_wanted=reserve_wanted(),
        reserve_bytes=reserve_size(),
    )


class OneLinePerRefusal(logging.Filter):
    """For the log handler: drops Django's own "Insufficient Storage: <path>" line of a 507, so a
    refusal logs the one line of ours that says why (`ensure_headroom`, the API's handler)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == "django.request" and getattr(record, "status_code", None) == 507)
