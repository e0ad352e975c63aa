"""Who can read the database file, and what it holds of operators.

Under the usual umask (022) SQLite creates a database 0644: any local user
could copy it, with the operators' password hashes and, before admin sessions
moved to a signed cookie, live admin sessions to log in with. var/ is 0700,
the database and its sidecars 0600, however the service is started.
"""

import os
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection, connections
from django.urls import reverse

from sessions_app.infra.private_files import restrict_database_files

ROOT = Path(__file__).resolve().parents[2]
OPERATOR_PASSWORD = "fictional-operator-password-7"
pytestmark = pytest.mark.sqlite_only


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def modes_in(directory: Path) -> dict[str, int]:
    return {path.name: mode(path) for path in directory.iterdir()}


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


@pytest.fixture
def fresh_connection():
    """A new connection made by Django with the project's settings, to a file the test names."""
    opened = []

    def connect(path: Path):
        fresh = type(connections["default"])({**connection.settings_dict, "NAME": str(path)}, alias="fresh")
        fresh.ensure_connection()
        opened.append(fresh)
        return fresh

    yield connect
    for fresh in opened:
        fresh.close()


@pytest.mark.django_db
def test_a_new_database_and_its_journal_are_owner_only(umask_022, tmp_path, fresh_connection):
    database = tmp_path / "new.db"
    fresh = fresh_connection(database)
    assert modes_in(tmp_path) == {"new.db": 0o600}
    with fresh.cursor() as cursor:
        cursor.execute("CREATE TABLE note (text TEXT)")
        cursor.execute("BEGIN IMMEDIATE")
        cursor.execute("INSERT INTO note VALUES ('during the write')")
        during_the_write = modes_in(tmp_path)
        cursor.execute("COMMIT")
    # SQLite gives the journal it creates the database file's mode.
    assert during_the_write == {"new.db": 0o600, "new.db-journal": 0o600}
    assert modes_in(tmp_path) == {"new.db": 0o600}


@pytest.mark.django_db
def test_an_existing_database_readable_by_others_is_made_owner_only(umask_022, tmp_path, fresh_connection):
    database = tmp_path / "old.db"
    sqlite3.connect(database).close()  # as SQLite alone makes it: 0644
    assert mode(database) == 0o644
    fresh_connection(database)
    assert mode(database) == 0o600


def test_existing_sidecars_readable_by_others_are_made_owner_only(umask_022, tmp_path):
    database = tmp_path / "wal.db"
    holder = sqlite3.connect(database, isolation_level=None)  # keeps -wal and -shm in place
    try:
        holder.execute("PRAGMA journal_mode=WAL")
        holder.execute("CREATE TABLE note (text TEXT)")
        assert set(modes_in(tmp_path).values()) == {0o644} and len(modes_in(tmp_path)) == 3
        restrict_database_files(database)  # what every Django connection does before opening
        assert modes_in(tmp_path) == {"wal.db": 0o600, "wal.db-wal": 0o600, "wal.db-shm": 0o600}
    finally:
        holder.close()


@pytest.mark.slow
def test_manage_py_makes_var_and_the_database_owner_only(umask_022, tmp_path):
    var = tmp_path / "var"
    var.mkdir()  # as an older version, or `mkdir -p var`, left it: 0755
    data = tmp_path / "data"
    data.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
    env.update(
        DJANGO_VAR_DIR=str(var),
        DATABASE_URL=f"sqlite:///{data / 'sessions.db'}",
        DJANGO_SECRET_KEY="file-modes-test-key-" + "k" * 40,
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "--verbosity", "0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert mode(var) == 0o700
    assert modes_in(data) == {"sessions.db": 0o600}


@pytest.mark.django_db
def test_an_admin_login_writes_no_session_to_the_database(client, django_user_model):
    django_user_model.objects.create_superuser("operator", password=OPERATOR_PASSWORD)
    response = client.post(
        reverse("admin:login"), {"username": "operator", "password": OPERATOR_PASSWORD, "next": "/admin/"}
    )
    assert response.status_code == 302, response.content
    assert client.get(reverse("admin:index")).status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM django_session")
        assert cursor.fetchone()[0] == 0

    cookie = response.cookies["sessionid"]
    assert cookie["httponly"] and cookie["samesite"] == "Lax"
    assert not cookie["max-age"] and not cookie["expires"]  # gone when the browser closes


@pytest.mark.django_db
def test_an_admin_session_cookie_expires_after_eight_hours(client, django_user_model, monkeypatch):
    django_user_model.objects.create_superuser("operator", password=OPERATOR_PASSWORD)
    client.post(reverse("admin:login"), {"username": "operator", "password": OPERATOR_PASSWORD})
    signed_at = time.time()
    monkeypatch.setattr(time, "time", lambda: signed_at + 7.9 * 3600)
    assert client.get(reverse("admin:index")).status_code == 200
    monkeypatch.setattr(time, "time", lambda: signed_at + 8.1 * 3600)
    assert client.get(reverse("admin:index")).status_code == 302  # to the login page


def test_the_rate_limit_cache_file_is_owner_only(tmp_path):
    from sessions_app.infra.cache import SQLiteCache

    previous = os.umask(0o022)
    try:
        cache = SQLiteCache(str(tmp_path / "cache"), {})
        cache.add("k", 0)
        assert cache.incr("k") == 1
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "cache").stat().st_mode) == 0o700
    for path in (tmp_path / "cache").iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_opening_a_connection_keeps_the_locks_other_connections_hold(tmp_path):
    """Closing any descriptor of the database file drops every POSIX lock the process
    holds on it (SQLite's "how to corrupt" list): making the file private must never
    open and close it while another thread's connection holds a lock."""
    from sessions_app.infra.private_files import PrivateSQLiteConnection

    path = str(tmp_path / "locks.db")
    writer = sqlite3.connect(path, factory=PrivateSQLiteConnection, isolation_level=None)
    writer.execute("CREATE TABLE t (x)")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO t VALUES (1)")  # holds the write lock
    sqlite3.connect(path, factory=PrivateSQLiteConnection).close()  # another thread's new connection
    other_process = subprocess.run(
        [sys.executable, "-c", f"import sqlite3; sqlite3.connect({path!r}, timeout=0).execute('BEGIN IMMEDIATE')"],
        capture_output=True,
        text=True,
    )
    writer.execute("ROLLBACK")
    assert other_process.returncode != 0 and "database is locked" in other_process.stderr
