#!/usr/bin/env python3
"""The service on PostgreSQL (and Redis): is our session store faster than ADK's DatabaseSessionService on
the same server, what do one and two web servers carry, and how fast does the purge go while one serves?

Reuses the other benchmarks' workloads and measurements (store_bench, loadgen, purge_bench) on fresh
databases of its own on the local PostgreSQL (dropped at the end) and Redis database 14 (flushed).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import redis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common, loadgen, purge_bench, store_bench  # noqa: E402

PY = sys.executable
PG_SERVER = "postgres@127.0.0.1:5432"  # trust authentication, on this machine
REDIS_URL = "redis://127.0.0.1:6379/14"  # the test suite uses 15 (tests/backends.py)
DATABASES = {"store": "bench_store", "adk": "bench_adk", "service": "bench_service", "purge": "bench_purge"}
STORE_BASELINE = "adk_postgres"
STORE_TARGET = 0.7  # ours / ADK time over the whole lifecycle
PACKAGES = ["Django", "google-adk", "SQLAlchemy", "asyncpg", "psycopg", "redis", "gunicorn", "django-q2", "httpx"]


# --- PostgreSQL and Redis ---------------------------------------------------------------------


def pg_url(database: str, scheme: str = "postgres") -> str:
    return f"{scheme}://{PG_SERVER}/{database}"


def admin() -> psycopg.Connection:
    """The maintenance database, outside transactions (CREATE and DROP DATABASE need that)."""
    return psycopg.connect(pg_url("postgres"), autocommit=True)


def drop_database(name: str) -> None:
    with admin() as conn:  # FORCE: a connection left open (a pool, a killed server's) must not keep it
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def fresh_database(name: str, stack: contextlib.ExitStack) -> str:
    """An empty database `name` (one of DATABASES, ours alone), dropped when `stack` closes; its URL."""
    stack.callback(drop_database, name)
    drop_database(name)
    with admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return pg_url(name)


def migrated_database(name: str, env: dict, stack: contextlib.ExitStack) -> None:
    """A fresh database migrated by `manage.py migrate` in `env` (whose DATABASE_URL names it)."""
    fresh_database(name, stack)
    migrate = [PY, "manage.py", "migrate", "--noinput", "-v0"]
    subprocess.run(migrate, cwd=_common.ROOT_DIR, env=env, check=True, timeout=120)


def flush_redis() -> None:
    redis.Redis.from_url(REDIS_URL).flushdb()  # the rate-limit counters of the previous run


def server_env(database: str, var_dir: Path) -> dict:
    """One server's environment: the shared database and Redis, a var/ of its own, the throttles lifted."""
    return loadgen.clean_env(
        DATABASE_URL=pg_url(database), CACHE_URL=REDIS_URL, DJANGO_VAR_DIR=str(var_dir), **loadgen.UNTHROTTLED
    )


def postgres_pid() -> int | None:
    """The PostgreSQL server's main process, if it runs here: its CPU, with its reaped backends', is the
    database's (it forks a backend per connection, and our servers connect per request)."""
    with admin() as conn:
        data_directory = conn.execute("SHOW data_directory").fetchone()[0]
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int((Path(data_directory) / "postmaster.pid").read_text().split()[0])
    return None


def postgres_cpu_seconds(pid: int | None) -> float:
    return loadgen.tree_cpu_seconds(pid, reaped=True) if pid else math.nan


# --- 1. The session store --------------------------------------------------------------------


def in_one_loop(func):
    """Runs the sync `func` in a worker thread under one event loop, so every async_to_sync inside it
    awaits on that loop. A bare async_to_sync (store_bench's) makes a new loop per call, and asyncpg's
    pooled connections (ADK's DatabaseSessionService) work only on the loop that opened them."""
    from asgiref.sync import sync_to_async

    async def outer():
        return await sync_to_async(func)()

    return asyncio.run(outer())


BENCH_EVENT_TEXT = (
    "請把「港灣物流」那段經歷改寫成三個有具體數字的重點，並保留資料管線遷移的成果。"
    "Rewrite the Harbor Logistics role as three bullet points with measurable outcomes, "
    "keeping the data pipeline migration and the forecast accuracy improvement. "
)


def _without_test_markers(text: str) -> str:
    markers = json.loads((_common.FIXTURES / "markers.json").read_text("utf-8"))
    for marker in markers:
        text = text.replace(marker, "港灣物流" if any(ord(c) > 0x2E80 for c in marker) else "Harbor Logistics")
    return text


def store_part(params: dict) -> dict:
    """store_bench's lifecycles (workload, seeding, warm-up, measure, summarise) on PostgreSQL."""
    from asgiref.sync import async_to_sync
    from django.db import connections
    from google.adk.sessions import DatabaseSessionService, InMemorySessionService

    from sessions_app.security.crypto import token_context
    from sessions_app.storage.adk_service import DjangoSessionService

    # ADK's service stores text in clear, and PostgreSQL's WAL is shared by all its databases:
    # the tests scan that WAL for their fixture's markers (tests/conftest.py, stored_files), so
    # nothing of theirs may be written here. Same sizes, other (fictional) words.
    workload = store_bench.Workload(resume=_without_test_markers(_common.RESUME), event_text=BENCH_EVENT_TEXT)

    def body() -> dict:
        services = {
            "ours": DjangoSessionService(),
            STORE_BASELINE: DatabaseSessionService(pg_url(DATABASES["adk"], scheme="postgresql+asyncpg")),
            "in_memory": InMemorySessionService(),
        }
        try:
            with token_context(store_bench.BENCH_TOKEN):  # as store_bench.run: the API's token for a request
                for service in services.values():  # background sessions and a warm-up lifecycle, not timed
                    async_to_sync(store_bench.seed)(service, workload, params["background"])
                    async_to_sync(store_bench.lifecycle)(service, workload)
                gc.collect()
                return store_bench.measure(services, workload, params["reps"], params["lifecycles"])
        finally:
            async_to_sync(services[STORE_BASELINE].close)()
            connections.close_all()  # this thread's: ours ran here

    raw = in_one_loop(body)
    connections.close_all()  # this thread's, from migrate
    summary = store_bench.summarise(raw, baseline=STORE_BASELINE)
    return {"params": params, "workload": workload.sizes(), "summary": summary, "raw": raw}


def store_lines(store: dict) -> list[str]:
    summary, p = store["summary"], store["params"]
    ours, base = summary["ours"]["lifecycle"], summary[STORE_BASELINE]["lifecycle"]
    rows = [
        [store_bench.OPS.get(op, "**whole lifecycle**")]
        + [f"{_common.fmt_ms(s[op]['median_s'])} ({s[op]['ratio']:.2f}×)" for s in summary.values()]
        for op in (*store_bench.OPS, "lifecycle")
    ]
    return [
        "### 1. Session store: ours vs ADK's DatabaseSessionService, both on PostgreSQL",
        "",
        "store_bench.py's workload and measurement (create with 3 KB state, 14 × append_event, get_session, list,"
        f" delete; {p['reps']} repetitions × {p['lifecycles']} lifecycles per service, services taking turns,"
        f" {p['background']} background sessions each), ours sealing under a token as the API does."
        f" Ours: DjangoSessionService on database `{DATABASES['store']}` (psycopg); {STORE_BASELINE}:"
        f" `DatabaseSessionService('postgresql+asyncpg://…/{DATABASES['adk']}')`, same server. Every lifecycle"
        " is awaited in async_to_sync, all on one event loop (asyncpg's pooled connections belong to the loop"
        " that opened them), so each service keeps its connections across lifecycles.",
        "",
        f"**Whole lifecycle, ours / ADK DatabaseSessionService (time) = {ours['ratio']:.2f}**"
        f" ({_common.fmt_ms(ours['median_s'])} ms vs {_common.fmt_ms(base['median_s'])} ms).",
        "",
        *_common.md_table(" | ".join(["operation (ms, ratio to adk_postgres)", *summary]), rows),
    ]


# --- 2. The service: one and two servers -------------------------------------------------------


def start_cluster(env: dict, log_path: Path) -> subprocess.Popen:
    """One django-q2 cluster (`manage.py qcluster`, as `manage.py serve` starts it), once it runs."""
    with open(log_path, "wb") as log:
        command = [PY, "manage.py", "qcluster"]
        process = subprocess.Popen(command, cwd=_common.ROOT_DIR, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while b"running." not in log_path.read_bytes():
        if process.poll() is not None or time.monotonic() > deadline:
            loadgen.stop_server(process)
            raise RuntimeError(f"qcluster did not start: see {log_path}")
        time.sleep(0.2)
    return process


def start_deployment(servers: int, tmp: Path, stack: contextlib.ExitStack) -> tuple[list[int], list[str], list]:
    """`servers` gunicorns (each its own var/, one database, one Redis) and one qcluster, all stopped
    when `stack` closes: their pids, the servers' base URLs and their log files."""
    from sessions_app.infra.supervisor import gunicorn_command

    envs = [server_env(DATABASES["service"], tmp / f"web{i}") for i in range(servers)]
    migrated_database(DATABASES["service"], envs[0], stack)
    flush_redis()
    pids, urls, logs = [], [], [tmp / f"web{i}.log" for i in range(servers)] + [tmp / "qcluster.log"]
    for env, log in zip(envs, logs[:-1], strict=True):
        bind = f"{loadgen.LOOPBACK}:{loadgen.free_port()}"
        process, target = loadgen.start_ours(gunicorn_command(PY, bind), bind, env, log)
        stack.callback(loadgen.stop_server, process, signal.SIGTERM)
        pids.append(process.pid)
        urls.append(target.base_url)
    cluster = start_cluster(envs[0], logs[-1])  # beside the first server, on its var/ (as `manage.py serve`)
    stack.callback(loadgen.stop_server, cluster)  # SIGINT: how qcluster stops cleanly (serve.py)
    return [*pids, cluster.pid], urls, logs


def load_run(pids: list[int], urls: list[str], clients: int, params: dict, pg_pid: int | None) -> dict:
    """loadgen's clients spread over `urls`; the CPU of every process of the deployment, and PostgreSQL's."""

    def servers_cpu() -> float:
        return sum(loadgen.tree_cpu_seconds(pid) for pid in pids)

    cpu, pg_cpu, machine = servers_cpu(), postgres_cpu_seconds(pg_pid), loadgen.MachineCpu()
    result = loadgen.run_load(loadgen.OursTarget(urls[0]), clients, params["warmup"], params["duration"], urls=urls)
    cpu, pg_cpu = servers_cpu() - cpu, postgres_cpu_seconds(pg_pid) - pg_cpu
    m = machine.stop(cpu, 0.0 if math.isnan(pg_cpu) else pg_cpu)
    turns = sum(1 for op in result.ops if op.kind == "turn" and op.ok)  # as service_bench: the whole run
    per_turn = (lambda s: 1000 * s / turns) if turns else (lambda s: math.nan)
    cores = {"servers": m["server_cores"][0], "postgres": m["server_cores"][1]}
    cores |= {"loadgen": m["loadgen_cores"], "other": m["other_cores"], "steal": m["steal_cores"]}
    summary = result.summary() | {"servers": len(urls), "cpu_seconds": cpu, "postgres_cpu_seconds": pg_cpu}
    summary |= {"cpu_ms_per_turn": per_turn(cpu), "postgres_cpu_ms_per_turn": per_turn(pg_cpu), "cores": cores}
    print(
        f"  {len(urls)} server(s), {clients} clients: {summary['turns_per_s']:.1f} turns/s, errors"
        f" {summary['errors_all_phases']}, {summary['cpu_ms_per_turn']:.0f} ms CPU/turn"
    )
    return summary


def service_part(params: dict, tmp: Path) -> dict:
    from sessions_app.infra.supervisor import gunicorn_command

    params["server"] = " ".join(gunicorn_command("python", "127.0.0.1:PORT")[1:])
    pg_pid, runs, logs = postgres_pid(), [], {}
    for servers in params["servers"]:
        print(f"starting {servers} server(s) and a qcluster ...", flush=True)
        folder = tmp / f"servers-{servers}"
        folder.mkdir()
        with contextlib.ExitStack() as stack:  # a fresh database per deployment, dropped after it
            pids, urls, log_paths = start_deployment(servers, folder, stack)
            runs += [load_run(pids, urls, clients, params, pg_pid) for clients in params["clients"]]
        logs[servers] = {path.name: loadgen.log_counts(path) for path in log_paths}
    return {"params": params, "runs": runs, "logs": logs, "postgres_pid_found": pg_pid is not None}


def service_lines(service: dict) -> list[str]:
    p, runs = service["params"], service["runs"]
    rows = [
        [r["servers"], r["clients"], _common.fmt(r["turns_per_s"])]
        + [_common.fmt(r["latency_ms"]["turn"][q], 0) for q in ("p50", "p99")]
        + [r["errors_all_phases"], _common.fmt(r["cpu_ms_per_turn"], 0), _common.fmt(r["postgres_cpu_ms_per_turn"], 0)]
        + [" / ".join(f"{r['cores'][k]:.2f}" for k in ("servers", "postgres", "loadgen", "other"))]
        for r in runs
    ]
    lines = [
        "### 2. The service on PostgreSQL + Redis: one and two servers",
        "",
        f"Each server: `{p['server']}` with a var/ of its own, the same secret key, database"
        f" `{DATABASES['service']}` (fresh for each deployment) and Redis `{REDIS_URL}`; one `manage.py qcluster`"
        " beside them; offline model, throttles lifted. loadgen's closed-loop clients (create -> 3 turns ->"
        f" read -> delete), spread evenly over the servers; {p['warmup']} s warm-up, {p['duration']} s measured.",
        "",
        *_common.md_table(
            "servers | clients | turns/s | turn p50 ms | turn p99 ms | errors | server CPU ms/turn"
            " | PostgreSQL CPU ms/turn | cores: servers / PostgreSQL / load gen / other",
            rows,
        ),
        "",
        "Errors: every failed request of the run, warm-up included. Server CPU: every gunicorn's and the"
        " qcluster's whole process tree over the run / successful turns (create, read and delete included)."
        " PostgreSQL CPU: its server process with every backend it forked, for all its databases (so any"
        " other work on it too). Cores: average over the run; 'other' is everything else on the machine.",
        "",
        *scaling_sentences(runs),
        "",
    ]
    for servers, logs in service["logs"].items():
        counts = "; ".join(f"{name}: " + ", ".join(f"`{k}` x{v}" for k, v in c.items()) for name, c in logs.items())
        lines.append(f"- Logs with {servers} server(s): {counts}")
    return lines


def scaling_sentences(runs: list[dict]) -> list[str]:
    """Why two servers on this machine cannot scale, and what a second machine would give, from the figures."""
    most = max(r["clients"] for r in runs)
    one, two = ({(r["servers"], r["clients"]): r for r in runs}[(servers, most)] for servers in (1, 2))
    busy = sum(one["cores"][k] for k in ("servers", "postgres", "loadgen", "other"))
    server_ms, pg_ms = one["cpu_ms_per_turn"], one["postgres_cpu_ms_per_turn"]
    cores = os.cpu_count()
    return [
        f"On this {cores}-core machine a second server adds processes, not CPU: at {one['clients']} clients one"
        f" server already keeps {busy:.1f} of the {cores} cores busy (servers {one['cores']['servers']:.2f},"
        f" PostgreSQL {one['cores']['postgres']:.2f}, load generator {one['cores']['loadgen']:.2f}), so two servers"
        f" carry {_ratio(two['turns_per_s'], one['turns_per_s']):.2f}x the turns/s of one, on the same cores."
        f" Each turn costs about {server_ms:.0f} ms of server CPU and {pg_ms:.0f} ms in PostgreSQL, so a second"
        f" {cores}-core machine running only a server would add up to about {_ratio(cores * 1000, server_ms):.0f}"
        f" turns/s, as long as PostgreSQL keeps up (about {_ratio(1000, pg_ms):.0f} turns/s per core it is given)."
    ]


def _ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


# --- 3. The purge -----------------------------------------------------------------------------


def build_purge_database(url: str, sessions: int) -> dict:
    """`sessions` expired sessions × EVENTS_PER_SESSION events, inserted by two INSERT … SELECT statements:
    random bytes where the store keeps sealed ones (the purge never opens them), sizes as purge_bench's."""
    started, events = time.monotonic(), purge_bench.EVENTS_PER_SESSION
    state, event = os.urandom(1100), os.urandom(1050)  # purge_bench: ~1 KB sealed state and events
    with psycopg.connect(url) as conn:
        conn.execute(
            "INSERT INTO sessions_app_agentsession (app_name, owner_id, session_id, state, created_at,"
            " last_activity_at, revision, turn_holder)"
            " SELECT 'resume_agent', %(marker)s || lpad(n::text, 8, '0'), gen_random_uuid()::text, %(state)s,"
            " now() - interval '3 days', now() - interval '3 days', %(events)s, ''"
            " FROM generate_series(0, %(sessions)s - 1) AS n",
            {"marker": purge_bench.MARKER, "state": state, "events": events, "sessions": sessions},
        )
        conn.execute(
            "INSERT INTO sessions_app_sessionevent (agent_session_id, seq, event_id, invocation_id, author,"
            ' "timestamp", event_data)'
            " SELECT s.id, seq, 'e' || seq, 'inv', 'resume_agent', 0.0, %(event)s"
            " FROM sessions_app_agentsession AS s, generate_series(1, %(events)s) AS seq",
            {"event": event, "events": events},
        )
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")  # as autovacuum would have, on a table that grew this much
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    seconds = time.monotonic() - started
    return {"sessions": sessions, "events": sessions * events, "database_mb": size / 2**20, "build_s": seconds}


def purge_part(params: dict, tmp: Path) -> dict:
    from django.conf import settings

    sessions, env = params["sessions"], server_env(DATABASES["purge"], tmp / "web")
    with contextlib.ExitStack() as stack:
        migrated_database(DATABASES["purge"], env, stack)
        flush_redis()
        print(f"building {sessions:,} expired sessions ...", flush=True)
        built = build_purge_database(pg_url(DATABASES["purge"]), sessions)
        conn = stack.enter_context(psycopg.connect(pg_url(DATABASES["purge"]), autocommit=True))

        def expired_left() -> int:
            query = "SELECT COUNT(*) FROM sessions_app_agentsession WHERE owner_id LIKE %s"
            return conn.execute(query, (purge_bench.MARKER + "%",)).fetchone()[0]

        print("live turns without / during a purge ...", flush=True)

        def first_batch_gone(purge_pid: int) -> bool:
            # When the window "during" starts: no file here to see the purge open.
            return expired_left() < sessions

        p = params
        live = purge_bench.live_turns(
            env, p["clients"], p["warmup"], p["baseline"], p["budget"], tmp, first_batch_gone, expired_left
        )
        audit = (
            "SELECT sessions_deleted, events_deleted, duration_ms FROM sessions_app_deletionaudit WHERE trigger = %s"
        )
        audits = conn.execute(audit, ("command",)).fetchall()
    purged, events, ms = (sum(row[i] for row in audits) for i in range(3))
    pacing = {"batch_size": settings.PURGE_BATCH_SIZE, "pause": settings.PURGE_BATCH_PAUSE_SECONDS}
    working = ms / 1000 - math.ceil(purged / pacing["batch_size"]) * pacing["pause"]  # less the pauses
    purge = {"sessions": purged, "events": events, "seconds": ms / 1000, **pacing}
    purge |= {"sessions_per_s": purged / (ms / 1000) if ms else math.nan}
    purge |= {"sessions_per_working_s": purged / working if working > 0 else math.nan}
    print(f"  purge: {purge['sessions_per_s']:,.0f} sessions/s")
    return {"params": params, "built": built, "purge": purge, "live": live}


def purge_lines(part: dict) -> list[str]:
    built, purge, live = part["built"], part["purge"], part["live"]
    return [
        f"### 3. Purge on PostgreSQL while one server serves {live['clients']} clients",
        "",
        f"Database `{DATABASES['purge']}`: {built['sessions']:,} expired sessions × {purge_bench.EVENTS_PER_SESSION}"
        f" events ({built['events']:,} rows of ~1 KB random bytes where sealed ones would be;"
        f" {built['database_mb']:.0f} MB, built in {built['build_s']:.1f} s by INSERT … SELECT). One gunicorn"
        " (no qcluster: its schedule would purge first) serves loadgen's clients; after the window without a purge,"
        " `manage.py purge_sessions` runs in its own process; the window during it starts once its first batch has"
        " gone. Settings in effect:"
        f" PURGE_BATCH_SIZE={purge['batch_size']}, PURGE_BATCH_PAUSE_SECONDS={purge['pause']}.",
        "",
        f"Purge (its audit row): {purge['sessions']:,} sessions, {purge['events']:,} events in"
        f" {purge['seconds']:.2f} s = **{purge['sessions_per_s']:,.0f} sessions/s**"
        f" ({purge['sessions_per_working_s']:,.0f}/s without the pauses between batches).",
        "",
        *purge_bench.live_lines(live),
        "",
        "'Other processes' includes PostgreSQL, where the purge's deletes run.",
    ]


# --- Targets and the whole run ---------------------------------------------------------------


def judge(store: dict, service: dict, purge_part_result: dict) -> list[str]:
    ratio = store["summary"]["ours"]["lifecycle"]["ratio"]
    errors = [(r["servers"], r["clients"], r["errors_all_phases"]) for r in service["runs"]]
    purge, windows = purge_part_result["purge"], purge_part_result["live"]["windows"]
    without, during = (windows[name]["turn_ms"]["p99"] for name in ("without purge", "during purge"))
    verdict = {True: "MET", False: "MISSED"}
    return [
        f"{verdict[ratio <= STORE_TARGET]}: store lifecycle ours / ADK DatabaseSessionService on PostgreSQL"
        f" <= {STORE_TARGET}: {ratio:.2f}",
        f"{verdict[all(e == 0 for *_, e in errors)]}: zero errors in every service run: "
        + ", ".join(f"{s} server(s) × {c} clients: {e}" for s, c, e in errors),
        f"{verdict[purge['sessions_per_s'] >= 1000]}: purge >= 1,000 sessions/s (issue 14):"
        f" {purge['sessions_per_s']:,.0f} sessions/s ({purge['sessions_per_working_s']:,.0f}/s without the pauses)",
        f"{verdict[during <= 2 * without]}: turn p99 during the purge <= 2x without it (issue 14):"
        f" {during:.0f} ms vs {without:.0f} ms = {during / without:.2f}x",
    ]


def run(args) -> tuple[list[str], dict]:
    quick = args.quick
    # Sized as store_bench.run, service_bench.run and purge_bench.run size theirs.
    store_params = dict(zip(("reps", "lifecycles", "background"), (3, 2, 5) if quick else (9, 12, 50), strict=True))
    service_params = {
        "warmup": 2 if quick else 5,
        "duration": 8 if quick else 35,
        "clients": [8, 32],
        "servers": [1, 2],
    }
    sessions = 1000 if quick else 10000
    purge_params = {"sessions": sessions, "clients": 4, "warmup": 3, "baseline": 8 if quick else 20}
    purge_params["budget"] = max(60.0, sessions / 100)
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(prefix="postgres-bench-") as tmp:
        stack.callback(flush_redis)  # last: the counters the servers left
        print("session store on PostgreSQL ...", flush=True)
        _common.setup_django_url(fresh_database(DATABASES["store"], stack))
        logging.getLogger("httpx").setLevel(logging.WARNING)  # Django's logging settings apply here now
        fresh_database(DATABASES["adk"], stack)  # ADK makes its tables in it
        store = store_part(store_params)
        service = service_part(service_params, Path(tmp))
        (Path(tmp) / "purge").mkdir()
        purge = purge_part(purge_params, Path(tmp) / "purge")
    verdicts = judge(store, service, purge)
    lines = [*store_lines(store), "", *service_lines(service), "", *purge_lines(purge), "", "### Targets", ""]
    data = {"store": store, "service": service, "purge": purge, "verdicts": verdicts}
    return lines + [f"- {v}" for v in verdicts], data


if __name__ == "__main__":
    sys.exit(_common.main("postgres", "The service on PostgreSQL and Redis", PACKAGES, run))
