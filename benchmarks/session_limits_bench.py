"""One session driven to its limits: do the per-session limits bound what a session stores and exports, and is the
turn over the limit refused before the model runs? In-process through the API, offline model, the largest resume
and messages allowed, in latin and cjk (the most bytes per character once stored); all text fictional.
Figures: results/session_limits.md."""

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import _common  # noqa: E402
from benchmarks._common import fmt_ms  # noqa: E402

PACKAGES = ["Django", "djangorestframework", "google-adk", "google-genai"]
EXPORT_EVERY = 5  # turns between two export measurements
TURNS = "turn | turn time (ms) | turn CPU (ms) | stored after (KB) | added by the turn (KB) | largest event (KB)"
LIMITS = ("AGENT_SESSION_MAX_TURNS", "AGENT_SESSION_MAX_BYTES", "AGENT_MAX_LLM_CALLS", "RESUME_MAX_CHARS")
LIMITS += ("MESSAGE_MAX_CHARS",)
RESUME_LINES = {
    "latin": "- Logistics analyst, Harbor Freight Lines (fictional), 2019-2024: cut late deliveries by 12%.\n"
    "- Built Python and SQL dashboards for 40 depots; trained 15 planners on forecasting.\n",
    "cjk": "- 物流分析師，海港貨運（虛構公司），2019-2024：將延遲交貨減少百分之十二。\n"
    "- 以 Python 與 SQL 建立四十個倉庫的儀表板，並訓練十五位規劃人員進行預測。\n",
}


def resume_text(kind: str, chars: int) -> str:
    head = "Lin Mei-Hua\nExperience\n" if kind == "latin" else "林美華\n經歷\n"
    return (head + RESUME_LINES[kind] * (chars // len(RESUME_LINES[kind]) + 1))[:chars]


def message_text(kind: str, chars: int, turn: int) -> str:
    lead = f"Turn {turn}: please revise the plan. " if kind == "latin" else f"第 {turn} 輪：請修改計畫。"
    filler = "Focus on remote roles in logistics. " if kind == "latin" else "請著重遠端的物流職缺。"
    return (lead + filler * (chars // len(filler) + 1))[:chars]


def run_scenario(kind: str, max_turns_to_try: int) -> dict:
    """Per turn: the POST's time and CPU (of the whole process: the Runner runs in another thread; steadier than
    wall time on a shared machine), the sealed bytes stored (`storage.sessions.usage`), what the turn added and its
    largest event; every EXPORT_EVERY turns the export's size and time."""
    from django.conf import settings
    from django.test import Client

    from sessions_app.models import AgentSession
    from sessions_app.storage import sessions

    client = Client()
    session_id, headers = _common.api_session(client, resume_text(kind, settings.RESUME_MAX_CHARS))
    session = AgentSession.objects.get(session_id=session_id)
    stored, turns, exports, refusal = sessions.usage(session.pk).size_bytes, [], [], None

    def export(turn: int) -> None:
        started = time.perf_counter()
        response = client.get(f"/agent/sessions/{session_id}/export", **headers)
        elapsed, size = time.perf_counter() - started, len(response.content)
        assert response.status_code == 200
        row = {"turn": turn, "seconds": elapsed, "bytes": size, "stored_bytes": stored}
        exports.append(row | {"ratio": size / stored})

    for number in range(1, max_turns_to_try + 1):
        last_pk = session.events.order_by("-pk").values_list("pk", flat=True).first() or 0
        message = message_text(kind, settings.MESSAGE_MAX_CHARS, number)
        started, cpu_started = time.perf_counter(), time.process_time()
        response = _common.api_turn(client, session_id, headers, message)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        if response.status_code != 200:
            refusal = {"turn": number, "status": response.status_code, **response.json(), "seconds": elapsed}
            break
        added = [len(data) for data in session.events.filter(pk__gt=last_pk).values_list("event_data", flat=True)]
        now_stored = sessions.usage(session.pk).size_bytes
        turn = {"turn": number, "seconds": elapsed, "cpu_seconds": cpu, "stored_bytes": now_stored}
        turn |= {"added_bytes": now_stored - stored, "events_added": len(added), "largest_event_bytes": max(added)}
        turns.append(turn)
        stored = now_stored
        if number % EXPORT_EVERY == 0 or number == 1:
            export(number)
    if not exports or exports[-1]["turn"] != turns[-1]["turn"]:
        export(turns[-1]["turn"])
    events = session.events.count()
    client.delete(f"/agent/sessions/{session_id}", **headers)
    return {"kind": kind, "turns": turns, "exports": exports, "refusal": refusal, "events": events}


def judge(results: list[dict]) -> list[str]:
    """Median CPU of the last three turns the session allowed against turns 2-4 (turn 1 also warms the process)."""
    verdicts = []
    for result in results:
        turns = result["turns"]
        fresh, largest = (statistics.median(t["cpu_seconds"] for t in some) for some in (turns[1:4], turns[-3:]))
        what = f"a turn at the largest allowed session ({result['kind']}) <= 3x a fresh one (issue 14), CPU per turn:"
        what += f" {fmt_ms(largest)} ms at turns {turns[-3]['turn']}-{turns[-1]['turn']} vs {fmt_ms(fresh)} ms at turns"
        verdicts.append(_common.verdict(largest / fresh <= 3, what + f" 2-4 = {largest / fresh:.2f}x"))
    return verdicts


def run(args) -> tuple[list[str], dict]:
    with tempfile.TemporaryDirectory(prefix="session-limits-bench-") as tmp:
        _common.setup_in_process(Path(tmp), **({"AGENT_SESSION_MAX_TURNS": "10"} if args.quick else {}))
        from django.conf import settings

        from agent.plans import max_plan_versions

        limits = {name: getattr(settings, name) for name in LIMITS} | {"PLAN_MAX_VERSIONS": max_plan_versions()}
        results = [run_scenario(kind, settings.AGENT_SESSION_MAX_TURNS + 1) for kind in ("latin", "cjk")]
    kb = "{:,.1f}".format
    lines = [
        "In-process through the API (Django test client, offline model, temporary SQLite file), message"
        " throttles lifted. Limits in force: " + ", ".join(f"`{k}` = {v:,}" for k, v in limits.items()) + "."
        " Each scenario: one session, a 50,000-character resume, then 4,000-character messages until a turn is"
        " refused. Sizes in KB (1,024 bytes) of stored, sealed bytes; times in ms."
    ]
    for result in results:
        turns, refusal, last, exports = result["turns"], result["refusal"], result["turns"][-1], result["exports"]
        shown = [t for t in turns if t["turn"] in (1, 2, 5) or t["turn"] % 10 == 0 or t is last]
        lines += _common.section(result["kind"])
        sizes = [[kb(t[k] / 1024) for k in ("stored_bytes", "added_bytes", "largest_event_bytes")] for t in shown]
        rows = [[t["turn"], fmt_ms(t["seconds"]), fmt_ms(t["cpu_seconds"]), *sizes[i]] for i, t in enumerate(shown)]
        lines += _common.md_table(TURNS, rows) + [""]
        exports = [[e["turn"], kb(e["bytes"] / 1024), f"{e['ratio']:.2f}", fmt_ms(e["seconds"])] for e in exports]
        lines += _common.md_table("after turn | export (KB) | export / stored | export time (ms)", exports)
        lines += ["", f"{len(turns)} turns, {result['events']} events, {kb(last['stored_bytes'] / 1024)} KB stored."]
        if refusal:
            lines += [f"Turn {refusal['turn']} was refused: HTTP {refusal['status']}, code `{refusal.get('code')}`,"]
            lines[-1] += f" in {fmt_ms(refusal['seconds'])} ms (before the model runs)."
    verdicts = judge(results)
    return lines + _common.targets(verdicts), {"limits": limits, "scenarios": results, "verdicts": verdicts}


if __name__ == "__main__":
    sys.exit(_common.main("session_limits", "Session limits: one session driven to its maximum size", PACKAGES, run))
