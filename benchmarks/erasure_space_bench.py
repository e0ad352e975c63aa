#!/usr/bin/env python3
"""How much room an erasure needs on disk: the rollback journal of deleting the largest session a
client can make, and of one purge batch of typical sessions (issue 19: the headroom and the
erasure reserve are sized from these).

Under secure_delete, SQLite copies every page a delete changes into the journal before it
overwrites it; that copy is what fails on a full disk. Measured on a copy of the database: the
same statements as the repository's erase, in one transaction, with journal_mode=PERSIST, which
leaves the journal file at the size it reached. In-process through the API (offline model,
temporary SQLite file). All text is fictional.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common, loadgen  # noqa: E402
from benchmarks.session_limits_bench import message_text, resume_text  # noqa: E402

PACKAGES = ["Django"]


def _session(client, resume: str, messages: list[str]) -> tuple[str, str]:
    created = client.post("/agent/sessions", {"resume_text": resume}, format="json")
    assert created.status_code == 201, created.content
    session_id, token = created.json()["session_id"], created.json()["token"]
    for message in messages:
        answer = client.post(
            f"/agent/sessions/{session_id}/messages", {"message": message}, format="json", HTTP_X_SESSION_TOKEN=token
        )
        if answer.status_code != 200:
            break
    return session_id, token


def journal_bytes(db: Path, scratch: Path, pks: list[int]) -> int:
    """The journal the erasure of `pks` writes, measured on a copy of `db`."""
    copy = scratch / "copy.db"
    shutil.copyfile(db, copy)
    connection = sqlite3.connect(copy, isolation_level=None)
    try:
        connection.execute("PRAGMA secure_delete=ON")
        connection.execute("PRAGMA journal_mode=PERSIST")
        keys = ", ".join("?" * len(pks))
        connection.execute("BEGIN IMMEDIATE")
        owners = [
            row[0]
            for row in connection.execute(f"SELECT owner_id FROM sessions_app_agentsession WHERE id IN ({keys})", pks)
        ]
        connection.execute(f"DELETE FROM sessions_app_sessionevent WHERE agent_session_id IN ({keys})", pks)
        connection.execute(f"DELETE FROM sessions_app_agentsession WHERE id IN ({keys})", pks)
        connection.execute(
            f"DELETE FROM sessions_app_userstate WHERE owner_id IN ({', '.join('?' * len(owners))})", owners
        )
        connection.execute(
            "INSERT INTO sessions_app_deletionaudit"
            " (created_at, trigger, sessions_deleted, events_deleted, duration_ms)"
            " VALUES ('2026-01-01 00:00:00', 'api', 1, 1, 1)"
        )
        connection.execute("COMMIT")
    finally:
        connection.close()
    size = Path(f"{copy}-journal").stat().st_size
    for path in (copy, Path(f"{copy}-journal")):
        path.unlink()
    return size


def run(args) -> tuple[list[str], dict]:
    with tempfile.TemporaryDirectory(prefix="erasure-space-bench-") as tmp:
        os.environ.update({"DJANGO_CACHE_DIR": str(Path(tmp) / "cache"), "DJANGO_ALLOWED_HOSTS": "testserver"})
        os.environ.update(loadgen.UNTHROTTLED)
        for name in ("GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
            os.environ.pop(name, None)
        db = Path(tmp) / "bench.db"
        _common.setup_django(db)
        from django.conf import settings
        from django.db import connection
        from rest_framework.test import APIClient

        from sessions_app.models import AgentSession
        from sessions_app.selectors import sessions_with_metadata

        client = APIClient()
        turns = 5 if args.quick else settings.SESSION_MAX_TURNS
        largest = {}
        for kind in ("latin", "cjk"):
            messages = [message_text(kind, settings.MESSAGE_MAX_CHARS, n) for n in range(1, turns + 1)]
            session_id, _ = _session(client, resume_text(kind, settings.RESUME_MAX_CHARS), messages)
            largest[kind] = session_id
        batch = 10 if args.quick else settings.PURGE_BATCH_SIZE
        typical = [
            _session(client, resume_text("latin", 27_000), [message_text("latin", 400, n) for n in (1, 2, 3)])[0]
            for _ in range(batch)
        ]
        connection.close()  # every change is in the file
        rows = {
            s.session_id: (s.pk, s.size_bytes, s.event_count)
            for s in sessions_with_metadata(AgentSession.objects.all())
        }
        connection.close()
        results = []
        for kind, session_id in largest.items():
            pk, size, events = rows[session_id]
            results.append(
                {
                    "what": f"largest session ({kind}: {turns} turns)",
                    "sessions": 1,
                    "events": events,
                    "stored_bytes": size,
                    "journal_bytes": journal_bytes(db, Path(tmp), [pk]),
                }
            )
        pks = [rows[s][0] for s in typical]
        results.append(
            {
                "what": f"purge batch ({batch} sessions: 27,000-character resume, 3 turns)",
                "sessions": batch,
                "events": sum(rows[s][2] for s in typical),
                "stored_bytes": sum(rows[s][1] for s in typical),
                "journal_bytes": journal_bytes(db, Path(tmp), pks),
            }
        )
    lines = [
        "The journal each erasure writes before it may change a page (secure_delete on, journal_mode=DELETE"
        " in the service; measured with PERSIST on a copy). Bytes in KB (1,024).",
        "",
        *_common.md_table(
            "erasure | sessions | events | stored, sealed (KB) | journal (KB) | journal / stored",
            [
                [
                    r["what"],
                    r["sessions"],
                    r["events"],
                    f"{r['stored_bytes'] / 1024:,.1f}",
                    f"{r['journal_bytes'] / 1024:,.1f}",
                    f"{r['journal_bytes'] / r['stored_bytes']:.2f}",
                ]
                for r in results
            ],
        ),
    ]
    return lines, {"results": results}


if __name__ == "__main__":
    sys.exit(_common.main("erasure_space", "Erasure space: the journal a delete and a purge batch need", PACKAGES, run))
