#!/usr/bin/env python3
"""Purge at scale: how fast expired sessions go, and what a purge does to live turns.

1. A temporary SQLite database (migrated) gets N expired sessions x 14 events
   of ~1 KB each by raw SQL bulk insert. Copies of that file are purged with
   `sessions_app.retention.purge_expired()` in a fresh process each: once with
   secure_delete ON (as in production), once with it OFF (patched as
   tests/test_erasure_e2e.py::_switch_off does). Sessions/s and the ratio;
   afterwards the file is scanned for a marker every event carried (ON: gone).
2. On another copy, gunicorn (the command line of `manage.py serve`, without
   the scheduler, whose start-up purge would take the expired sessions
   first) serves a few closed-loop clients (create -> 3 turns -> read ->
   delete). Turn latency is measured first without a purge, then while
   `manage.py purge_sessions` deletes the N expired sessions in another
   process with the same DATABASE_URL and the default PURGE_BATCH_SIZE /
   PURGE_BATCH_PAUSE_SECONDS (config/settings.py).

    .venv/bin/python benchmarks/purge_bench.py            # N = 10,000 (~1.5 min)
    .venv/bin/python benchmarks/purge_bench.py --quick    # N = 2,000
    .venv/bin/python benchmarks/purge_bench.py --sweep    # + batch size / pause choices (~8 min)

Writes benchmarks/results/purge.md and purge.json. Loopback only; every
phase is bounded in count and time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import closing
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import _common  # noqa: E402
import loadgen  # noqa: E402
from loadgen import ROOT, fmt  # noqa: E402

PY = sys.executable
# Batch size / pause choices --sweep compares (the first is the pre-benchmark default).
SWEEP = ((200, 0.02), (100, 0.05), (50, 0.05), (50, 0.1))
EVENTS_PER_SESSION = 14
EVENT_BYTES = 1000
MARKER = "PurgeBenchMarker"
APP_NAME = "resume_agent"


# --------------------------------------------------------------------------- building the database


def build_database(path: Path, sessions: int, seed: int = 7) -> dict:
    """Migrates a fresh file, then bulk-inserts expired sessions with their events (raw SQL)."""
    env = loadgen.clean_env(DATABASE_URL=f"sqlite:///{path}")
    subprocess.run([PY, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True, timeout=120)
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,"
    # A pool of ~1 KB bodies, so building stays fast and each stored event is still a different row.
    pool = ["".join(rng.choice(alphabet) for _ in range(EVENT_BYTES - 120)) for _ in range(64)]
    old = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=3)
    old_text = old.isoformat(" ")
    started = time.monotonic()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA secure_delete=ON")
    conn.execute("PRAGMA journal_mode=DELETE")
    with conn:  # one transaction
        conn.executemany(
            "INSERT INTO sessions_app_agentsession (id, app_name, user_id, session_id, state, created_at, updated_at,"
            " revision, turn_started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)",
            (
                (i, APP_NAME, f"anon-{i:08d}", f"expired-{i:08d}", '{"resume_text": "fictional", "plan_versions": []}',
                 old_text, old_text, EVENTS_PER_SESSION)
                for i in range(1, sessions + 1)
            ),
        )
        conn.executemany(
            "INSERT INTO sessions_app_sessionevent (session_id, seq, event_id, invocation_id, author, timestamp,"
            " event_data) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                (i, j + 1, f"ev-{i}-{j}", f"inv-{i}", "user" if j % 7 == 0 else "resume_agent", old.timestamp() + j,
                 json.dumps({"id": f"ev-{i}-{j}", "marker": MARKER, "text": pool[(i * 31 + j) % len(pool)]}))
                for i in range(1, sessions + 1)
                for j in range(EVENTS_PER_SESSION)
            ),
        )
    events = conn.execute("SELECT COUNT(*), AVG(LENGTH(event_data)) FROM sessions_app_sessionevent").fetchone()
    conn.close()
    return {
        "sessions": sessions,
        "events": events[0],
        "avg_event_bytes": round(events[1]),
        "file_mb": round(path.stat().st_size / 2**20, 1),
        "build_s": round(time.monotonic() - started, 2),
    }


def count_marker(path: Path) -> int:
    return path.read_bytes().count(MARKER.encode())


# --------------------------------------------------------------------------- purge in a child process


def child_purge(db: str, secure_delete: str, batch_size: int | None, pause: float | None) -> None:
    """Runs in a fresh process: one purge_expired() of `db`; prints a JSON line."""
    if pause is not None:
        os.environ["PURGE_BATCH_PAUSE_SECONDS"] = str(pause)
    _common.setup_django(Path(db))  # migrate is a no-op on the copy
    from django.conf import settings
    from django.db import connection

    from sessions_app import sqlite as project_sqlite
    from sessions_app.retention import purge_expired

    if secure_delete == "off":
        # As tests/test_erasure_e2e.py::_switch_off: every new connection gets
        # secure_delete=OFF and the fail-closed check is told it is fine.
        others = tuple(p for p in project_sqlite.CONNECTION_PRAGMAS if "secure_delete" not in p)
        project_sqlite.CONNECTION_PRAGMAS = others + ("PRAGMA secure_delete=OFF",)
        project_sqlite.secure_delete_enabled = lambda connection: True
    connection.close()  # the next connection gets the pragmas above
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA secure_delete")
        effective = cursor.fetchone()[0]
    result = purge_expired(batch_size=batch_size)
    print(json.dumps({"secure_delete_pragma": effective, "batch_size": batch_size or settings.PURGE_BATCH_SIZE,
                      "pause": settings.PURGE_BATCH_PAUSE_SECONDS, **result.as_dict()}))


def timed_purge(db: Path, secure_delete: str, batch_size: int | None = None, pause: float | None = None) -> dict:
    """purge_expired() of a copy in a fresh process; `batch_size` / `pause` override the settings."""
    command = [PY, str(Path(__file__).resolve()), "--child-purge", str(db), "--secure-delete", secure_delete]
    if batch_size:
        command += ["--batch-size", str(batch_size)]
    if pause is not None:
        command += ["--pause", str(pause)]
    out = subprocess.run(command, cwd=ROOT, env=loadgen.clean_env(), capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"purge child failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["sessions_per_s"] = result["sessions"] / result["seconds"] if result["seconds"] else float("nan")
    working = result["seconds"] - result["batches"] * result["pause"]  # without the pauses between batches
    result["sessions_per_working_s"] = result["sessions"] / working if working > 0 else float("nan")
    result["marker_hits_after"] = count_marker(db)
    return result


# --------------------------------------------------------------------------- live turns during a purge


def live_turns_during_purge(db: Path, clients: int, warmup: float, baseline: float, purge_timeout: float,
                            tmp: Path, extra_env: dict | None = None) -> dict:
    from sessions_app.management.commands.serve import gunicorn_command

    env = loadgen.clean_env(DATABASE_URL=f"sqlite:///{db}", SESSION_CREATE_RATE="1000000/hour",
                            **loadgen.UNTHROTTLED,
                            DJANGO_CACHE_DIR=str(tmp / "cache"), **(extra_env or {}))
    port = loadgen.free_port()
    log_path = tmp / "gunicorn.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen(gunicorn_command(PY, f"{loadgen.LOOPBACK}:{port}"), cwd=ROOT, env=env,
                                  stdout=log, stderr=subprocess.STDOUT)
    base = f"http://{loadgen.LOOPBACK}:{port}"
    descendants: list[int] = []
    purge = None
    try:
        loadgen.wait_http(f"{base}/api/schema/", 60, server)
        descendants = loadgen.process_tree(server.pid)[1:]
        target = loadgen.OursTarget(base)
        stop, started = threading.Event(), threading.Event()
        holder: dict = {}
        total_budget = baseline + purge_timeout + 10

        def load():
            holder["result"] = loadgen.run_load(target, clients, warmup, total_budget, stop=stop, started=started)

        thread = threading.Thread(target=load, daemon=True)
        thread.start()
        started.wait(30)
        time.sleep(warmup)
        cpu_baseline = _CpuWindow(server.pid)
        time.sleep(baseline)
        cpu_baseline.stop()
        t_baseline_end = time.monotonic()
        purge_log = tmp / "purge.log"
        with open(purge_log, "wb") as plog:
            purge = subprocess.Popen([PY, "manage.py", "purge_sessions"], cwd=ROOT, env=env, stdout=plog,
                                     stderr=subprocess.STDOUT)
        # The window starts when the purge process opens the database (its
        # system checks do, just before the purge): not while Python starts.
        t_spawn = time.monotonic()
        deadline = t_spawn + purge_timeout
        while purge.poll() is None and time.monotonic() < deadline and not _has_open(purge.pid, db):
            time.sleep(0.02)
        t_purge = time.monotonic() if purge.poll() is None else t_spawn
        cpu_purge = _CpuWindow(server.pid, purge.pid)
        while purge.poll() is None and time.monotonic() < deadline:
            cpu_purge.sample()
            time.sleep(0.05)
        if purge.poll() is None:
            loadgen.stop_process(purge, signal.SIGTERM, timeout=10)
        cpu_purge.stop()
        t_purge_end = time.monotonic()
        time.sleep(1.0)
        stop.set()
        thread.join(timeout=120)
        result: loadgen.LoadResult = holder["result"]
        purge_output = purge_log.read_text(errors="replace").strip().splitlines()
        with closing(sqlite3.connect(db, timeout=30)) as conn:
            left = conn.execute(
                "SELECT COUNT(*) FROM sessions_app_agentsession WHERE session_id LIKE 'expired-%'").fetchone()[0]
    finally:
        if purge is not None and purge.poll() is None:
            loadgen.stop_process(purge, signal.SIGTERM, timeout=10)
        loadgen.stop_process(server, signal.SIGTERM, timeout=30)
        loadgen.kill_pids([p for p in descendants if Path(f"/proc/{p}").exists()])

    def window(t0, t1, cpu):
        ops = [op for op in result.ops if t0 <= op.started and op.ended <= t1]
        turns = [op.ended - op.started for op in ops if op.kind == "turn" and op.ok]
        errors = [f"{op.kind}: {op.error}" for op in ops if not op.ok]
        return {"seconds": round(t1 - t0, 2), "turns": len(turns), "turns_per_s": len(turns) / (t1 - t0),
                "turn_ms": loadgen.summarize_ms(turns), "errors": errors, "cores": cpu.result}

    log_text = log_path.read_text(errors="replace")
    return {
        "clients": clients,
        "baseline": window(result.t_measure, t_baseline_end, cpu_baseline),
        "during_purge": window(t_purge, t_purge_end, cpu_purge),
        "purge_returncode": purge.returncode,
        "purge_output_tail": purge_output[-1:] if purge_output else [],
        "expired_left": left,
        "errors_all_phases": sum(1 for op in result.ops if not op.ok),
        "server_log": {"database is locked": log_text.count("database is locked"),
                       "Traceback": log_text.count("Traceback")},
    }


def _has_open(pid: int, path: Path) -> bool:
    target = str(path.resolve())
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    return True
            except OSError:
                continue
    except OSError:
        pass
    return False


class _CpuWindow:
    """Cores used over a window: the server tree, the purge process, and everything else on the machine."""

    def __init__(self, server_pid: int, purge_pid: int | None = None):
        self.server_pid, self.purge_pid = server_pid, purge_pid
        self.machine = loadgen.MachineCpu()
        self.server0 = loadgen.tree_cpu_seconds(server_pid)
        self.purge_cpu = 0.0

    def sample(self) -> None:
        if self.purge_pid:  # read while it lives: its counters go when it exits
            self.purge_cpu = max(self.purge_cpu, loadgen.cpu_seconds(self.purge_pid))

    def stop(self) -> None:
        self.sample()
        m = self.machine.stop()
        server = loadgen.tree_cpu_seconds(self.server_pid) - self.server0
        wall = m["wall_s"]
        self.result = {
            "server": round(server / wall, 2),
            "purge": round(self.purge_cpu / wall, 2),
            "load_generator": round(m["loadgen_cores"], 2),
            "other_processes": round(max(0.0, m["busy_cores"] - m["loadgen_cores"] - (server + self.purge_cpu) / wall), 2),
            "steal": round(m["steal_cores"], 2),
        }


# --------------------------------------------------------------------------- report


def render(env_info, params, built, on, off, live, sweep, verdicts, elapsed, sweep_run=None) -> str:
    lines = _common.header_lines(params["command"], env_info)
    title = "Purge at scale" + (" -- QUICK RUN" if params["quick"] else "")
    lines = [f"## {title}", ""] + lines + [""]
    d = {"PURGE_BATCH_SIZE": on["batch_size"], "PURGE_BATCH_PAUSE_SECONDS": on["pause"]}
    lines += [
        f"Database: {built['sessions']:,} expired sessions x {EVENTS_PER_SESSION} events"
        f" ({built['events']:,} events, ~{built['avg_event_bytes']} bytes each, file {built['file_mb']} MB,"
        f" built by raw SQL in {built['build_s']} s). Settings in effect: PURGE_BATCH_SIZE={d['PURGE_BATCH_SIZE']},"
        f" PURGE_BATCH_PAUSE_SECONDS={d['PURGE_BATCH_PAUSE_SECONDS']}.",
        "",
        "### purge_expired() alone (a fresh process per run, nothing else writing)",
        "",
        "| secure_delete | sessions | events | batches | seconds | sessions/s | sessions/s without the pauses"
        " | marker left in file |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, r in (("ON (production)", on), ("OFF (control)", off)):
        lines.append(f"| {label} (PRAGMA={r['secure_delete_pragma']}) | {r['sessions']:,} | {r['events']:,} |"
                     f" {r['batches']} | {r['seconds']:.2f} | {r['sessions_per_s']:,.0f} |"
                     f" {r['sessions_per_working_s']:,.0f} | {r['marker_hits_after']:,} |")
    ratio = on["seconds"] / off["seconds"] if off["seconds"] else float("nan")
    work_on, work_off = (r["seconds"] - r["batches"] * r["pause"] for r in (on, off))
    lines += ["", f"secure_delete ON takes {ratio:.2f}x the time of OFF ({work_on / work_off:.2f}x without the"
              f" pauses): {on['sessions_per_s']:,.0f} vs {off['sessions_per_s']:,.0f} sessions/s. `seconds` is"
              " purge_expired()'s own figure and includes the pause after each batch; the marker column counts"
              " a string every event carried, in the raw bytes of the file after the purge.", ""]
    if sweep:
        carried = sweep_run and sweep_run["date_utc"] != env_info["date_utc"]
        lines += ["### Batch size and pause (--sweep; secure_delete ON)", "",
                  (f"Carried over from an earlier run: `{sweep_run['command']}` on {sweep_run['date_utc']}"
                   f" ({sweep_run['sessions']:,} sessions)." if carried else
                   f"{params['clients']} closed-loop clients in the live columns; the first row was the default"
                   " before this benchmark."), "",
                  "| batch size | pause s | purge alone: seconds | sessions/s | live: turn p99 without / during"
                  " purge ms | ratio | purge seconds under load | cores during purge: server / purge |",
                  "| ---: | ---: | ---: | ---: | --- | ---: | ---: | --- |"]
        for r in sweep:
            lv = r["live"]
            lines.append(f"| {r['batch_size']} | {r['pause']} | {r['seconds']:.2f} | {r['sessions_per_s']:,.0f} |"
                         f" {fmt(lv['baseline']['turn_ms']['p99'], 0)} / {fmt(lv['during_purge']['turn_ms']['p99'], 0)}"
                         f" | {_p99_ratio(lv):.2f} | {lv['during_purge']['seconds']} |"
                         f" {lv['during_purge']['cores']['server']} / {lv['during_purge']['cores']['purge']} |")
        lines.append("")
    b, p = live["baseline"], live["during_purge"]
    lines += [
        f"### Live turns while `manage.py purge_sessions` runs ({live['clients']} closed-loop clients)",
        "",
        f"gunicorn as `manage.py serve` starts it (`{params['server']}`), on a copy of the same database;"
        " each client repeats create -> 3 turns -> read -> delete. The purge runs in its own process.",
        "",
        "| window | seconds | turns | turns/s | turn p50 ms | p95 ms | p99 ms | max ms | errors"
        " | cores: server / purge / load gen / other processes |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for label, w in (("without purge", b), ("during purge", p)):
        t, c = w["turn_ms"], w["cores"]
        lines.append(f"| {label} | {w['seconds']} | {w['turns']} | {w['turns_per_s']:.1f} | {fmt(t['p50'], 0)} |"
                     f" {fmt(t['p95'], 0)} | {fmt(t['p99'], 0)} | {fmt(t['max'], 0)} | {len(w['errors'])} |"
                     f" {c['server']} / {c['purge']} / {c['load_generator']} / {c['other_processes']} |")
    lines += ["", f"Purge process: exit {live['purge_returncode']}, `{' '.join(live['purge_output_tail'])}`;"
              f" expired sessions left: {live['expired_left']}; server log: `database is locked`"
              f" x{live['server_log']['database is locked']}, `Traceback` x{live['server_log']['Traceback']};"
              f" failed requests in all phases: {live['errors_all_phases']}.", "", "### Targets", ""]
    lines += [f"- {v}" for v in verdicts]
    lines += ["", f"Total run time: {elapsed:.0f} s."]
    return "\n".join(lines) + "\n"


def _earlier_sweep() -> tuple[list, dict | None]:
    """The --sweep table of the last results file, if it has one (a plain run keeps it, labelled)."""
    try:
        data = json.loads((_common.RESULTS_DIR / "purge.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [], None
    return (data.get("sweep") or [], data.get("sweep_run")) if data.get("sweep_run") else ([], None)


def _p99_ratio(live: dict) -> float:
    b, p = live["baseline"]["turn_ms"]["p99"], live["during_purge"]["turn_ms"]["p99"]
    return p / b if b else float("nan")


def judge(on, live, off=None) -> list[str]:
    out = [f"{'MET' if on['sessions_per_s'] >= 1000 else 'MISSED'}: >= 1,000 sessions/s purged with secure_delete"
           f" on: {on['sessions_per_s']:,.0f} sessions/s"]
    if on["sessions_per_s"] < 1000 and on["sessions_per_working_s"] < 1000:
        detail = f"; secure_delete OFF is only {on['seconds'] / off['seconds']:.2f}x faster" if off else ""
        out[-1] += (f" (without the pauses between batches still {on['sessions_per_working_s']:,.0f}/s{detail}:"
                    " the time goes into the per-session work of each batch, not into the pauses or the overwriting)")
    b, p = live["baseline"]["turn_ms"]["p99"], live["during_purge"]["turn_ms"]["p99"]
    ratio = p / b if b else float("nan")
    out.append(f"{'MET' if ratio <= 2 else 'MISSED'}: turn p99 during the purge <= 2x without it:"
               f" {p:.0f} ms vs {b:.0f} ms = {ratio:.2f}x")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 sessions and shorter windows")
    parser.add_argument("--sessions", type=int, help="expired sessions to build (default 10,000; quick 2,000)")
    parser.add_argument("--clients", type=int, default=4, help="closed-loop clients in the live phase")
    parser.add_argument("--baseline", type=float, help="seconds of turns without a purge (default 20; quick 8)")
    parser.add_argument("--sweep", action="store_true",
                        help="also compare batch sizes and pauses, alone and under live load (~6 min more);"
                        " later runs without --sweep carry its table over, labelled with its date")
    parser.add_argument("--child-purge", help=argparse.SUPPRESS)
    parser.add_argument("--secure-delete", choices=("on", "off"), default="on", help=argparse.SUPPRESS)
    parser.add_argument("--batch-size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--pause", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_purge:
        child_purge(args.child_purge, args.secure_delete, args.batch_size, args.pause)
        return 0
    sessions = args.sessions or (2000 if args.quick else 10000)
    baseline = args.baseline or (8 if args.quick else 20)
    if sessions > 50000 or baseline > 120 or args.clients > 16:
        parser.error("bounded runs only: sessions <= 50,000, baseline <= 120 s, clients <= 16")

    from sessions_app.management.commands.serve import gunicorn_command

    started = time.monotonic()
    info = _common.machine_info(["Django", "django-q2", "google-adk", "gunicorn", "httpx"])
    params = {"command": _common.command_line(argv), "quick": args.quick, "sessions": sessions,
              "clients": args.clients, "baseline_s": baseline,
              "server": " ".join(gunicorn_command("python", "127.0.0.1:PORT")[1:])}
    with tempfile.TemporaryDirectory(prefix="purge-bench-") as tmp_name:
        tmp = Path(tmp_name)
        template = tmp / "template.db"
        print(f"building {sessions:,} expired sessions ...", flush=True)
        built = build_database(template, sessions)
        print(f"  {built}", flush=True)

        def copy(name: str) -> Path:
            path = tmp / name
            shutil.copyfile(template, path)
            return path

        on = timed_purge(copy("on.db"), "on")
        print(f"  secure_delete ON: {on['sessions_per_s']:,.0f} sessions/s ({on['seconds']:.2f} s)", flush=True)
        (tmp / "on.db").unlink()
        off = timed_purge(copy("off.db"), "off")
        print(f"  secure_delete OFF: {off['sessions_per_s']:,.0f} sessions/s ({off['seconds']:.2f} s)", flush=True)
        (tmp / "off.db").unlink()
        sweep = []
        if args.sweep:
            # Each choice: the purge alone, then live turns during a purge run with that choice.
            for batch_size, pause in SWEEP:
                r = timed_purge(copy("sweep.db"), "on", batch_size=batch_size, pause=pause)
                (tmp / "sweep.db").unlink()
                sub = tmp / f"sweep-{batch_size}-{pause}"
                sub.mkdir()
                live_r = live_turns_during_purge(
                    copy("sweep-live.db"), args.clients, warmup=3, baseline=min(baseline, 12),
                    purge_timeout=max(60.0, sessions / 100), tmp=sub,
                    extra_env={"PURGE_BATCH_SIZE": str(batch_size), "PURGE_BATCH_PAUSE_SECONDS": str(pause)})
                (tmp / "sweep-live.db").unlink()
                r["live"] = live_r
                sweep.append(r)
                print(f"  sweep batch {batch_size} pause {pause}: {r['sessions_per_s']:,.0f} sessions/s alone;"
                      f" turn p99 {_p99_ratio(live_r):.2f}x during a purge", flush=True)
        print("live turns without / during a purge ...", flush=True)
        live = live_turns_during_purge(copy("live.db"), args.clients, warmup=3, baseline=baseline,
                                       purge_timeout=max(60.0, sessions / 100), tmp=tmp)
        print(f"  without: p99 {live['baseline']['turn_ms']['p99']:.0f} ms; during: p99"
              f" {live['during_purge']['turn_ms']['p99']:.0f} ms ({live['during_purge']['seconds']} s)", flush=True)
    verdicts = judge(on, live, off)
    elapsed = time.monotonic() - started
    if sweep:
        sweep_run = {"date_utc": info["date_utc"], "command": params["command"], "sessions": sessions}
    else:
        sweep, sweep_run = _earlier_sweep()
    markdown = render(info, params, built, on, off, live, sweep, verdicts, elapsed, sweep_run)
    md, js = _common.write_results("purge", markdown, {
        "environment": info, "params": params, "built": built, "secure_delete_on": on, "secure_delete_off": off,
        "sweep": sweep, "sweep_run": sweep_run, "live": live, "verdicts": verdicts, "elapsed_s": round(elapsed, 1)})
    print(markdown)
    print(f"wrote {md.relative_to(ROOT)} and {js.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
