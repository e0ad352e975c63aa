"""Files only the service's own OS user may read: var/, the secret key, the database.

The SQLite file holds operators' password hashes and every session's
metadata, so a file another local user can read is a leak even though the
content is sealed. Under the usual umask (022) SQLite creates a database
0644, and changing the mode afterwards is too late for anyone who opened it
in between (an open descriptor keeps reading whatever is written later). So
the file is created 0600 before SQLite opens it: the SQLite connection
factory below does that on every connection, whoever starts the service
(make run, manage.py, gunicorn, uvicorn, the test runner). SQLite gives the
`-journal`, `-wal` and `-shm` files it creates the database file's mode
(os_unix.c, findCreateFileMode; tests/storage/test_database_file.py checks it mid-write).
Files and directories from before this fix have their modes corrected.

No Django import here: settings import this module.
"""

import os
import secrets
import sqlite3
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
SQLITE_SIDECARS = ("-journal", "-wal", "-shm")


def _mode(st: os.stat_result) -> int:
    return stat.S_IMODE(st.st_mode)


def private_directory(path: Path) -> Path:
    """Creates `path` owner-only (0700), or makes an existing one so."""
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    if _mode(path.stat()) != PRIVATE_DIR_MODE:
        path.chmod(PRIVATE_DIR_MODE)
    return path


def read_or_create_secret_key(path: Path) -> str:
    """The key in `path` (0600); made once, so every process started on this var/ signs alike."""
    return read_or_create_private_text(path, lambda: secrets.token_urlsafe(50))


def read_or_create_private_text(path: Path, make: Callable[[], str]) -> str:
    """The text in `path` (0600), stripped; made by `make` once, so every process started on
    this var/ reads the same (the secret key, the deletion log's signing key).

    Two processes starting at once (gunicorn workers) both end up with the
    text of whichever linked its file first: the file appears complete or not at all.
    """
    if not path.exists():
        fd, draft = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mkstemp: 0600
        try:
            with os.fdopen(fd, "w") as file:
                file.write(make() + "\n")
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(draft)
    if _mode(path.stat()) != PRIVATE_FILE_MODE:
        path.chmod(PRIVATE_FILE_MODE)
    text = path.read_text().strip()
    if not text:
        raise ValueError(f"{path} is empty: delete it and a new one will be made")
    return text


def restrict_database_files(database) -> None:
    """Creates the database file 0600 if missing; puts it and any sidecar at 0600.

    Only plain paths: in-memory databases and `file:` URIs are left to SQLite.
    Never opens the database file itself: closing any descriptor of a file
    drops every POSIX lock this process holds on it, including the locks of
    SQLite connections in other threads (SQLite's documented "how to corrupt"
    case). So a missing file is made under a temporary name and linked into
    place, and modes are changed by path.
    """
    name = os.fspath(database)
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if not name or name == ":memory:" or name.startswith("file:"):
        return
    directory = os.path.dirname(os.path.abspath(name))
    if not os.path.isdir(directory):
        return  # no such directory: SQLite reports it as it always does
    if not os.path.exists(name):
        fd, draft = tempfile.mkstemp(dir=directory, prefix=".new-database.")  # mkstemp: 0600
        os.close(fd)  # the draft's descriptor: no connection has it open
        try:
            os.link(draft, name)
        except FileExistsError:
            pass  # made meanwhile by another process or thread
        finally:
            os.unlink(draft)
    for path in (name, *(name + suffix for suffix in SQLITE_SIDECARS)):
        try:
            if _mode(os.stat(path)) != PRIVATE_FILE_MODE:
                os.chmod(path, PRIVATE_FILE_MODE)
        except FileNotFoundError:
            pass


class PrivateSQLiteConnection(sqlite3.Connection):
    """sqlite3.connect(factory=...) for settings.DATABASES OPTIONS: the file is private before SQLite opens it."""

    def __init__(self, database, *args, **kwargs):
        restrict_database_files(database)
        super().__init__(database, *args, **kwargs)
