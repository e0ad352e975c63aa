"""Session store: is our DjangoSessionService, sealing as an API request does, at least as fast as ADK's own
SqliteSessionService over a session's whole lifecycle? ADK's DatabaseSessionService and InMemorySessionService
(the floor) beside them, every call awaited inside `async_to_sync` as a Django view runs the Runner, in databases
that also hold background sessions. Figures: results/store.md."""

import gc
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import _common  # noqa: E402

APP, USER, EVENTS_PER_SESSION, BASELINE = "resume_agent", "owner-bench", 14, "adk_sqlite"
OPS = {"create": "create_session (3 KB state)", "append": "append_event (~1 KB)"}
OPS |= {"get_all": "get_session (all 14 events)", "get_recent5": "get_session (num_recent_events=5)"}
OPS |= {"list": "list_sessions (one user)", "delete": "delete_session"}
BENCH_TOKEN = "benchmark-token-not-a-real-one-0123456789abc"  # fictional: the key source of our lifecycles
PACKAGES = ["Django", "google-adk", "google-genai", "SQLAlchemy", "aiosqlite", "asgiref", "pydantic"]
EVENT_TEXT = (
    "請把「翠鳥雲端」那段經歷改寫成三個有具體數字的重點，並保留 Kubernetes 遷移的成果。"
    "Rewrite the Kingfisher Cloud role as three bullet points with measurable outcomes, "
    "keeping the Kubernetes migration and the p99 latency improvement. "
)


def _fit(text: str, target_bytes: int) -> str:
    """`text` repeated, then cut on a character boundary, to `target_bytes` of UTF-8."""
    return (text * (target_bytes // len(text.encode()) + 1)).encode()[:target_bytes].decode(errors="ignore")


def _event(index: int, text: str, invocation_id: str):
    from google.adk.events.event import Event, EventActions
    from google.genai import types

    role = "user" if index % 2 == 0 else "model"
    # What agent/tools.py records every fourth event: a growing list of plan versions.
    delta = {"plan_versions": [f"v{k + 1}: 改寫經歷重點" for k in range(index // 4 + 1)]} if index % 4 == 3 else {}
    content = types.Content(role=role, parts=[types.Part(text=text)])
    author = "user" if role == "user" else "resume_agent"
    return Event(invocation_id=invocation_id, author=author, content=content, actions=EventActions(state_delta=delta))


class Workload:
    def __init__(self, event_bytes: int = 1000, resume: str = _common.RESUME, event_text: str = EVENT_TEXT):
        self.state = {"resume_text": _fit(resume, 3000), "plan_versions": []}
        overhead = len(_event(0, "", "inv-0").model_dump_json(exclude_none=True).encode())
        self.texts = [_fit(f"[{i:02d}] " + event_text, event_bytes - overhead) for i in range(EVENTS_PER_SESSION)]

    def event(self, index: int, invocation_id: str):  # a fresh Event (new id, timestamp), built outside the timing
        return _event(index, self.texts[index], invocation_id)

    def sizes(self) -> dict:
        events = [self.event(i, "inv-0").model_dump_json(exclude_none=True).encode() for i in range(len(self.texts))]
        state = json.dumps(self.state, ensure_ascii=False).encode()
        return {"state_json_bytes": len(state), "events": [len(event) for event in events]}


async def lifecycle(service, workload: Workload) -> dict[str, list[float]]:
    """One lifecycle, timed operation by operation (seconds per call)."""
    from google.adk.sessions.base_session_service import GetSessionConfig

    times, ids = defaultdict(list), {"app_name": APP, "user_id": USER}

    async def timed(op: str, call):
        started = time.perf_counter()
        result = await call
        times[op].append(time.perf_counter() - started)
        return result

    session = await timed("create", service.create_session(**ids, state=dict(workload.state)))
    for i in range(len(workload.texts)):
        await timed("append", service.append_event(session, workload.event(i, f"inv-{i // 2}")))
    full = await timed("get_all", service.get_session(**ids, session_id=session.id))
    assert full is not None and len(full.events) == len(workload.texts), "get_session lost events"
    config = GetSessionConfig(num_recent_events=5)
    recent = await timed("get_recent5", service.get_session(**ids, session_id=session.id, config=config))
    assert recent is not None and len(recent.events) == 5
    listed = await timed("list", service.list_sessions(**ids))
    assert any(s.id == session.id for s in listed.sessions)
    await timed("delete", service.delete_session(**ids, session_id=session.id))
    return times


async def seed(service, workload: Workload, sessions: int) -> None:
    """Background sessions of other users, stored through the service itself."""
    for n in range(sessions):
        session = await service.create_session(app_name=APP, user_id=f"owner-bg-{n:04d}", state=dict(workload.state))
        for i in range(len(workload.texts)):
            await service.append_event(session, workload.event(i, f"bg-{i // 2}"))


def measure(services: dict, workload: Workload, params: dict) -> dict:
    """raw[name][rep][op] = seconds per call, services taking turns (seeded, warmed up, under the API's token)."""
    from asgiref.sync import async_to_sync

    from sessions_app.security.crypto import token_context

    names, reps, lifecycles = list(services), params["reps"], params["lifecycles"]
    raw = {name: [] for name in names}
    with token_context(BENCH_TOKEN):
        for service in services.values():
            async_to_sync(seed)(service, workload, params["background"])
            async_to_sync(lifecycle)(service, workload)
        gc.collect()
        for rep in range(reps):
            per_rep = {name: defaultdict(list) for name in names}
            for i in range(lifecycles):
                shift = (rep * lifecycles + i) % len(names)
                for name in names[shift:] + names[:shift]:
                    for op, values in async_to_sync(lifecycle)(services[name], workload).items():
                        per_rep[name][op].extend(values)
            for name in names:
                raw[name].append(dict(per_rep[name]))
            print(f"  repetition {rep + 1}/{reps} done", file=sys.stderr)
    return raw


def summarise(raw: dict) -> dict:
    """Per service and op: median over repetitions of the mean per call, and of the paired ratio to BASELINE."""
    means = {name: {op: [sum(rep[op]) / len(rep[op]) for rep in reps] for op in OPS} for name, reps in raw.items()}
    for name, reps in raw.items():
        means[name]["lifecycle"] = [sum(sum(rep[op]) for op in OPS) / len(rep["create"]) for rep in reps]

    def figures(values: list[float], op: str) -> dict:
        ratios = [a / b for a, b in zip(values, means[BASELINE][op], strict=False) if b > 0]
        return {"median_s": statistics.median(values), "ratio": statistics.median(ratios)}

    return {name: {op: figures(values, op) for op, values in per_op.items()} for name, per_op in means.items()}


def run(args) -> tuple[list[str], dict]:
    from asgiref.sync import async_to_sync

    p = dict(zip(("reps", "lifecycles", "background"), (3, 2, 5) if args.quick else (9, 12, 50), strict=True))
    with tempfile.TemporaryDirectory(prefix="store_bench_") as tmpdir:
        tmp = Path(tmpdir)
        _common.setup_django(f"sqlite:///{tmp / 'bench.db'}")
        from google.adk.sessions import DatabaseSessionService, InMemorySessionService
        from google.adk.sessions.sqlite_session_service import SqliteSessionService

        from sessions_app.adk.service import DjangoSessionService
        from sessions_app.deletion_log import store as deletion_log

        class WithoutReceipts(DjangoSessionService):  # the receipt's cost: the log's append a no-op (bench only)
            def _delete_session(self, *args):
                with mock.patch.object(deletion_log, "append", lambda erased, trigger: 0):
                    super()._delete_session(*args)

        services = {"ours": DjangoSessionService(), "ours_no_receipt": WithoutReceipts()}
        services["adk_sqlite"] = SqliteSessionService(str(tmp / "adk_sqlite.db"))
        services["adk_database"] = DatabaseSessionService(f"sqlite+aiosqlite:///{tmp / 'adk_database.db'}")
        services["in_memory"] = InMemorySessionService()
        workload = Workload()
        raw = measure(services, workload, p)
        async_to_sync(services["adk_database"].close)()
    summary, sizes = summarise(raw), workload.sizes()
    ours, base = summary["ours"]["lifecycle"], summary[BASELINE]["lifecycle"]
    receipt = summary["ours"]["delete"]["median_s"] / summary["ours_no_receipt"]["delete"]["median_s"]
    ops, cell = {**OPS, "lifecycle": "**whole lifecycle**"}, "{} ({:.2f}×)".format
    rows = [
        [label, *(cell(_common.fmt_ms(s[op]["median_s"]), s[op]["ratio"]) for s in summary.values())]
        for op, label in ops.items()
    ]
    lines = [
        f"Workload per lifecycle: create (state JSON {sizes['state_json_bytes']:,} B), {len(sizes['events'])} × "
        f"append_event ({min(sizes['events']):,}-{max(sizes['events']):,} B of event JSON), "
        "get_session (all events, then num_recent_events=5), list_sessions, delete_session. "
        f"{p['reps']} repetitions × {p['lifecycles']} lifecycles per service, services taking turns; "
        f"{p['background']} background sessions (14 events each) in every database. Each figure: median over "
        f"repetitions of the mean per call; ratio: median over repetitions of (time / {BASELINE} time).",
        "",
        f"**Headline: whole lifecycle, ours / ADK SqliteSessionService (time) = {ours['ratio']:.2f}** "
        f"({_common.fmt_ms(ours['median_s'])} ms vs {_common.fmt_ms(base['median_s'])} ms); target ≤ 1.0: "
        f"**{'met' if ours['ratio'] <= 1.0 else 'NOT met'}**.",
        "",
        _common.verdict(receipt <= 1.2, "delete_session with its receipt <= 1.2x without (ours_no_receipt: the log's")
        + f" append a no-op): {receipt:.2f}x",
        *_common.section("Time per call, ms (median) and ratio to adk_sqlite"),
        *_common.md_table(" | ".join(["operation", *summary]), rows),
    ]
    return lines, {"params": p, "workload": sizes, "summary": summary, "raw": raw}


if __name__ == "__main__":
    sys.exit(_common.main("store", "Session store: ours vs ADK's services", PACKAGES, run))
