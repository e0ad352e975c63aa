"""The service on PostgreSQL (and Redis): is our store faster than ADK's DatabaseSessionService on the same server,
what do one and two web servers carry, how fast does the purge go while one serves? store_bench's, loadgen's and
purge_bench's workloads on fresh databases of its own on the local PostgreSQL (dropped at the end) and Redis
database 14 (flushed). Figures: results/postgres.md.
"""

import asyncio
import contextlib
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
from benchmarks._common import fmt, fmt_ms, ratio, verdict  # noqa: E402

PG_SERVER = "postgres@127.0.0.1:5432"  # trust authentication, on this machine
REDIS_URL = "redis://127.0.0.1:6379/14"  # the test suite uses 15 (tests/backends.py)
DATABASES = {"store": "bench_store", "adk": "bench_adk", "service": "bench_service", "purge": "bench_purge"}
STORE_BASELINE, STORE_TARGET = "adk_postgres", 0.7  # ours / ADK time over the whole lifecycle
PACKAGES = ["Django", "google-adk", "SQLAlchemy", "asyncpg", "psycopg", "redis", "gunicorn", "django-q2", "httpx"]
BENCH_EVENT_TEXT = (
    "請把「港灣物流」那段經歷改寫成三個有具體數字的重點，並保留資料管線遷移的成果。"
    "Rewrite the Harbor Logistics role as three bullet points with measurable outcomes, "
    "keeping the data pipeline migration and the forecast accuracy improvement. "
)


def pg_url(database: str, scheme: str = "postgres") -> str:
    return f"{scheme}://{PG_SERVER}/{database}"


def admin(sql: str):
    """One statement on the maintenance database, outside transactions (CREATE and DROP DATABASE need that)."""
    with psycopg.connect(pg_url("postgres"), autocommit=True) as conn:
        cursor = conn.execute(sql)
        return cursor.fetchone() if cursor.description else None


def fresh_database(name: str, stack: contextlib.ExitStack, env: dict | None = None) -> str:
    """An empty database `name` (ours alone), dropped when `stack` closes (FORCE: a connection left open, a pool's
    or a killed server's, must not keep it); with `env`, migrated by `manage.py migrate`. Its URL."""
    drop = f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'
    stack.callback(admin, drop)
    admin(drop)
    admin(f'CREATE DATABASE "{name}"')
    if env:
        loadgen.migrate(env)
    return pg_url(name)


def flush_redis() -> None:
    redis.Redis.from_url(REDIS_URL).flushdb()  # the rate-limit counters of the previous run


def server_env(database: str, var_dir: Path) -> dict:
    """One server's environment: the shared database and Redis, a var/ of its own, the throttles lifted."""
    extra = {"CACHE_URL": REDIS_URL, "DJANGO_VAR_DIR": str(var_dir), **_common.UNTHROTTLED}
    return _common.clean_env(DATABASE_URL=pg_url(database), **extra)


def postgres_pid() -> int | None:
    """The PostgreSQL server's main process, if it runs here: its CPU, with its reaped backends', is the
    database's (it forks a backend per connection, and our servers connect per request)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int((Path(admin("SHOW data_directory")[0]) / "postmaster.pid").read_text().split()[0])
    return None


def store_part(params: dict) -> dict:
    """store_bench's lifecycles on PostgreSQL. ADK's service stores text in clear, and PostgreSQL's WAL is shared by
    all its databases: the tests scan that WAL for their fixture's markers (tests/conftest.py, stored_files), so
    none of them may be written here: same sizes, other (fictional) words."""
    from asgiref.sync import async_to_sync, sync_to_async
    from django.db import connections
    from google.adk.sessions import DatabaseSessionService, InMemorySessionService

    from sessions_app.storage.adk_service import DjangoSessionService

    resume = _common.RESUME
    for marker in json.loads((_common.FIXTURES / "markers.json").read_text("utf-8")):
        resume = resume.replace(marker, "港灣物流" if any(ord(c) > 0x2E80 for c in marker) else "Harbor Logistics")
    workload = store_bench.Workload(resume=resume, event_text=BENCH_EVENT_TEXT)

    def body() -> dict:
        adk = DatabaseSessionService(pg_url(DATABASES["adk"], scheme="postgresql+asyncpg"))
        services = {"ours": DjangoSessionService(), STORE_BASELINE: adk, "in_memory": InMemorySessionService()}
        try:
            return store_bench.measure(services, workload, params)
        finally:
            async_to_sync(adk.close)()
            connections.close_all()  # this thread's: ours ran here

    async def in_one_loop():
        # Every async_to_sync inside awaits on this one loop (a bare one makes a loop per call), and asyncpg's
        # pooled connections (ADK's DatabaseSessionService) work only on the loop that opened them.
        return await sync_to_async(body)()

    raw = asyncio.run(in_one_loop())
    connections.close_all()  # this thread's, from migrate
    summary = store_bench.summarise(raw, baseline=STORE_BASELINE)
    return {"params": params, "workload": workload.sizes(), "summary": summary, "raw": raw}


def store_lines(store: dict) -> list[str]:
    summary, p = store["summary"], store["params"]
    ours, base = summary["ours"]["lifecycle"], summary[STORE_BASELINE]["lifecycle"]
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
        f" ({fmt_ms(ours['median_s'])} ms vs {fmt_ms(base['median_s'])} ms).",
        "",
        *store_bench.table(summary, "operation (ms, ratio to adk_postgres)"),
    ]


def start_deployment(servers: int, tmp: Path, stack: contextlib.ExitStack) -> tuple[list[int], list[str], list]:
    """`servers` gunicorns (each its own var/, one database, one Redis) and one qcluster, all stopped
    when `stack` closes: their pids, the servers' base URLs and their log files."""
    envs = [server_env(DATABASES["service"], tmp / f"web{i}") for i in range(servers)]
    fresh_database(DATABASES["service"], stack, envs[0])
    flush_redis()
    pids, urls, logs = [], [], [tmp / f"web{i}.log" for i in range(servers)] + [tmp / "qcluster.log"]
    for env, log in zip(envs, logs, strict=False):
        process, target = loadgen.start_ours(env, log, gunicorn=True)
        stack.callback(loadgen.stop_server, process, signal.SIGTERM)
        pids.append(process.pid)
        urls.append(target.base_url)
    # One django-q2 cluster beside the first server, on its var/, as `manage.py serve` starts it, once it runs.
    with open(logs[-1], "wb") as log:
        command = [_common.PY, "manage.py", "qcluster"]
        cluster = subprocess.Popen(command, cwd=_common.ROOT_DIR, env=envs[0], stdout=log, stderr=subprocess.STDOUT)
    stack.callback(loadgen.stop_server, cluster)  # SIGINT: how qcluster stops cleanly (serve.py)
    deadline = time.monotonic() + 60
    while b"running." not in logs[-1].read_bytes():
        if cluster.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"qcluster did not start: see {logs[-1]}")
        time.sleep(0.2)
    return [*pids, cluster.pid], urls, logs


def service_part(params: dict, tmp: Path) -> dict:
    params["server"], pg_pid, runs, logs = loadgen.gunicorn_line(), postgres_pid(), [], {}
    for servers in params["servers"]:
        print(f"starting {servers} server(s) and a qcluster ...", flush=True)
        (tmp / f"servers-{servers}").mkdir()
        with contextlib.ExitStack() as stack:  # a fresh database per deployment, dropped after it
            pids, urls, log_paths = start_deployment(servers, tmp / f"servers-{servers}", stack)
            for clients in params["clients"]:
                target, load = loadgen.OursTarget(urls[0]), (params["warmup"], params["duration"])
                r = loadgen.measured_load(target, clients, *load, pids, reaped_pid=pg_pid, urls=urls)
                m = r.pop("machine")
                cores = {"servers": m["server_cores"][0], "postgres": m["server_cores"][1]}
                cores |= {"loadgen": m["loadgen_cores"], "other": m["other_cores"], "steal": m["steal_cores"]}
                runs.append(r | {"servers": servers, "cores": cores})
                print(f"  {servers} server(s), {clients} clients: {r['turns_per_s']:.1f} turns/s")
        logs[servers] = {path.name: loadgen.log_counts(path) for path in log_paths}
    return {"params": params, "runs": runs, "logs": logs, "postgres_pid_found": pg_pid is not None}


def service_lines(service: dict) -> list[str]:
    p, runs = service["params"], service["runs"]
    rows = [
        [r["servers"], r["clients"], fmt(r["turns_per_s"])]
        + [fmt(r["latency_ms"]["turn"][q], 0) for q in ("p50", "p99")]
        + [r["errors_all_phases"], fmt(r["cpu_ms_per_turn"], 0), fmt(r["postgres_cpu_ms_per_turn"], 0)]
        + [" / ".join(f"{r['cores'][k]:.2f}" for k in ("servers", "postgres", "loadgen", "other"))]
        for r in runs
    ]
    # Why two servers on this machine cannot scale, and what a second machine would give, from the figures.
    most = max(r["clients"] for r in runs)
    one, two = ({(r["servers"], r["clients"]): r for r in runs}[(servers, most)] for servers in (1, 2))
    busy = sum(one["cores"][k] for k in ("servers", "postgres", "loadgen", "other"))
    server_ms, pg_ms, cores = one["cpu_ms_per_turn"], one["postgres_cpu_ms_per_turn"], os.cpu_count()
    return [
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
        f"On this {cores}-core machine a second server adds processes, not CPU: at {one['clients']} clients one"
        f" server already keeps {busy:.1f} of the {cores} cores busy (servers {one['cores']['servers']:.2f},"
        f" PostgreSQL {one['cores']['postgres']:.2f}, load generator {one['cores']['loadgen']:.2f}), so two servers"
        f" carry {ratio(two['turns_per_s'], one['turns_per_s']):.2f}x the turns/s of one, on the same cores."
        f" Each turn costs about {server_ms:.0f} ms of server CPU and {pg_ms:.0f} ms in PostgreSQL, so a second"
        f" {cores}-core machine running only a server would add up to about {ratio(cores * 1000, server_ms):.0f}"
        f" turns/s, as long as PostgreSQL keeps up (about {ratio(1000, pg_ms):.0f} turns/s per core it is given).",
        "",
        *(
            f"- Logs with {servers} server(s): "
            + "; ".join(f"{name}: " + ", ".join(f"`{k}` x{v}" for k, v in c.items()) for name, c in logs.items())
            for servers, logs in service["logs"].items()
        ),
    ]


def purge_part(params: dict, tmp: Path) -> dict:
    """`sessions` expired sessions × EVENTS_PER_SESSION events, inserted by two INSERT … SELECT statements (random
    bytes where the store keeps sealed ones: the purge never opens them; sizes as purge_bench's), then purged by
    `manage.py purge_sessions` while one server serves (purge_bench.live_turns)."""
    from django.conf import settings

    sessions, events, env = params["sessions"], purge_bench.EVENTS_PER_SESSION, server_env(DATABASES["purge"], tmp)
    with contextlib.ExitStack() as stack:
        url = fresh_database(DATABASES["purge"], stack, env)
        flush_redis()
        print(f"building {sessions:,} expired sessions ...", flush=True)
        started, values = time.monotonic(), {"state": os.urandom(1100), "event": os.urandom(1050)}
        conn = stack.enter_context(psycopg.connect(url, autocommit=True))
        with conn.transaction():
            conn.execute(
                "INSERT INTO sessions_app_agentsession (app_name, owner_id, session_id, state, created_at,"
                " last_activity_at, revision, turn_holder)"
                " SELECT 'resume_agent', %(marker)s || lpad(n::text, 8, '0'), gen_random_uuid()::text, %(state)s,"
                " now() - interval '3 days', now() - interval '3 days', %(events)s, ''"
                " FROM generate_series(0, %(sessions)s - 1) AS n",
                values | {"marker": purge_bench.MARKER, "events": events, "sessions": sessions},
            )
            conn.execute(
                "INSERT INTO sessions_app_sessionevent (agent_session_id, seq, event_id, invocation_id, author,"
                " \"timestamp\", event_data) SELECT s.id, seq, 'e' || seq, 'inv', 'resume_agent', 0.0, %(event)s"
                " FROM sessions_app_agentsession AS s, generate_series(1, %(events)s) AS seq",
                values | {"events": events},
            )
        conn.execute("ANALYZE")  # as autovacuum would have, on a table that grew this much
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        built = {"sessions": sessions, "events": sessions * events, "database_mb": size / 2**20}
        built["build_s"] = time.monotonic() - started

        def expired_left() -> int:
            query = "SELECT COUNT(*) FROM sessions_app_agentsession WHERE owner_id LIKE %s"
            return conn.execute(query, (purge_bench.MARKER + "%",)).fetchone()[0]

        print("live turns without / during a purge ...", flush=True)
        # The window "during" starts once the first batch has gone: no file here to see the purge open.
        live = purge_bench.live_turns(env, params, tmp, lambda pid: expired_left() < sessions, expired_left)
        audit = (
            "SELECT sessions_deleted, events_deleted, duration_ms FROM sessions_app_deletionaudit WHERE trigger = %s"
        )
        purged, deleted, ms = (sum(row[i] for row in conn.execute(audit, ("command",)).fetchall()) for i in range(3))
    pacing = {"batch_size": settings.PURGE_BATCH_SIZE, "pause": settings.PURGE_BATCH_PAUSE_SECONDS}
    working = ms / 1000 - math.ceil(purged / pacing["batch_size"]) * pacing["pause"]  # less the pauses
    purge = {"sessions": purged, "events": deleted, "seconds": ms / 1000, **pacing}
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


def judge(store: dict, service: dict, purge_part_result: dict) -> list[str]:
    errors = [(r["servers"], r["clients"], r["errors_all_phases"]) for r in service["runs"]]
    purge, windows = purge_part_result["purge"], purge_part_result["live"]["windows"]
    without, during = (windows[name]["turn_ms"]["p99"] for name in ("without purge", "during purge"))
    lifecycle = store["summary"]["ours"]["lifecycle"]["ratio"]
    return [
        verdict(lifecycle <= STORE_TARGET, "store lifecycle ours / ADK DatabaseSessionService on PostgreSQL")
        + f" <= {STORE_TARGET}: {lifecycle:.2f}",
        verdict(all(e == 0 for *_, e in errors), "zero errors in every service run: ")
        + ", ".join(f"{s} server(s) × {c} clients: {e}" for s, c, e in errors),
        verdict(purge["sessions_per_s"] >= 1000, "purge >= 1,000 sessions/s (issue 14):")
        + f" {purge['sessions_per_s']:,.0f} sessions/s ({purge['sessions_per_working_s']:,.0f}/s without the pauses)",
        verdict(during <= 2 * without, "turn p99 during the purge <= 2x without it (issue 14):")
        + f" {during:.0f} ms vs {without:.0f} ms = {during / without:.2f}x",
    ]


def run(args) -> tuple[list[str], dict]:
    # Sized as store_bench, service_bench and purge_bench size theirs.
    service_params = {"warmup": 2 if args.quick else 5, "duration": 8 if args.quick else 35}
    service_params |= {"clients": [8, 32], "servers": [1, 2]}
    purge_params = purge_bench.params(args.quick)
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(prefix="postgres-bench-") as tmp:
        stack.callback(flush_redis)  # last: the counters the servers left
        print("session store on PostgreSQL ...", flush=True)
        _common.setup_django(fresh_database(DATABASES["store"], stack))
        logging.getLogger("httpx").setLevel(logging.WARNING)  # Django's logging settings apply here now
        fresh_database(DATABASES["adk"], stack)  # ADK makes its tables in it
        store = store_part(store_bench.params(args.quick))
        service = service_part(service_params, Path(tmp))
        (Path(tmp) / "purge").mkdir()
        purge = purge_part(purge_params, Path(tmp) / "purge")
    verdicts = judge(store, service, purge)
    lines = [*store_lines(store), "", *service_lines(service), "", *purge_lines(purge), *_common.targets(verdicts)]
    return lines, {"store": store, "service": service, "purge": purge, "verdicts": verdicts}


if __name__ == "__main__":
    sys.exit(_common.main("postgres", "The service on PostgreSQL and Redis", PACKAGES, run))
