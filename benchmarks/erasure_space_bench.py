"""How much room an erasure needs on disk (issue 19 sizes the headroom and the erasure reserve from it): the rollback
journal that deleting the largest session a client can make, and one purge batch of typical sessions, write under
secure_delete (every page the delete changes is copied there first: what fails on a full disk). Measured on a copy,
the repository's erase statements in one transaction with journal_mode=PERSIST, which leaves the journal at the size
it reached. Figures: results/erasure_space.md.
"""

import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import _common  # noqa: E402
from benchmarks.session_limits_bench import message_text, resume_text  # noqa: E402


def journal_bytes(db: Path, pks: list[int]) -> int:
    """The journal the erasure of `pks` writes, measured on a copy of `db`."""
    copy, keys = Path(shutil.copyfile(db, db.with_name("copy.db"))), ", ".join("?" * len(pks))
    with sqlite3.connect(copy, isolation_level=None) as connection:
        connection.execute("PRAGMA secure_delete=ON")
        connection.execute("PRAGMA journal_mode=PERSIST")
        connection.execute("BEGIN IMMEDIATE")
        owners = connection.execute(f"SELECT owner_id FROM sessions_app_agentsession WHERE id IN ({keys})", pks)
        owners = [row[0] for row in owners]
        connection.execute(f"DELETE FROM sessions_app_sessionevent WHERE agent_session_id IN ({keys})", pks)
        connection.execute(f"DELETE FROM sessions_app_agentsession WHERE id IN ({keys})", pks)
        placeholders = ", ".join("?" * len(owners))
        connection.execute(f"DELETE FROM sessions_app_userstate WHERE owner_id IN ({placeholders})", owners)
        columns = "created_at, trigger, sessions_deleted, events_deleted, duration_ms"
        connection.execute(f"INSERT INTO sessions_app_deletionaudit ({columns}) VALUES ('2026-01-01', 'api', 1, 1, 1)")
        connection.execute("COMMIT")
    connection.close()
    size = Path(f"{copy}-journal").stat().st_size
    copy.unlink()
    Path(f"{copy}-journal").unlink()
    return size


def run(args) -> tuple[list[str], dict]:
    with tempfile.TemporaryDirectory(prefix="erasure-space-bench-") as tmp:
        _common.setup_in_process(Path(tmp))
        from django.conf import settings
        from django.db import connection
        from django.test import Client

        from sessions_app.models import AgentSession
        from sessions_app.selectors import sessions_with_metadata

        def session(kind: str, resume_chars: int, message_chars: int, turns: int) -> str:
            session_id, headers = _common.api_session(client, resume_text(kind, resume_chars))
            for n in range(1, turns + 1):
                answer = _common.api_turn(client, session_id, headers, message_text(kind, message_chars, n))
                if answer.status_code != 200:
                    break
            return session_id

        client, turns = Client(), 5 if args.quick else settings.SESSION_MAX_TURNS
        largest = {
            k: session(k, settings.RESUME_MAX_CHARS, settings.MESSAGE_MAX_CHARS, turns) for k in ("latin", "cjk")
        }
        batch = 10 if args.quick else settings.PURGE_BATCH_SIZE
        typical = [session("latin", 27_000, 400, 3) for _ in range(batch)]
        connection.close()  # every change is in the file
        stored = sessions_with_metadata(AgentSession.objects.all())
        rows = {s.session_id: (s.pk, s.size_bytes, s.event_count) for s in stored}
        connection.close()
        erasures = {f"largest session ({kind}: {turns} turns)": [s] for kind, s in largest.items()}
        erasures[f"purge batch ({batch} sessions: 27,000-character resume, 3 turns)"] = typical
        results = [
            {"what": what, "sessions": len(ids), "events": sum(rows[s][2] for s in ids)}
            | {"stored_bytes": sum(rows[s][1] for s in ids)}
            | {"journal_bytes": journal_bytes(Path(tmp) / "bench.db", [rows[s][0] for s in ids])}
            for what, ids in erasures.items()
        ]
    rows = [
        [r["what"], r["sessions"], r["events"], f"{r['stored_bytes'] / 1024:,.1f}", f"{r['journal_bytes'] / 1024:,.1f}"]
        + [f"{r['journal_bytes'] / r['stored_bytes']:.2f}"]
        for r in results
    ]
    lines = [
        "The journal each erasure writes before it may change a page (secure_delete on, journal_mode=DELETE"
        " in the service; measured with PERSIST on a copy). Bytes in KB (1,024).",
        "",
        *_common.md_table("erasure | sessions | events | stored, sealed (KB) | journal (KB) | journal / stored", rows),
    ]
    return lines, {"results": results}


if __name__ == "__main__":
    sys.exit(
        _common.main("erasure_space", "Erasure space: the journal a delete and a purge batch need", ["Django"], run)
    )
