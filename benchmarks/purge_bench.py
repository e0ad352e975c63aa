"""Purge at scale: do expired sessions go fast enough, leaving nothing in the file with secure_delete ON (OFF is the
control), and does a running `manage.py purge_sessions` leave live turns' latency alone? Each purge runs in a fresh
process; the live turns go to gunicorn without the scheduler, whose start-up purge would come first. The sessions
are sealed by tests/support/factories.py, as the store seals. Figures: results/purge.md."""

import contextlib
import datetime as dt
import json
import logging
import os
import shutil
import signal
import sqlite3
import sys
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import _common, loadgen  # noqa: E402
from benchmarks._common import fmt, tally, verdict  # noqa: E402

EVENTS_PER_SESSION = 14
MARKER = "anon-purgebench-"  # every expired session's owner id starts with it (a clear column)
PACKAGES = ["Django", "django-q2", "google-adk", "gunicorn", "httpx"]


def child_build(url: str, sessions: str) -> None:
    """In a fresh process: migrates `url` and fills it with expired sessions, sealed as the store seals them."""
    started = time.monotonic()
    _common.setup_django(url)
    from django.db import connection, transaction

    from tests.support.factories import make_session

    logging.getLogger("httpx").setLevel(logging.WARNING)  # Django's logging settings apply here now
    old = dt.datetime.now(dt.UTC) - dt.timedelta(days=3)
    with transaction.atomic():
        for i in range(int(sessions)):
            text = f"Fictional event text {i}. " + "Reworded the logistics bullet points. " * 25
            make_session(f"{MARKER}{i:08d}", last_activity=old, events=EVENTS_PER_SESSION, text=text)
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*), AVG(LENGTH(event_data)) FROM sessions_app_sessionevent")
        events, average = cursor.fetchone()
    size = round(Path(url.removeprefix("sqlite:///")).stat().st_size / 2**20, 1) if url.startswith("sqlite:") else "n/a"
    built = {"sessions": int(sessions), "events": events, "avg_event_bytes": round(average), "file_mb": size}
    print(json.dumps(built | {"build_s": round(time.monotonic() - started, 2)}))


def child_purge(url: str, secure_delete: str) -> None:
    """In a fresh process: one purge_expired() of the database at `url`; prints a JSON line."""
    _common.setup_django(url)  # migrate is a no-op on the copy
    from django.conf import settings
    from django.db import connection

    from sessions_app.infra import sqlite as project_sqlite
    from sessions_app.models import DeletionLogEntry as Log  # the receipts
    from sessions_app.purge import purge_expired

    if secure_delete == "off":
        # As tests/erasure/test_erasure_e2e.py: every new connection gets secure_delete=OFF and
        # the fail-closed check is told it is fine.
        others = tuple(p for p in project_sqlite.CONNECTION_PRAGMAS if "secure_delete" not in p)
        project_sqlite.CONNECTION_PRAGMAS = others + ("PRAGMA secure_delete=OFF",)
        project_sqlite.secure_delete_enabled = lambda connection: True
    connection.close()  # the next connection gets the pragmas above
    with connection.cursor() as cursor:
        effective = cursor.execute("PRAGMA secure_delete").fetchone()[0] if connection.vendor == "sqlite" else "n/a"
    result = purge_expired(trigger="command").as_dict()
    pacing = {"batch_size": settings.PURGE_BATCH_SIZE, "pause": settings.PURGE_BATCH_PAUSE_SECONDS}
    print(json.dumps({"secure_delete_pragma": effective, **pacing, **result, "receipts": Log.objects.count()}))


def timed_purge(url: str, secure_delete: str) -> dict:
    result, _ = _common.run_child(__file__, ["--child-purge", url, secure_delete], _common.clean_env())
    working = result["seconds"] - result["batches"] * result["pause"]  # without the pauses between batches
    result["sessions_per_s"] = result["sessions"] / result["seconds"]
    result["sessions_per_working_s"] = result["sessions"] / working if working > 0 else float("nan")
    db = Path(url.removeprefix("sqlite:///"))
    result["marker_hits_after"] = db.read_bytes().count(MARKER.encode()) if url.startswith("sqlite:") else "n/a"
    db.unlink(missing_ok=True)
    return result


def live_turns(db: Path, p: dict, tmp: Path) -> dict:
    """Turns on gunicorn without, then during `manage.py purge_sessions` (once it opens the file); expired ones left."""
    env = loadgen.ours_env(db, tmp)
    (server, target), purge = loadgen.start_ours(env, tmp / "server.log", gunicorn=True, migrate=False), None
    try:
        stop, started, duration = threading.Event(), threading.Event(), p["baseline"] + p["budget"] + 10
        load_args = (target, p["clients"], p["warmup"], duration)
        load = ThreadPoolExecutor(1).submit(loadgen.run_load, *load_args, stop=stop, started=started)
        started.wait(30)
        time.sleep(p["warmup"])
        windows = {"without purge": _Window(server.pid)}
        time.sleep(p["baseline"])
        windows["without purge"].stop()
        purge = loadgen.spawn([_common.PY, "manage.py", "purge_sessions"], tmp / "purge.log", env=env)
        window, deadline = _Window(server.pid, purge.pid), time.monotonic() + p["budget"]
        while purge.poll() is None and time.monotonic() < deadline and not _has_open(purge.pid, db):
            time.sleep(0.02)
        windows["during purge"] = during = _Window(server.pid, purge.pid) if purge.poll() is None else window
        while purge.poll() is None and time.monotonic() < deadline:
            during.sample()
            time.sleep(0.05)
        during.stop()
        time.sleep(1.0)
        stop.set()
        result: loadgen.LoadResult = load.result(timeout=120)
        with contextlib.closing(sqlite3.connect(db, timeout=30)) as conn:
            query = "SELECT COUNT(*) FROM sessions_app_agentsession WHERE owner_id LIKE ?"
            expired_left = conn.execute(query, (MARKER + "%",)).fetchone()[0]
    finally:
        if purge is not None:
            loadgen.stop_server(purge, signal.SIGTERM, timeout=10)
        loadgen.stop_server(server, signal.SIGTERM)
    for w in windows.values():
        ops = [op for op in result.ops if w.t0 <= op.started and op.ended <= w.t1]
        turns = [op.ended - op.started for op in ops if op.kind == "turn" and op.ok]
        w.result |= {"turns": len(turns), "turns_per_s": len(turns) / w.result["seconds"]}
        w.result |= {"turn_ms": loadgen.summarize_ms(turns), "errors": [op.error for op in ops if not op.ok]}
    tail = (tmp / "purge.log").read_text(errors="replace").strip().splitlines()[-1:]
    live = {"clients": p["clients"], "windows": {name: w.result for name, w in windows.items()}}
    live |= {"purge_returncode": purge.returncode, "purge_output_tail": tail, "expired_left": expired_left}
    errors = sum(1 for op in result.ops if not op.ok)
    return live | {"errors_all_phases": errors, "server_log": loadgen.log_counts(tmp / "server.log")}


def _has_open(pid: int, path: Path) -> bool:
    with contextlib.suppress(OSError):
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path.resolve()) for fd in os.listdir(f"/proc/{pid}/fd"))
    return False


class _Window:
    """A stretch of the live run: its times and the cores used by the server, the purge and the rest."""

    def __init__(self, server_pid: int, purge_pid: int | None = None):
        self.server_pid, self.purge_pid, self.purge_cpu = server_pid, purge_pid, 0.0
        self.machine, self.server0 = loadgen.MachineCpu(), loadgen.tree_cpu_seconds(server_pid)
        self.t0 = time.monotonic()

    def sample(self) -> None:
        if self.purge_pid:  # read while it lives: its counters go when it exits
            self.purge_cpu = max(self.purge_cpu, loadgen.cpu_seconds(self.purge_pid))

    def stop(self) -> None:
        self.sample()
        self.t1 = time.monotonic()
        m = self.machine.stop(loadgen.tree_cpu_seconds(self.server_pid) - self.server0, self.purge_cpu)
        cores = [round(c, 2) for c in (*m["server_cores"], m["loadgen_cores"], m["other_cores"])]
        self.result = {"seconds": round(self.t1 - self.t0, 2), "cores": cores}


def run(args) -> tuple[list[str], dict]:
    sessions = 1000 if args.quick else 10000
    # The live run's clients, their warm-up, the window without a purge and the longest the purge may take (s).
    p = {"sessions": sessions, "clients": 4, "warmup": 3, "baseline": 8 if args.quick else 20}
    p["budget"] = max(60.0, sessions / 100)

    def build(url: str) -> dict:  # the database's figures
        return _common.run_child(__file__, ["--child-build", url, str(sessions)], _common.clean_env())[0]

    with tempfile.TemporaryDirectory(prefix="purge-bench-") as tmp_name:
        tmp = Path(tmp_name)
        print(f"building {sessions:,} expired sessions in each database ...", flush=True)
        built = build(f"sqlite:///{tmp / 'template.db'}")
        copy = {x: f"sqlite:///{shutil.copy(tmp / 'template.db', tmp / f'{x}.db')}" for x in ("on", "off")}
        runs = {f"SQLite, secure_delete {x.upper()}": timed_purge(copy[x], x) for x in ("on", "off")}
        if args.database_url:  # the same purge on a scratch database of the PostgreSQL server given
            name, server = f"purge_bench_{os.getpid()}", args.database_url
            with psycopg.connect(server, autocommit=True) as admin:
                admin.execute(f"CREATE DATABASE {name}")
                try:
                    url = urllib.parse.urlsplit(server)._replace(path=f"/{name}").geturl()
                    runs["PostgreSQL"] = {"built": build(url)} | timed_purge(url, "on")
                finally:
                    admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
        on, off = runs["SQLite, secure_delete ON"], runs["SQLite, secure_delete OFF"]
        print("live turns without / during a purge ...", flush=True)
        live = live_turns(Path(shutil.copyfile(tmp / "template.db", tmp / "live.db")), p, tmp)
    b, d = (live["windows"][name]["turn_ms"]["p99"] for name in ("without purge", "during purge"))
    verdicts = [
        verdict(r["sessions_per_s"] >= 1000, f">= 1,000 sessions/s purged, receipts included ({name}):")
        + f" {r['sessions_per_s']:,.0f} sessions/s ({r['sessions_per_working_s']:,.0f}/s without the pauses)"
        for name, r in runs.items()
        if "OFF" not in name
    ]
    verdicts.append(verdict(d <= 2 * b, f"turn p99 during the purge <= 2x without it: {d:.0f} ms vs {b:.0f} ms"))
    windows = [
        [name, w["seconds"], w["turns"], fmt(w["turns_per_s"])]
        + [fmt(w["turn_ms"][q], 0) for q in ("p50", "p95", "p99", "max")]
        + [len(w["errors"]), " / ".join(map(str, w["cores"]))]
        for name, w in live["windows"].items()
    ]
    purge_rows = [
        [f"{label} (PRAGMA={r['secure_delete_pragma']})", f"{r['sessions']:,}", f"{r['events']:,}", r["batches"]]
        + [fmt(r["seconds"], 2), fmt(r["sessions_per_s"], 0), fmt(r["sessions_per_working_s"], 0)]
        + [f"{r['receipts']:,}", r["marker_hits_after"]]
        for label, r in runs.items()
    ]
    purges = "database | sessions | events | batches | seconds | sessions/s | sessions/s without the pauses"
    live_header = "window | seconds | turns | turns/s | turn p50 ms | p95 ms | p99 ms | max ms"
    lines = [
        f"Database: {built['sessions']:,} expired sessions x {EVENTS_PER_SESSION} events ({built['events']:,} sealed"
        f" events, ~{built['avg_event_bytes']} bytes each, file {built['file_mb']} MB, built in {built['build_s']} s)."
        f" Settings in effect: PURGE_BATCH_SIZE={on['batch_size']}, PURGE_BATCH_PAUSE_SECONDS={on['pause']}.",
        *_common.section("purge_expired() alone (a fresh process per run, nothing else writing)"),
        *_common.md_table(purges + " | receipts (log entries) | owner-id marker left in file", purge_rows),
        "",
        f"secure_delete ON takes {on['seconds'] / off['seconds']:.2f}x the time of OFF. `seconds` is"
        " purge_expired()'s own figure, pauses after each batch and the log's entries and checkpoints included;"
        " the marker column counts the expired sessions' owner-id prefix in the raw bytes of the file after the purge.",
        *_common.section(f"Live turns while `manage.py purge_sessions` runs ({live['clients']} closed-loop clients)"),
        f"gunicorn as `manage.py serve` starts it (`{loadgen.gunicorn_line()}`), on a copy of the same database;"
        " each client repeats create -> 3 turns -> read -> delete. The purge runs in its own process.",
        "",
        *_common.md_table(live_header + " | errors | cores: server / purge / load gen / other processes", windows),
        "",
        f"Purge process: exit {live['purge_returncode']}, `{' '.join(live['purge_output_tail'])}`;"
        f" expired sessions left: {live['expired_left']}; server log: {tally(live['server_log'])}"
        f"; failed requests in all phases: {live['errors_all_phases']}.",
        *_common.targets(verdicts),
    ]
    return lines, {"built": built, "purges": runs, "live": live, "verdicts": verdicts}


if __name__ == "__main__":
    children = {"--child-build": child_build, "--child-purge": child_purge}
    options = [("--database-url", "a PostgreSQL server (postgres://postgres@127.0.0.1:5432): also there, scratch db")]
    sys.exit(_common.main("purge", "Purge at scale", PACKAGES, run, children, options))
