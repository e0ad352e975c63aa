"""On a really full disk: a real gunicorn on an SQLite database on a 6 MB tmpfs the test mounts.

The service is fed resumes until it refuses new content (507, while the disk still has room);
then the rest of the disk is filled with a file of the test's. On that full disk every refused
request leaves the files and the rows as they were, a DELETE answers 204 and erases the rows,
and a purge erases every session; the file stays sound (`PRAGMA integrity_check`).

Mounting needs root (CI runs as root). Where it is impossible the test skips, except under CI
(CI=true or REQUIRE_SCALE_OUT_BACKENDS=1), where it fails: CI must never skip it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from sessions_app.infra.supervisor import gunicorn_command
from tests.support.privacy import find_in_text, fixture_markers, fixture_resume
from tests.support.servers import ROOT, free_port, service_env, start_server
from tests.support.system_tools import must_not_skip

pytestmark = [pytest.mark.sqlite_only, pytest.mark.slow]

VOLUME_BYTES = 6 * 1024 * 1024
HEADROOM = 1536 * 1024
RESERVE = 1024 * 1024
RESUME_CHARS = 27_000  # about the resumes


@pytest.fixture
def small_volume(tmp_path):
    """A 6 MB tmpfs mounted for this test only; always unmounted afterwards."""
    volume = tmp_path / "volume"
    volume.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={VOLUME_BYTES},mode=0700", "tmpfs", str(volume)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        reason = f"cannot mount a tmpfs here (uid {os.geteuid()}): {mounted.stderr.strip()}"
        if must_not_skip():
            pytest.fail(f"{reason}; under CI this test must run")
        pytest.skip(reason)
    try:
        yield volume
    finally:
        if subprocess.run(["umount", str(volume)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(volume)], check=False)


def _free(volume: Path) -> int:
    stats = os.statvfs(volume)
    return stats.f_bavail * stats.f_frsize


def _rows(db: Path, sql: str, params=()) -> list[tuple]:
    """A read-only look at the file (reading needs no room)."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as connection:
        return connection.execute(sql, params).fetchall()


def _snapshot(volume: Path, db: Path) -> tuple:
    """The files on the volume (name, size, and the database's bytes) and the stored rows."""
    files = sorted((path.name, path.stat().st_size) for path in volume.iterdir())
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    counts = _rows(
        db, "SELECT (SELECT COUNT(*) FROM sessions_app_agentsession), (SELECT COUNT(*) FROM sessions_app_sessionevent)"
    )
    return files, digest, counts[0]


def _fill(path: Path) -> None:
    """Writes `path` until the filesystem has not one byte left."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for chunk in (1 << 20, 1 << 16, 1 << 12, 1):
            try:
                while True:
                    os.write(fd, b"\0" * chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


def _resume() -> str:
    base = fixture_resume()
    return (base + "\n") * (RESUME_CHARS // (len(base) + 1)) + base[: RESUME_CHARS % (len(base) + 1)]


def test_deleting_and_purging_work_on_a_full_disk(small_volume, tmp_path):
    db = small_volume / "sessions.db"
    env = service_env(
        tmp_path,
        DATABASE_URL=f"sqlite:///{db}",
        STORAGE_HEADROOM_BYTES=str(HEADROOM),
        ERASURE_RESERVE_BYTES=str(RESERVE),
        AGENT_SESSION_CREATE_RATE="100000/hour",
        AGENT_SESSION_MESSAGE_RATE="100000/min",
        CLIENT_MESSAGE_RATE="100000/min",
        PURGE_BATCH_PAUSE_SECONDS="0",
    )
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    port = free_port()
    log_path = tmp_path / "server.log"
    command = gunicorn_command(sys.executable, f"127.0.0.1:{port}", workers=1, environ=env)
    process, base = start_server(command, env, log_path, port)
    statuses: list[int] = []
    try:
        with httpx.Client(base_url=base, timeout=30, headers={"Accept-Language": "en"}) as client:
            sessions = []  # (id, token)
            # 1. Fed until it refuses: 507 while the disk still has room, nothing of it stored.
            for _ in range(400):
                before = _snapshot(small_volume, db)
                created = client.post("/agent/sessions", json={"resume_text": _resume()})
                statuses.append(created.status_code)
                if created.status_code != 201:
                    break
                sessions.append((created.json()["session_id"], created.json()["token"]))
            assert created.status_code == 507, created.text
            assert created.json()["code"] == "storage_low"
            assert "storage" in created.json()["detail"]
            assert _free(small_volume) > HEADROOM // 2  # refused well before the disk is full
            assert _snapshot(small_volume, db) == before
            assert len(sessions) >= 20
            # The erasure reserve is there, preallocated.
            reserve = small_volume / "sessions.db-erasure-reserve"
            assert reserve.stat().st_blocks * 512 >= RESERVE

            session_id, token = sessions[0]
            headers = {"X-Session-Token": token}
            before = _snapshot(small_volume, db)
            refused = client.post(f"/agent/sessions/{session_id}/messages", json={"message": "Plan"}, headers=headers)
            statuses.append(refused.status_code)
            assert refused.status_code == 507 and refused.json()["code"] == "storage_low"
            assert _snapshot(small_volume, db) == before

            # 2. Now the disk is full: not one byte left, and SQLite can write nothing.
            _fill(small_volume / "filler")
            assert _free(small_volume) == 0
            probe = contextlib.closing(sqlite3.connect(db))
            with pytest.raises(sqlite3.OperationalError, match="database or disk is full"), probe as connection:
                connection.execute("CREATE TABLE probe (x)")
            for request in (
                lambda: client.post("/agent/sessions", json={"resume_text": _resume()}),
                lambda: client.post(
                    f"/agent/sessions/{session_id}/messages", json={"message": "Plan"}, headers=headers
                ),
            ):
                before = _snapshot(small_volume, db)
                answer = request()
                statuses.append(answer.status_code)
                assert answer.status_code == 507, answer.text
                assert _snapshot(small_volume, db) == before

            # 3. DELETE on the full disk: 204, the rows gone, and the reserve made again.
            for session_id, token in sessions[:3]:
                headers = {"X-Session-Token": token}
                deleted = client.delete(f"/agent/sessions/{session_id}", headers=headers)
                statuses.append(deleted.status_code)
                assert deleted.status_code == 204, deleted.text
                assert _rows(db, "SELECT id FROM sessions_app_agentsession WHERE session_id = ?", [session_id]) == []
                assert client.get(f"/agent/sessions/{session_id}", headers=headers).status_code == 404
                assert reserve.stat().st_blocks * 512 >= RESERVE
            assert _free(small_volume) < RESERVE  # still full
            assert _rows(
                db,
                "SELECT COUNT(*) FROM sessions_app_sessionevent WHERE agent_session_id NOT IN"
                " (SELECT id FROM sessions_app_agentsession)",
            ) == [(0,)]
            left = len(sessions) - 3
            assert _rows(db, "SELECT COUNT(*) FROM sessions_app_agentsession") == [(left,)]

        # 4. The purge on the full disk: every (here: every, with a TTL of a moment) session erased,
        # in batches of 100 at first: more journal than the reserve gives back, so they are halved.
        purged = subprocess.run(
            [sys.executable, "manage.py", "purge_sessions", "--ttl-hours", "0.0000001", "--batch-size", "100"],
            cwd=ROOT,
            env={**env, "LANG": "C"},
            capture_output=True,
            text=True,
            check=False,
        )
        assert purged.returncode == 0, purged.stderr
        # It met the full disk and went on on the reserve's room.
        assert "disk full during an erasure: released the erasure reserve" in purged.stderr
        assert "disk full: purge batches of 50 sessions from now on" in purged.stderr
        assert f"deleted {left} sessions" in purged.stdout
        assert _rows(db, "SELECT COUNT(*) FROM sessions_app_agentsession") == [(0,)]
        assert _rows(db, "SELECT COUNT(*) FROM sessions_app_sessionevent") == [(0,)]
        assert _rows(db, "SELECT COUNT(*) FROM sessions_app_userstate") == [(0,)]
        assert _rows(db, "SELECT COUNT(*) FROM sessions_app_deletionaudit") == [(4,)]
        assert _rows(db, "PRAGMA integrity_check") == [("ok",)]
        assert not Path(f"{db}-journal").exists()
    finally:
        process.terminate()
        process.wait(timeout=15)
    assert 500 not in statuses
    log = log_path.read_text(encoding="utf-8", errors="replace")
    # The DELETEs met the full disk and were done on the reserve's room.
    assert log.count("disk full during an erasure: released the erasure reserve") == 3
    assert "Traceback" not in log
    # One line per refusal: ours, saying why (Django's "Insufficient Storage: <path>" is dropped).
    assert log.count("new content refused") == 4
    assert "Insufficient Storage" not in log
    assert find_in_text(log, fixture_markers() + [token for _, token in sessions]) == []
