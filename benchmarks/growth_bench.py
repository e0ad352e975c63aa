#!/usr/bin/env python3
"""How our session store's costs grow with a session's history and with the database.

Two dimensions, both on temporary SQLite files with the project's settings:

1. Events per session (10, 100, 1,000; quick: 10, 100): one session per size,
   its history bulk-inserted (~1 KB events, Chinese and English, fictional),
   then `get_session` (all events, and num_recent_events=5), `append_event`,
   and the pair a Runner turn does for each event it stores (get_session with
   all events + append_event). ADK's own SqliteSessionService runs the same
   reads and writes on the same histories as a reference.
2. Sessions in the database (1,000 and 100,000; quick: 1,000 and 10,000): a
   database per size filled with bulk inserts (raw SQL through Django's
   connection, each background session with a small state and two events),
   then the per-session operations on a 14-event session in it.

Everything runs inside `token_context(BENCH_TOKEN)`, as an API request does,
so our store seals and opens content as in production; the bulk-inserted
rows are sealed the same way (sessions_app.sealing).

Sizes are interleaved repetition by repetition (the order rotates; for the
second dimension the benchmark switches the Django connection between the two
files) so machine noise hits all sizes alike; each figure is a median. Queries
per operation are counted with django.test.utils.CaptureQueriesContext, and
the query plans of the hot statements are printed (EXPLAIN QUERY PLAN).

Run from the project root:
    .venv/bin/python benchmarks/growth_bench.py            # full (~1 minute; ~230 MB in a temp dir)
    .venv/bin/python benchmarks/growth_bench.py --quick    # a quick look (~15 s)
Writes benchmarks/results/growth.md and growth.json (--name changes the stem).
All data is fictional.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import sqlite3
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common  # noqa: E402
from benchmarks.store_bench import APP, BENCH_TOKEN, PACKAGES, Workload  # noqa: E402

EVENT_OPS = ("get_all", "get_recent5", "append", "turn_pair", "runner_turn")
DB_OPS = ("get_all", "append", "turn_pair", "list_user", "create", "delete")
OP_LABELS = {
    "get_all": "get_session (all events)",
    "get_recent5": "get_session (num_recent_events=5)",
    "append": "append_event",
    "turn_pair": "get_session (all) + append_event",
    "runner_turn": "a whole Runner turn (scripted model, 2 events stored)",
    "list_user": "list_sessions (one user)",
    "create": "create_session",
    "delete": "delete_session (14 events)",
}




@functools.lru_cache(maxsize=1)
def _scripted_model_class():
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    class ScriptedModel(BaseLlm):
        """Answers every request with the same text, without any network."""

        model: str = "scripted-benchmark-model"

        async def generate_content_async(self, llm_request, stream: bool = False):
            text = "好的，以下是改寫後的重點。Here are the rewritten bullet points. " * 10
            usage = types.GenerateContentResponseUsageMetadata(
                prompt_token_count=1000, candidates_token_count=100, total_token_count=1100
            )
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]), usage_metadata=usage)

    return ScriptedModel


def ScriptedModel():  # noqa: N802 - a factory that reads like the class it builds
    return _scripted_model_class()()


# ---------------------------------------------------------------------------
# Building histories and databases quickly
# ---------------------------------------------------------------------------


def history(workload: Workload, count: int, start: float) -> list:
    """`count` ADK events (JSON) with distinct ids and increasing timestamps."""
    out = []
    for i in range(count):
        event = workload.event(i % len(workload.texts), f"inv-{i // 2}")
        event.timestamp = start + i * 0.001
        out.append(event)
    return out


def fill_ours(service, workload: Workload, user_id: str, count: int) -> str:
    """A session of ours holding `count` events, inserted in bulk through the ORM."""
    from asgiref.sync import async_to_sync

    from sessions_app import sealing
    from sessions_app.models import AgentSession, SessionEvent

    session = async_to_sync(service.create_session)(app_name=APP, user_id=user_id, state=dict(workload.state))
    row = AgentSession.objects.get(app_name=APP, user_id=user_id, session_id=session.id)
    sealer = sealing.session_sealer(APP, user_id, session.id)
    events = history(workload, count, time.time() - count)
    SessionEvent.objects.bulk_create(
        [
            SessionEvent(
                session=row,
                seq=seq,
                event_id=e.id,
                invocation_id=e.invocation_id,
                author=e.author,
                timestamp=e.timestamp,
                event_data=sealing.seal_event(sealer, seq, e.id, e.timestamp, e.model_dump_json(exclude_none=True)),
            )
            for seq, e in enumerate(events, start=1)
        ],
        batch_size=500,
    )
    AgentSession.objects.filter(pk=row.pk).update(
        revision=count,
        state=sealing.seal_state(sealer, dict(workload.state), count),  # the state's place names the revision
        updated_at=dt.datetime.fromtimestamp(events[-1].timestamp, tz=dt.timezone.utc),
    )
    return session.id


def fill_adk(service, db_path: Path, workload: Workload, user_id: str, count: int) -> str:
    """The same history in ADK's SqliteSessionService file (its own schema, raw inserts)."""
    from asgiref.sync import async_to_sync

    session = async_to_sync(service.create_session)(app_name=APP, user_id=user_id, state=dict(workload.state))
    events = history(workload, count, time.time() - count)
    with sqlite3.connect(db_path) as conn:
        conn.executemany(
            "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp, event_data)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (e.id, APP, user_id, session.id, e.invocation_id, e.timestamp, e.model_dump_json(exclude_none=True))
                for e in events
            ],
        )
        conn.execute(
            "UPDATE sessions SET update_time=? WHERE app_name=? AND user_id=? AND id=?",
            (events[-1].timestamp, APP, user_id, session.id),
        )
    return session.id


def fill_background(total: int, batch: int = 5000) -> float:
    """Adds background sessions (small state, two events each) up to `total`; returns seconds."""
    from django.db import connection, transaction

    from sessions_app import sealing
    from sessions_app.models import AgentSession, SessionEvent

    started = time.perf_counter()
    qn = connection.ops.quote_name
    s_table, e_table = qn(AgentSession._meta.db_table), qn(SessionEvent._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {s_table}")
        have = cursor.fetchone()[0]
    state = {"resume_text": "背景履歷 Background resume (fictional) " * 8, "plan_versions": [], "suspicious_flags": []}
    event_template = json.dumps(
        {"id": "EVENT-ID", "invocation_id": "inv-0", "author": "user", "timestamp": 0,
         "content": {"role": "user", "parts": [{"text": "請幫我改寫履歷 Please polish my resume. " * 6}]},
         "actions": {"state_delta": {}}},
        ensure_ascii=False,
    )
    updated_field = AgentSession._meta.get_field("updated_at")
    base = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    n = have
    while n < total:
        upto = min(total, n + batch)
        with transaction.atomic(), connection.cursor() as cursor:
            rows, sealers = [], []
            for k in range(n, upto):
                when = updated_field.get_db_prep_save(base + dt.timedelta(seconds=k), connection)
                user_id, session_id = f"owner-bg-{k:07d}", str(uuid.uuid4())
                sealers.append(sealing.session_sealer(APP, user_id, session_id))
                rows.append((APP, user_id, session_id, sealing.seal_state(sealers[-1], state, 2), when, when, 2))
            cursor.executemany(
                f"INSERT INTO {s_table} (app_name, user_id, session_id, state, created_at, updated_at, revision)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                rows,
            )
            cursor.execute(f"SELECT id FROM {s_table} ORDER BY id DESC LIMIT %s", [upto - n])
            pks = [pk for (pk,) in cursor.fetchall()][::-1]  # in insertion order, as `sealers`
            events = []
            for pk, sealer in zip(pks, sealers):
                for j in range(2):
                    event_id, timestamp = str(uuid.uuid4()), 1_767_225_600.0 + j
                    event_json = event_template.replace("EVENT-ID", event_id)
                    events.append((pk, j + 1, event_id, "inv-0", "user", timestamp,
                                   sealing.seal_event(sealer, j + 1, event_id, timestamp, event_json)))
            cursor.executemany(
                f"INSERT INTO {e_table} (session_id, seq, event_id, invocation_id, author, timestamp, event_data)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                events,
            )
        n = upto
    return time.perf_counter() - started


def use_database(path: Path) -> None:
    """Points this thread's Django connection at another benchmark file."""
    from django.db import connection

    connection.close()
    connection.settings_dict["NAME"] = str(path)


# ---------------------------------------------------------------------------
# Timed operations
# ---------------------------------------------------------------------------


class Timer:
    """Times the awaited part alone, inside the event loop (as store_bench does)."""

    def __init__(self, out: list):
        self.out = out

    def run(self, body):
        from asgiref.sync import async_to_sync

        async def timed():
            started = time.perf_counter()
            result = await body()
            self.out.append(time.perf_counter() - started)
            return result

        return async_to_sync(timed)()


class QueryCounter:
    """Counts the statements the awaited part runs (on this thread's connection, where our ORM work runs)."""

    def __init__(self, out: list):
        self.out = out

    def run(self, body):
        from asgiref.sync import async_to_sync
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as captured:
            result = async_to_sync(body)()
        self.out.append(len(captured.captured_queries))
        return result


def timer(out: list) -> Timer:
    return Timer(out)


class Ops:
    """The operations on one session of one service.

    Each does its untimed set-up and clean-up itself and hands only the awaited
    operation to `probe.run` (a Timer, or a QueryCounter).
    """

    def __init__(self, service, workload: Workload, user_id: str, session_id: str, cleanup):
        self.service = service
        self.workload = workload
        self.user_id = user_id
        self.session_id = session_id
        self.cleanup = cleanup  # removes what an operation appended, so the history size stays put
        self.n = 0

    def _get(self, config=None):
        return self.service.get_session(app_name=APP, user_id=self.user_id, session_id=self.session_id, config=config)

    def _event(self):
        self.n += 1
        # An event without a state delta: what most of a turn's events are.
        return self.workload.event(2 * (self.n % 7), f"inv-growth-{self.n}")

    def get_all(self, probe) -> None:
        session = probe.run(lambda: self._get())
        assert session is not None

    def get_recent5(self, probe) -> None:
        from google.adk.sessions.base_session_service import GetSessionConfig

        session = probe.run(lambda: self._get(GetSessionConfig(num_recent_events=5)))
        assert session is not None and len(session.events) == 5

    def append(self, probe) -> None:
        from asgiref.sync import async_to_sync
        from google.adk.sessions.base_session_service import GetSessionConfig

        # The session object comes from a cheap read (not timed): only the write is measured.
        session = async_to_sync(self._get)(GetSessionConfig(num_recent_events=0))
        event = self._event()
        probe.run(lambda: self.service.append_event(session, event))
        self.cleanup(self, event.invocation_id)

    def turn_pair(self, probe) -> None:
        event = self._event()

        async def pair():
            session = await self._get()
            await self.service.append_event(session, event)

        probe.run(pair)
        self.cleanup(self, event.invocation_id)

    def runner_turn(self, probe) -> None:
        """One real ADK Runner turn (user message in, model text out) on this session."""
        from google.genai import types

        runner = self.runner()
        message = types.Content(role="user", parts=[types.Part(text=self.workload.texts[0])])
        invocation_ids = set()

        async def turn():
            async for event in runner.run_async(user_id=self.user_id, session_id=self.session_id, new_message=message):
                invocation_ids.add(event.invocation_id)

        probe.run(turn)
        for invocation_id in invocation_ids:
            self.cleanup(self, invocation_id)

    def runner(self):
        if getattr(self, "_runner", None) is None:
            from google.adk.agents import LlmAgent
            from google.adk.runners import Runner

            # Named as the workload's model events are authored, so ADK's agent router knows them.
            agent = LlmAgent(name="resume_agent", model=ScriptedModel(), instruction="Help the user polish the resume.")
            self._runner = Runner(app_name=APP, agent=agent, session_service=self.service)
        return self._runner

    def list_user(self, probe) -> None:
        listed = probe.run(lambda: self.service.list_sessions(app_name=APP, user_id=self.user_id))
        assert listed.sessions

    def create(self, probe) -> None:
        from asgiref.sync import async_to_sync

        user_id = self.user_id + "-new"
        session = probe.run(
            lambda: self.service.create_session(app_name=APP, user_id=user_id, state=dict(self.workload.state))
        )
        async_to_sync(self.service.delete_session)(app_name=APP, user_id=user_id, session_id=session.id)

    def delete(self, probe) -> None:
        from asgiref.sync import async_to_sync

        user_id = self.user_id + "-del"

        async def fill():
            session = await self.service.create_session(app_name=APP, user_id=user_id, state=dict(self.workload.state))
            for i in range(14):
                await self.service.append_event(session, self.workload.event(i, f"inv-{i // 2}"))
            return session

        session = async_to_sync(fill)()
        probe.run(lambda: self.service.delete_session(app_name=APP, user_id=user_id, session_id=session.id))


def ours_cleanup(ops: Ops, invocation_id: str) -> None:
    # The store binds the state to the revision and each event to its number
    # (sessions_app.sealing), so dropping the newest events means rewinding the
    # revision and re-sealing the state with it too, as only the key holder can.
    from sessions_app import sealing
    from sessions_app.models import AgentSession, SessionEvent

    row = AgentSession.objects.get(app_name=APP, user_id=ops.user_id, session_id=ops.session_id)
    SessionEvent.objects.filter(session=row, invocation_id=invocation_id).delete()
    sealer = sealing.session_sealer(APP, ops.user_id, ops.session_id)
    state = sealing.open_state(sealer, row.state, row.revision)
    revision = SessionEvent.objects.filter(session=row).count()
    AgentSession.objects.filter(pk=row.pk).update(revision=revision, state=sealing.seal_state(sealer, state, revision))


def adk_cleanup_for(db_path: Path):
    def cleanup(ops: Ops, invocation_id: str) -> None:
        with sqlite3.connect(db_path) as conn:
            conn.execute("DELETE FROM events WHERE invocation_id=? AND session_id=?", (invocation_id, ops.session_id))

    return cleanup


def count_queries(ops: Ops, names: tuple[str, ...]) -> dict[str, int]:
    """Queries one call of each operation runs (ours only; BEGIN/COMMIT included)."""
    counts = {}
    for name in names:
        out: list = []
        getattr(ops, name)(QueryCounter(out))
        counts[name] = out[0]
    return counts


def runner_turn_calls(ops: Ops) -> dict:
    """Which session-service methods one Runner turn calls, and how many events get_session returned."""
    service = ops.service
    calls: dict = defaultdict(int)
    loaded: list[int] = []
    originals = {name: getattr(service, name) for name in ("get_session", "append_event", "create_session")}

    def counting(name):
        original = originals[name]

        async def wrapper(*args, **kwargs):
            calls[name] += 1
            result = await original(*args, **kwargs)
            if name == "get_session" and result is not None:
                loaded.append(len(result.events))
            return result

        return wrapper

    for name in originals:
        setattr(service, name, counting(name))
    try:
        ops.runner_turn(timer([]))
    finally:
        for name in originals:
            delattr(service, name)
    return {"calls": dict(calls), "events_loaded_per_get": loaded}


def duplicate_check_time(ops: Ops, reps: int) -> dict:
    """append_event's "is an equal copy already stored?" statement alone, for a new event id
    (it fetches the stored events with that id, to open and compare them: none here)."""
    from django.db import connection

    from sessions_app.models import AgentSession
    from sessions_app.store import _sql

    pk = AgentSession.objects.get(app_name=APP, user_id=ops.user_id, session_id=ops.session_id).pk
    statement = _sql(connection).events_with_id
    times = []
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + statement, [pk, "x"])
        plan = "; ".join(row[-1] for row in cursor.fetchall())
        for _ in range(max(reps, 20)):
            event_id = str(uuid.uuid4())
            started = time.perf_counter()
            cursor.execute(statement, [pk, event_id])
            cursor.fetchall()
            times.append(time.perf_counter() - started)
    return {"median_s": _common.median(times), "plan": plan}


def query_plans() -> dict[str, list[str]]:
    """EXPLAIN QUERY PLAN of our hot statements (SQLite)."""
    from django.db import connection

    from sessions_app.store import _sql

    sql = _sql(connection)
    statements = {
        "get_session: session + scoped state": sql.session_with_states,
        "get_session: all events": sql.events + sql.events_order,
        "get_session: 5 recent events": sql.events + sql.events_order + " " + sql.limit(0, 5),
        "append: lock session row": sql.lock_session,
        "append: stored events with this id": sql.events_with_id,
        "append: update session": sql.update_session,
        "list_sessions (one user)": sql.list_user_sessions,
        "delete: events": sql.delete_events,
        "delete: session": sql.delete_session,
    }
    plans = {}
    with connection.cursor() as cursor:
        for label, statement in statements.items():
            cursor.execute("EXPLAIN QUERY PLAN " + statement, [1] * statement.count("%s"))
            plans[label] = [row[-1] for row in cursor.fetchall()]
    return plans


# ---------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------


def run_events_dimension(tmp: Path, workload: Workload, sizes: list[int], reps: int) -> dict:
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    from sessions_app.store import DjangoSessionService

    ours = DjangoSessionService()
    adk_path = tmp / "adk_sqlite.db"
    adk = SqliteSessionService(str(adk_path))
    targets = {}
    for n in sizes:
        user = f"owner-events-{n}"
        targets[("ours", n)] = Ops(ours, workload, user, fill_ours(ours, workload, user, n), ours_cleanup)
        targets[("adk_sqlite", n)] = Ops(adk, workload, user, fill_adk(adk, adk_path, workload, user, n),
                                         adk_cleanup_for(adk_path))
    for ops in targets.values():  # warm-up
        for op in EVENT_OPS:
            getattr(ops, op)(timer([]))
    keys = list(targets)
    times: dict = {key: defaultdict(list) for key in keys}
    for rep in range(reps):
        shift = rep % len(keys)
        for key in keys[shift:] + keys[:shift]:
            for op in EVENT_OPS:
                getattr(targets[key], op)(timer(times[key][op]))
    queries = {n: count_queries(targets[("ours", n)], EVENT_OPS) for n in sizes}
    calls = {n: runner_turn_calls(targets[("ours", n)]) for n in sizes}
    check = {n: duplicate_check_time(targets[("ours", n)], reps) for n in sizes}
    summary = {
        f"{service}/{n}": {op: _common.median(values) for op, values in times[(service, n)].items()}
        for service, n in keys
    }
    return {"sizes": sizes, "median_s": summary, "queries_ours": queries, "duplicate_check": check,
            "runner_turn_calls": calls,
            "raw_s": {f"{s}/{n}": dict(v) for (s, n), v in times.items()}}


def run_sessions_dimension(tmp: Path, workload: Workload, sizes: list[int], reps: int) -> dict:
    from django.core.management import call_command

    from sessions_app.store import DjangoSessionService

    service = DjangoSessionService()
    build_s = {}
    paths = {}
    targets = {}
    for n in sizes:
        path = tmp / f"sessions_{n}.db"
        paths[n] = path
        use_database(path)
        call_command("migrate", verbosity=0, interactive=False)
        build_s[n] = fill_background(n - 1)
        user = "owner-target"
        session_id = fill_ours(service, workload, user, 14)
        targets[n] = Ops(service, workload, user, session_id, ours_cleanup)
    times: dict = {n: defaultdict(list) for n in sizes}
    queries = {}
    plans = {}
    for n in sizes:  # warm-up, query counts and plans
        use_database(paths[n])
        for op in DB_OPS:
            getattr(targets[n], op)(timer([]))
        queries[n] = count_queries(targets[n], DB_OPS)
        plans[n] = query_plans()
    for rep in range(reps):
        order = sizes if rep % 2 == 0 else sizes[::-1]
        for n in order:
            use_database(paths[n])
            targets[n].get_all(timer([]))  # reconnect and warm this file's pages (not timed)
            for op in DB_OPS:
                getattr(targets[n], op)(timer(times[n][op]))
    file_mb = {n: round(paths[n].stat().st_size / 1e6, 1) for n in sizes}
    summary = {str(n): {op: _common.median(values) for op, values in times[n].items()} for n in sizes}
    return {"sizes": sizes, "median_s": summary, "queries_ours": queries, "plans": plans,
            "build_s": build_s, "file_mb": file_mb, "raw_s": {str(n): dict(v) for n, v in times.items()}}


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


def growth_factor(a: float, b: float) -> str:
    return f"{b / a:.1f}×" if a > 0 else "-"


def render(events: dict, sessions: dict, args, info: dict, command: str, elapsed: float) -> tuple[str, dict]:
    fm = _common.fmt_ms
    lines = [f"## Growth: our session store vs history length and database size ({'quick' if args.quick else 'full'} run)", ""]
    lines += _common.header_lines(command, info)
    lines += [
        "",
        f"Medians of {args.reps} repetitions per size (sizes interleaved, order rotating); times in ms, "
        "each operation run through `async_to_sync` as a Django view runs the Runner and timed inside "
        "the event loop (the awaited call alone, thread hop included). Queries: CaptureQueriesContext, "
        "one call, BEGIN and COMMIT included (Django logs them as queries).",
        "",
        "### 1. Events in the session",
        "",
        "Histories of ~1 KB events (Chinese and English). `append_event` is timed alone (the session "
        "object it needs comes from an untimed read). `get_session (all) + append_event` is the "
        "read-then-write pair of a turn: the ADK Runner reads the session with **all** its events at "
        "the start of every turn (`Runner.run_async` passes `run_config.get_session_config`, which "
        "sessions_app/turns.py leaves unset, so nothing limits it) and then appends each event the "
        "turn produces. The last row is a whole Runner turn with a scripted model (no network): one "
        "get_session, the user's message and the model's answer appended. What an operation appends "
        "is removed again (untimed), so the history size stays put.",
        "",
    ]
    sizes = events["sizes"]
    med = events["median_s"]
    header = ["operation", "service"] + [f"{n:,} events" for n in sizes] + [f"growth {sizes[0]:,}→{sizes[-1]:,}"]
    rows = []
    for op in EVENT_OPS:
        for service in ("ours", "adk_sqlite"):
            values = [med[f"{service}/{n}"][op] for n in sizes]
            rows.append([OP_LABELS[op], service] + [fm(v) for v in values] + [growth_factor(values[0], values[-1])])
    lines += _common.md_table(header, rows)
    lines += ["", "Queries per call, ours:", ""]
    q = events["queries_ours"]
    lines += _common.md_table(
        ["operation"] + [f"{n:,} events" for n in sizes],
        [[OP_LABELS[op]] + [q[n][op] for n in sizes] for op in EVENT_OPS],
    )
    calls = events["runner_turn_calls"]
    lines += [
        "",
        "One Runner turn called the session service: " + "; ".join(
            f"{n:,} events: " + ", ".join(f"{name} ×{count}" for name, count in sorted(calls[n]["calls"].items()))
            + f" (get_session returned {', '.join(map(str, calls[n]['events_loaded_per_get']))} events)"
            for n in sizes
        ) + ".",
    ]
    check = events["duplicate_check"]
    lines += [
        "",
        "`append_event`'s duplicate check alone (\"is an equal copy of this event already stored?\": "
        "the stored events with the new event's id, to be opened and compared, none here; raw statement "
        "through Django's cursor), ms:",
        "",
    ]
    lines += _common.md_table(
        ["statement"] + [f"{n:,} events" for n in sizes] + ["plan"],
        [["stored events with this id"] + [f"{check[n]['median_s'] * 1000:.3f}" for n in sizes] + [check[sizes[-1]]["plan"]]],
    )

    def marginal(service: str, op: str) -> float:
        return (med[f"{service}/{sizes[-1]}"][op] - med[f"{service}/{sizes[0]}"][op]) / (sizes[-1] - sizes[0]) * 1000

    lines += [
        "",
        f"Each stored event adds about {marginal('ours', 'get_all'):.3f} ms to ours' full `get_session` "
        f"({marginal('adk_sqlite', 'get_all'):.3f} ms to ADK's), {marginal('ours', 'runner_turn'):.3f} ms to a whole "
        f"Runner turn on ours ({marginal('adk_sqlite', 'runner_turn'):.3f} ms on ADK's); slope between "
        f"{sizes[0]:,} and {sizes[-1]:,} events.",
        "",
        "### 2. Sessions in the database",
        "",
        "Background sessions of other users (small state, two ~0.5 KB events each), bulk-inserted with "
        "raw SQL through Django's connection; the operations run on a 14-event session of one user "
        "(`create_session` and `delete_session` on a fresh session of another user each time).",
        "",
    ]
    sizes2 = sessions["sizes"]
    med2 = sessions["median_s"]
    header = ["operation"] + [f"{n:,} sessions" for n in sizes2] + [f"growth {sizes2[0]:,}→{sizes2[-1]:,}", "queries"]
    rows = []
    for op in DB_OPS:
        values = [med2[str(n)][op] for n in sizes2]
        qs = sorted({sessions["queries_ours"][n][op] for n in sizes2})
        rows.append([OP_LABELS[op]] + [fm(v) for v in values] + [growth_factor(values[0], values[-1]),
                                                                   "/".join(map(str, qs))])
    lines += _common.md_table(header, rows)
    lines += [
        "",
        "Database files: " + ", ".join(
            f"{n:,} sessions = {sessions['file_mb'][n]} MB (built in {sessions['build_s'][n]:.1f} s)" for n in sizes2),
        "",
        f"Query plans (SQLite, EXPLAIN QUERY PLAN, {sizes2[-1]:,} sessions):",
        "",
    ]
    plans = sessions["plans"][sizes2[-1]]
    lines += _common.md_table(["statement", "plan"], [[label, "; ".join(plan)] for label, plan in plans.items()])
    lines += ["", f"Run time: {elapsed:.0f} s.", ""]
    data = {
        "command": command,
        "machine": info,
        "params": {"reps": args.reps, "quick": args.quick},
        "events_dimension": events,
        "sessions_dimension": {k: v for k, v in sessions.items()},
        "elapsed_s": elapsed,
    }
    return "\n".join(lines), data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a quick look")
    parser.add_argument("--reps", type=int, help="repetitions per size (default 15, quick 5)")
    parser.add_argument("--events", help="comma-separated history sizes (default 10,100,1000; quick 10,100)")
    parser.add_argument("--sessions", help="comma-separated database sizes (default 1000,100000; quick 1000,10000)")
    parser.add_argument("--name", default="growth", help="results file stem under benchmarks/results (default: growth)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    args.reps = args.reps or (5 if args.quick else 15)
    event_sizes = [int(x) for x in (args.events or ("10,100" if args.quick else "10,100,1000")).split(",")]
    session_sizes = [int(x) for x in (args.sessions or ("1000,10000" if args.quick else "1000,100000")).split(",")]

    command = _common.command_line(argv)
    info = _common.machine_info(PACKAGES)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="growth_bench_") as tmpdir:
        tmp = Path(tmpdir)
        _common.setup_django(tmp / "events.db")
        from sessions_app.crypto import token_context

        workload = Workload()
        # As the API does for each request; async_to_sync carries it into the store.
        with token_context(BENCH_TOKEN):
            print("events dimension...", file=sys.stderr)
            events = run_events_dimension(tmp, workload, event_sizes, args.reps)
            print("sessions dimension...", file=sys.stderr)
            sessions = run_sessions_dimension(tmp, workload, session_sizes, args.reps)
        use_database(tmp / "events.db")
    elapsed = time.perf_counter() - started
    markdown, data = render(events, sessions, args, info, command, elapsed)
    print(markdown)
    if not args.no_write:
        md_path, json_path = _common.write_results(args.name, markdown, data)
        print(f"written to {md_path} and {json_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
