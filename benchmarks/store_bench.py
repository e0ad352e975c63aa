#!/usr/bin/env python3
"""Our DjangoSessionService against ADK's own session services, side by side, in one run.

The same session lifecycle runs on every service: create a session holding a
~3 KB resume (Chinese and English, fictional) in its state, append 14 events of
~1 KB each (alternating user and model text; every fourth carries a session
state delta, as the agent's tools do), read it back whole and with
`GetSessionConfig(num_recent_events=5)`, list the user's sessions and delete
it. Each database has background sessions of other users in it.

Services:
  ours           sessions_app.store.DjangoSessionService on a temp SQLite file
                 (the project's settings: secure_delete=ON, journal_mode=DELETE,
                 temp_store=MEMORY, IMMEDIATE transactions, synchronous=FULL),
                 content sealed with keys from a session token, as in production
  ours-plain     the same store and database with the sealing replaced by a
                 benchmark-only pass-through (PlainSealer below; the project has
                 no "encryption off" mode): what encryption at rest costs is
                 ours / ours-plain
  ours+NORMAL    ours with PRAGMA synchronous=NORMAL set on the benchmark's
                 connection only (measured, not adopted: sessions_app/sqlite.py
                 is unchanged)
  adk_sqlite     google.adk SqliteSessionService on a temp file
  adk_database   google.adk DatabaseSessionService, sqlite+aiosqlite:/// temp file
  in_memory      google.adk InMemorySessionService (the floor)

Everything runs inside `token_context(BENCH_TOKEN)`, as an API request runs
(the API enters it per request; ADK's services ignore it).
Every operation is awaited inside an event loop the way the project runs the
ADK Runner: the benchmark's main thread calls `async_to_sync(lifecycle)`, as a
Django view calls `async_to_sync(_run_agent)` (sessions_app/turns.py), so our
thread-sensitive `sync_to_async` ORM calls hop from the loop's thread back to
the calling thread, as they do under gunicorn. Services are interleaved
lifecycle by lifecycle (the order rotates), so machine noise hits all alike;
each figure is the median over repetitions.

Run from the project root:
    .venv/bin/python benchmarks/store_bench.py            # full (~2 minutes)
    .venv/bin/python benchmarks/store_bench.py --quick    # a quick look (~20 s)
Writes benchmarks/results/store.md and store.json (--name changes the stem,
--no-write only prints). Before/after a change to the store, in one run:
    git show HEAD:sessions_app/store.py > /tmp/store_before.py
    .venv/bin/python benchmarks/store_bench.py --baseline-store /tmp/store_before.py --no-write
All data is fictional.
"""

from __future__ import annotations

import argparse
import gc
import sqlite3
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common  # noqa: E402

APP = "resume_agent"
USER = "owner-bench"
OPS = ("create", "append", "get_all", "get_recent5", "list", "delete")
OP_LABELS = {
    "create": "create_session (3 KB state)",
    "append": "append_event (~1 KB)",
    "get_all": "get_session (all 14 events)",
    "get_recent5": "get_session (num_recent_events=5)",
    "list": "list_sessions (one user)",
    "delete": "delete_session",
}
EVENTS_PER_SESSION = 14
SERVICES = ("ours", "ours-plain", "ours+NORMAL", "adk_sqlite", "adk_database", "in_memory")
# Fictional, like the data: the key source of every "ours" lifecycle.
BENCH_TOKEN = "benchmark-token-not-a-real-one-0123456789abc"
PACKAGES = ["Django", "google-adk", "google-genai", "SQLAlchemy", "aiosqlite", "asgiref", "pydantic"]

# ---------------------------------------------------------------------------
# Fictional data: a ~3 KB resume and ~1 KB events, Chinese and English.
# ---------------------------------------------------------------------------

RESUME_FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "resume_lin.txt"

RESUME_PADDING = """
自傳 Autobiography (fictional)
我在基隆的港邊長大，從小喜歡拆解收音機，大學時在實驗室負責維護共用的計算叢集。
I grew up by the harbour in Keelung, took radios apart as a child, and kept the shared
compute cluster of my university lab running as a student.
在翠鳥雲端，我主導了帳務服務的拆分，也建立了值班手冊與事後檢討的流程。
At Kingfisher Cloud I led the split of the billing service and set up the on-call
handbook and the blameless post-mortem process.
志工經歷 Volunteering: 每月一次在社區大學教授 Python 入門課程 (monthly Python
evening class at a community college, 2019-present).
"""

EVENT_TEXT_SEED = (
    "請把「翠鳥雲端」那段經歷改寫成三個有具體數字的重點，並保留 Kubernetes 遷移的成果。"
    "Rewrite the Kingfisher Cloud role as three bullet points with measurable outcomes, "
    "keeping the Kubernetes migration and the p99 latency improvement. "
    "語氣請專業但不要誇大，不要加入履歷上沒有的技能。"
    "Keep the tone professional, do not add skills that are not on the resume. "
)


def resume_text(target_bytes: int = 3000) -> str:
    text = RESUME_FIXTURE.read_text(encoding="utf-8") + RESUME_PADDING
    while len(text.encode("utf-8")) < target_bytes:
        text += RESUME_PADDING
    # Trim to the target on a character boundary.
    while len(text.encode("utf-8")) > target_bytes:
        text = text[:-1]
    return text


def initial_state() -> dict:
    return {"resume_text": resume_text(), "plan_versions": [], "suspicious_flags": []}


def _event_text(index: int, target_bytes: int) -> str:
    """Event text so that the event's stored JSON is about target_bytes long."""
    base = f"[{index:02d}] "
    probe = _make_event(index, base, "inv-probe")
    overhead = len(probe.model_dump_json(exclude_none=True).encode("utf-8")) - len(base.encode("utf-8"))
    text = base
    seed = EVENT_TEXT_SEED
    k = index % len(seed)
    while len(text.encode("utf-8")) + overhead < target_bytes:
        text += seed[k % len(seed)]
        k += 1
    return text


def _make_event(index: int, text: str, invocation_id: str):
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.genai import types

    is_user = index % 2 == 0
    actions = EventActions()
    if index % 4 == 3:
        # What agent/tools.py records: a growing list of plan versions.
        actions = EventActions(
            state_delta={"plan_versions": [f"v{k + 1}: 改寫經歷重點 rewrite bullets {k + 1}" for k in range(index // 4 + 1)]}
        )
    return Event(
        invocation_id=invocation_id,
        author="user" if is_user else "resume_agent",
        content=types.Content(role="user" if is_user else "model", parts=[types.Part(text=text)]),
        actions=actions,
    )


class Workload:
    def __init__(self, events: int = EVENTS_PER_SESSION, event_bytes: int = 1000):
        self.state = initial_state()
        self.texts = [_event_text(i, event_bytes) for i in range(events)]

    def event(self, index: int, invocation_id: str):
        # A fresh Event (new id, current timestamp), built outside the timed call.
        return _make_event(index, self.texts[index], invocation_id)

    def sizes(self) -> dict:
        import json

        events = [self.event(i, "inv-size") for i in range(len(self.texts))]
        sizes = [len(e.model_dump_json(exclude_none=True).encode("utf-8")) for e in events]
        return {
            "resume_text_bytes": len(self.state["resume_text"].encode("utf-8")),
            "state_json_bytes": len(json.dumps(self.state, ensure_ascii=False).encode("utf-8")),
            "event_json_bytes_min": min(sizes),
            "event_json_bytes_max": max(sizes),
            "events": len(sizes),
        }


# ---------------------------------------------------------------------------
# One lifecycle, timed operation by operation
# ---------------------------------------------------------------------------


async def lifecycle(service, workload: Workload, user_id: str = USER) -> dict[str, list[float]]:
    from google.adk.sessions.base_session_service import GetSessionConfig

    clock = time.perf_counter
    times: dict[str, list[float]] = defaultdict(list)

    t = clock()
    session = await service.create_session(app_name=APP, user_id=user_id, state=dict(workload.state))
    times["create"].append(clock() - t)

    for i in range(len(workload.texts)):
        event = workload.event(i, f"inv-{i // 2}")
        t = clock()
        await service.append_event(session, event)
        times["append"].append(clock() - t)

    t = clock()
    full = await service.get_session(app_name=APP, user_id=user_id, session_id=session.id)
    times["get_all"].append(clock() - t)
    assert full is not None and len(full.events) == len(workload.texts), "get_session lost events"

    t = clock()
    recent = await service.get_session(
        app_name=APP, user_id=user_id, session_id=session.id, config=GetSessionConfig(num_recent_events=5)
    )
    times["get_recent5"].append(clock() - t)
    assert recent is not None and len(recent.events) == min(5, len(workload.texts))

    t = clock()
    listed = await service.list_sessions(app_name=APP, user_id=user_id)
    times["list"].append(clock() - t)
    assert any(s.id == session.id for s in listed.sessions)

    t = clock()
    await service.delete_session(app_name=APP, user_id=user_id, session_id=session.id)
    times["delete"].append(clock() - t)
    return times


async def seed(service, workload: Workload, sessions: int) -> None:
    """Background sessions of other users that stay in the database."""
    for n in range(sessions):
        session = await service.create_session(app_name=APP, user_id=f"owner-bg-{n:04d}", state=dict(workload.state))
        for i in range(len(workload.texts)):
            await service.append_event(session, workload.event(i, f"bg-{i // 2}"))


# ---------------------------------------------------------------------------
# Services
# ---------------------------------------------------------------------------


class PragmaSwitch:
    """Sets PRAGMA synchronous on the benchmark's own Django connection (this process only)."""

    def __init__(self, value: str):
        self.value = value

    def __enter__(self):
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA synchronous={self.value}")
        return self

    def __exit__(self, *exc):
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("PRAGMA synchronous=FULL")


class NoSwitch:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


class PlainSealer:
    """Benchmark only: a sealer that does no cryptography (no key derivation, no AES-GCM).

    Same interface as sessions_app.crypto.Sealer; the values stay bytes, so the
    store does every other step as it does with encryption on.
    """

    def __init__(self, *scope_and_purpose):
        pass

    def seal(self, plaintext: bytes, place: str) -> bytes:
        return plaintext

    def open(self, sealed, place: str) -> bytes:
        return bytes(sealed)


class EncryptionOff:
    """Benchmark only: while active, the store's sealers (sessions_app.sealing) are PlainSealers."""

    NAMES = ("session_sealer", "owner_sealer")

    def __enter__(self):
        from sessions_app import sealing

        self.saved = {name: getattr(sealing, name) for name in self.NAMES}
        for name in self.NAMES:
            setattr(sealing, name, PlainSealer)
        return self

    def __exit__(self, *exc):
        from sessions_app import sealing

        for name, function in self.saved.items():
            setattr(sealing, name, function)


def load_store_file(path: Path):
    """A DjangoSessionService from another version of sessions_app/store.py (e.g. from git)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("sessions_app._baseline_store", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.DjangoSessionService()


def make_services(tmp: Path, names: tuple[str, ...], baseline_store: Path | None = None) -> dict:
    from google.adk.sessions import DatabaseSessionService
    from google.adk.sessions.in_memory_session_service import InMemorySessionService
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    from sessions_app.store import DjangoSessionService

    factories = {
        "ours": lambda: (DjangoSessionService(), NoSwitch()),
        "ours-plain": lambda: (DjangoSessionService(), EncryptionOff()),
        "ours+NORMAL": lambda: (DjangoSessionService(), PragmaSwitch("NORMAL")),
        "adk_sqlite": lambda: (SqliteSessionService(str(tmp / "adk_sqlite.db")), NoSwitch()),
        "adk_database": lambda: (DatabaseSessionService(f"sqlite+aiosqlite:///{tmp / 'adk_database.db'}"), NoSwitch()),
        "in_memory": lambda: (InMemorySessionService(), NoSwitch()),
    }
    services = {name: factories[name]() for name in names}
    if baseline_store is not None:
        # Same database and connection as "ours": only the code differs.
        services = {"ours-baseline": (load_store_file(baseline_store), NoSwitch()), **services}
    return services


def count_queries(service, workload: Workload) -> dict[str, int]:
    """Queries per operation of our store (CaptureQueriesContext), one lifecycle."""
    from asgiref.sync import async_to_sync
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from google.adk.sessions.base_session_service import GetSessionConfig

    counts: dict[str, int] = {}

    # Captured on this (the calling) thread: our thread-sensitive ORM calls run
    # here, on this thread's connection, while async_to_sync runs the loop.
    def run(op: str, call, *args, **kwargs):
        with CaptureQueriesContext(connection) as q:
            result = async_to_sync(call)(*args, **kwargs)
        counts.setdefault(op, []).append(len(q.captured_queries))
        return result

    session = run("create", service.create_session, app_name=APP, user_id="owner-q", state=dict(workload.state))
    for i in range(len(workload.texts)):
        run("append", service.append_event, session, workload.event(i, f"inv-{i // 2}"))
    run("get_all", service.get_session, app_name=APP, user_id="owner-q", session_id=session.id)
    run("get_recent5", service.get_session, app_name=APP, user_id="owner-q", session_id=session.id,
        config=GetSessionConfig(num_recent_events=5))
    run("list", service.list_sessions, app_name=APP, user_id="owner-q")
    run("delete", service.delete_session, app_name=APP, user_id="owner-q", session_id=session.id)
    out = {op: max(values) for op, values in counts.items()}
    out["append_min"] = min(counts["append"])
    return out


# ---------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------


def measure(services: dict, workload: Workload, reps: int, lifecycles: int) -> dict:
    """raw[name][rep][op] = list of seconds; services interleaved lifecycle by lifecycle."""
    from asgiref.sync import async_to_sync

    names = list(services)
    raw = {name: [] for name in names}
    for rep in range(reps):
        per_rep = {name: defaultdict(list) for name in names}
        for i in range(lifecycles):
            shift = (rep * lifecycles + i) % len(names)
            for name in names[shift:] + names[:shift]:
                service, switch = services[name]
                with switch:
                    times = async_to_sync(lifecycle)(service, workload)
                for op, values in times.items():
                    per_rep[name][op].extend(values)
        for name in names:
            raw[name].append({op: per_rep[name][op] for op in OPS})
        print(f"  repetition {rep + 1}/{reps} done", file=sys.stderr)
    return raw


def summarise(raw: dict, baseline: str = "adk_sqlite") -> dict:
    """Per service and op: median over repetitions of the mean time per call."""
    summary: dict = {}
    for name, reps in raw.items():
        per_op = {}
        for op in OPS:
            means = [sum(rep[op]) / len(rep[op]) for rep in reps]
            per_op[op] = {"median_s": _common.median(means), "per_rep_mean_s": means, "calls_per_lifecycle": len(reps[0][op]) // max(1, _lifecycles(reps[0]))}
        lifecycle_times = [sum(sum(rep[op]) for op in OPS) / _lifecycles(rep) for rep in reps]
        per_op["lifecycle"] = {"median_s": _common.median(lifecycle_times), "per_rep_mean_s": lifecycle_times}
        summary[name] = per_op
    # Paired ratios: within each repetition, ours / baseline; then the median.
    if baseline in summary:
        for name in summary:
            for op in (*OPS, "lifecycle"):
                ratios = [
                    a / b
                    for a, b in zip(summary[name][op]["per_rep_mean_s"], summary[baseline][op]["per_rep_mean_s"])
                    if b > 0
                ]
                summary[name][op]["ratio_vs_" + baseline] = _common.median(ratios)
    return summary


def _lifecycles(rep: dict) -> int:
    return len(rep["create"])


ENCRYPTION_TARGET = 0.10  # encryption may add at most 10% to the unencrypted store's time


def encryption_cost(summary: dict, op: str) -> float:
    """What sealing adds to `op`: median over repetitions of (ours / ours-plain) - 1, paired."""
    pairs = zip(summary["ours"][op]["per_rep_mean_s"], summary["ours-plain"][op]["per_rep_mean_s"])
    return _common.median([ours / plain for ours, plain in pairs if plain > 0]) - 1


def encryption_cost_lines(summary: dict) -> list[str]:
    if "ours" not in summary or "ours-plain" not in summary:
        return []
    cost = encryption_cost(summary, "lifecycle")
    verdict = "met" if cost < ENCRYPTION_TARGET else "NOT met"
    lines = [
        f"**Encryption at rest: whole lifecycle, ours (sealed) / ours-plain (no cryptography) = "
        f"{1 + cost:.3f}, a cost of {cost:+.1%}** ({_common.fmt_ms(summary['ours']['lifecycle']['median_s'])} ms vs "
        f"{_common.fmt_ms(summary['ours-plain']['lifecycle']['median_s'])} ms); target under "
        f"{ENCRYPTION_TARGET:.0%}: **{verdict}**. Per operation (paired ratios, median over repetitions; "
        "small differences are within the machine's noise):",
        "",
    ]
    rows = [
        [OP_LABELS.get(op, "**whole lifecycle**"), _common.fmt_ms(summary["ours"][op]["median_s"]),
         _common.fmt_ms(summary["ours-plain"][op]["median_s"]), f"{encryption_cost(summary, op):+.1%}"]
        for op in (*OPS, "lifecycle")
    ]
    return lines + _common.md_table(["operation", "ours, ms", "ours-plain, ms", "cost of encryption"], rows) + [""]


def render(summary: dict, queries: dict, sizes: dict, args, info: dict, command: str, elapsed: float,
           profile_text: str | None, extras: dict) -> tuple[str, dict]:
    lines = [f"## Session store: ours vs ADK's services ({'quick' if args.quick else 'full'} run)", ""]
    lines += _common.header_lines(command, info)
    lines += [
        "",
        f"Workload per lifecycle: create (resume {sizes['resume_text_bytes']:,} B UTF-8, state JSON "
        f"{sizes['state_json_bytes']:,} B), {sizes['events']} × append_event "
        f"({sizes['event_json_bytes_min']:,}-{sizes['event_json_bytes_max']:,} B of event JSON each), "
        "get_session (all events), get_session (num_recent_events=5), list_sessions (the user's), "
        f"delete_session. {args.reps} repetitions × {args.lifecycles} lifecycles per service, "
        f"services interleaved lifecycle by lifecycle; {args.background} background sessions "
        "(14 events each) of other users in every database. Each figure: median over repetitions "
        "of the mean per call. Ratio = median over repetitions of (service time / adk_sqlite time) "
        "in the same repetition; < 1.0 means faster than ADK's SqliteSessionService.",
        "",
    ]
    ours = summary.get("ours")
    base = summary.get("adk_sqlite")
    if ours and base:
        r = ours["lifecycle"]["ratio_vs_adk_sqlite"]
        verdict = "met" if r <= 1.0 else "NOT met"
        lines += [
            f"**Headline: whole lifecycle, ours / ADK SqliteSessionService (time) = {r:.2f}** "
            f"({_common.fmt_ms(ours['lifecycle']['median_s'])} ms vs "
            f"{_common.fmt_ms(base['lifecycle']['median_s'])} ms); target ≤ 1.0: **{verdict}**.",
            "",
        ]
    lines += encryption_cost_lines(summary)
    names = list(summary)
    lines += ["### Operations per second (median)", ""]
    rows = []
    for op in OPS:
        rows.append([OP_LABELS[op]] + [_common.fmt_rate(1 / summary[n][op]["median_s"]) for n in names])
    rows.append(["**whole lifecycle** (lifecycles/s)"] + [
        f"**{_common.fmt_rate(1 / summary[n]['lifecycle']['median_s'])}**" for n in names
    ])
    lines += _common.md_table(["operation"] + names, rows)
    lines += ["", "### Time per call, ms (median) and ratio to adk_sqlite", ""]
    rows = []
    for op in (*OPS, "lifecycle"):
        label = OP_LABELS.get(op, "**whole lifecycle**")
        cells = []
        for n in names:
            s = summary[n][op]
            ratio = s.get("ratio_vs_adk_sqlite")
            cells.append(f"{_common.fmt_ms(s['median_s'])} ({ratio:.2f}×)" if ratio is not None else _common.fmt_ms(s["median_s"]))
        rows.append([label] + cells)
    lines += _common.md_table(["operation"] + names, rows)
    if queries:
        lines += ["", "### SQL statements per operation (CaptureQueriesContext, one lifecycle; BEGIN and COMMIT "
                  "included, as Django logs them)", ""]

        def cell(q: dict, op: str):
            if op == "append" and q["append_min"] != q["append"]:
                return f"{q['append_min']}-{q['append']}"
            return q[op]

        lines += _common.md_table(["operation", *queries], [[OP_LABELS[op]] + [cell(q, op) for q in queries.values()]
                                                            for op in OPS])
    hop = extras["thread_hop"]["median_s"]
    lines += [
        "",
        "### Where the time goes",
        "",
        f"- Thread hop: one empty thread-sensitive `sync_to_async` call awaited inside `async_to_sync` "
        f"(what each of our methods pays once) costs {_common.fmt_ms(hop)} ms here.",
        "- A commit: one small write transaction (1 KB insert + an update, BEGIN IMMEDIATE … COMMIT, "
        "secure_delete=ON) with plain sqlite3 on this machine's disk, by journal mode and synchronous "
        "setting (median ms). Every append_event, create_session and delete_session of every "
        "persistent service commits once:",
        "",
    ]
    lines += _common.md_table(
        ["journal_mode", "synchronous", "ms per commit", "note"],
        [
            [c["journal_mode"], c["synchronous"], _common.fmt_ms(c["median_s"]),
             {("DELETE", "FULL"): "the project's setting (SQLite's default synchronous)",
              ("DELETE", "NORMAL"): "fewer fsyncs; SQLite documents a small risk of a corrupt file after "
                                    "a power failure in journal_mode=DELETE (older filesystems)",
              ("DELETE", "OFF"): "unsafe; the CPU part of a commit",
              ("WAL", "FULL"): "not an option here: sessions_app/sqlite.py explains why (text kept in -wal)",
              ("WAL", "NORMAL"): "idem"}[(c["journal_mode"], c["synchronous"])]]
            for c in extras["commit_cost"]
        ],
    )
    if profile_text:
        lines += ["", "### Profile of ours (cProfile, top functions by cumulative time)", "", "```", profile_text.rstrip(), "```"]
    lines += ["", f"Run time: {elapsed:.0f} s.", ""]
    data = {
        "command": command,
        "machine": info,
        "params": {"reps": args.reps, "lifecycles": args.lifecycles, "background": args.background, "quick": args.quick},
        "workload": sizes,
        "summary": summary,
        "queries": queries,
        "thread_hop": extras["thread_hop"],
        "commit_cost": extras["commit_cost"],
        "elapsed_s": elapsed,
    }
    return "\n".join(lines), data


def thread_hop_cost(calls: int = 2000) -> dict:
    """What one thread-sensitive sync_to_async call costs, empty, awaited as our store awaits it."""
    from asgiref.sync import async_to_sync, sync_to_async

    def nothing():
        return None

    async def hops():
        call = sync_to_async(nothing)
        started = time.perf_counter()
        for _ in range(calls):
            await call()
        return (time.perf_counter() - started) / calls

    per_call = [async_to_sync(hops)() for _ in range(5)]
    return {"median_s": _common.median(per_call), "calls": calls}


def commit_cost(tmp: Path, commits: int) -> list[dict]:
    """A small write transaction (1 KB insert + one update) per commit, plain sqlite3, per setting.

    journal_mode=DELETE is what the project uses; WAL is listed only to show where
    the time goes (sessions_app/sqlite.py explains why the project does not use it).
    """
    results = []
    for journal, synchronous in (("DELETE", "FULL"), ("DELETE", "NORMAL"), ("DELETE", "OFF"), ("WAL", "FULL"), ("WAL", "NORMAL")):
        path = tmp / f"commit_{journal}_{synchronous}.db"
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            conn.execute("PRAGMA secure_delete=ON")
            conn.execute(f"PRAGMA journal_mode={journal}")
            conn.execute(f"PRAGMA synchronous={synchronous}")
            conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, s INTEGER, data TEXT)")
            conn.execute("CREATE INDEX t_s ON t (s)")
            times = []
            for i in range(commits):
                started = time.perf_counter()
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("INSERT INTO t (s, data) VALUES (?, ?)", (i % 10, "履歷 resume " * 70))
                conn.execute("UPDATE t SET s = s + 1 WHERE id = 1")
                conn.execute("COMMIT")
                times.append(time.perf_counter() - started)
        finally:
            conn.close()
        results.append({"journal_mode": journal, "synchronous": synchronous, "median_s": _common.median(times)})
    return results


def profile_ours(service, workload: Workload, lifecycles: int) -> str:
    import cProfile
    import io
    import pstats

    from asgiref.sync import async_to_sync

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(lifecycles):
        async_to_sync(lifecycle)(service, workload)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a quick look")
    parser.add_argument("--reps", type=int, help="repetitions (default 9, quick 3)")
    parser.add_argument("--lifecycles", type=int, help="lifecycles per service per repetition (default 12, quick 3)")
    parser.add_argument("--background", type=int, help="background sessions per database (default 50, quick 5)")
    parser.add_argument("--services", default=",".join(SERVICES), help="comma-separated subset of " + ", ".join(SERVICES))
    parser.add_argument("--baseline-store", type=Path,
                        help="also run another version of sessions_app/store.py as 'ours-baseline', e.g. "
                             "`git show HEAD:sessions_app/store.py > /tmp/store_before.py`")
    parser.add_argument("--profile", action="store_true", help="also cProfile our store and print the top functions")
    parser.add_argument("--name", default="store", help="results file stem under benchmarks/results (default: store)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    args.reps = args.reps or (3 if args.quick else 9)
    args.lifecycles = args.lifecycles or (3 if args.quick else 12)
    args.background = args.background if args.background is not None else (5 if args.quick else 50)
    names = tuple(s.strip() for s in args.services.split(",") if s.strip())
    unknown = set(names) - set(SERVICES)
    if unknown:
        parser.error(f"unknown services: {', '.join(sorted(unknown))}")

    command = _common.command_line(argv)
    info = _common.machine_info(PACKAGES)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="store_bench_") as tmpdir:
        tmp = Path(tmpdir)
        _common.setup_django(tmp / "bench.db")
        from asgiref.sync import async_to_sync

        from sessions_app.crypto import token_context

        workload = Workload()
        services = make_services(tmp, names, args.baseline_store)
        # The token every "ours" lifecycle seals with, entered as the API enters
        # it for a request; async_to_sync carries it into each lifecycle.
        with token_context(BENCH_TOKEN):
            # Warm-up (schemas, imports, caches) and background sessions; not timed.
            django_seeded = False  # every "ours*" service shares the one Django database
            for name, (service, switch) in services.items():
                if not name.startswith("ours") or not django_seeded:
                    async_to_sync(seed)(service, workload, args.background)
                    django_seeded = django_seeded or name.startswith("ours")
                with switch:
                    async_to_sync(lifecycle)(service, workload)
            queries = {name: count_queries(services[name][0], workload) for name in ("ours-baseline", "ours")
                       if name in services}
            gc.collect()
            raw = measure(services, workload, args.reps, args.lifecycles)
            extras = {"thread_hop": thread_hop_cost(), "commit_cost": commit_cost(tmp, 30 if args.quick else 100)}
            profile_text = profile_ours(services["ours"][0], workload, args.lifecycles) if args.profile and "ours" in services else None
        if "adk_database" in services:
            async_to_sync(services["adk_database"][0].close)()
        summary = summarise(raw)
    elapsed = time.perf_counter() - started
    markdown, data = render(summary, queries, workload.sizes(), args, info, command, elapsed, profile_text, extras)
    data["raw"] = raw
    print(markdown)
    if not args.no_write:
        md_path, json_path = _common.write_results(args.name, markdown, data)
        print(f"written to {md_path} and {json_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
