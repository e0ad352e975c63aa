#!/usr/bin/env python3
"""One session driven to its limits: turn time, bytes stored and export size per turn.

Through the API in-process (Django's test client, the offline model, the
project's settings on a temporary SQLite file), one session per scenario
gets a 50,000-character resume (RESUME_MAX_CHARS) and then 4,000-character
messages (MESSAGE_MAX_CHARS) until the service refuses a turn:

  * latin: ASCII text;
  * cjk: Chinese text, the most bytes per character once stored (the state
    is ASCII JSON, so each CJK character of the resume takes 6 bytes).

Per turn: the time of the POST, the bytes the session stores afterwards
(sealed state plus sealed events, `selectors.session_usage`), the bytes the
turn added and its largest stored event (the save_plan event was the one
that grew quadratically before plan versions had keys of their own), and
every few turns the export's size and time. The message throttles are lifted
(one client sends every message); SESSION_MAX_TURNS, SESSION_MAX_BYTES,
AGENT_MAX_LLM_CALLS and PLAN_MAX_VERSIONS keep their defaults.

Run from the project root:
    .venv/bin/python benchmarks/session_limits_bench.py            # 50 turns per scenario (~2 minutes)
    .venv/bin/python benchmarks/session_limits_bench.py --quick    # SESSION_MAX_TURNS=10 (~20 s)
Writes benchmarks/results/session_limits.md and .json (--name changes the stem).
All text is fictional.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common  # noqa: E402

PACKAGES = ["Django", "djangorestframework", "google-adk", "google-genai"]
EXPORT_EVERY = 5  # turns between two export measurements

_LATIN_LINES = [
    "- Logistics analyst, Harbor Freight Lines (fictional), 2019-2024: cut late deliveries by 12%.",
    "- Built Python and SQL dashboards for 40 depots; trained 15 planners on forecasting.",
]
_CJK_LINES = [
    "- 物流分析師，海港貨運（虛構公司），2019-2024：將延遲交貨減少百分之十二。",
    "- 以 Python 與 SQL 建立四十個倉庫的儀表板，並訓練十五位規劃人員進行預測。",
]


def _fill(lines: list[str], chars: int) -> str:
    text, index = [], 0
    while sum(len(line) + 1 for line in text) < chars:
        text.append(lines[index % len(lines)])
        index += 1
    return "\n".join(text)[:chars]


def resume_text(kind: str, chars: int) -> str:
    name, head = ("Lin Mei-Hua", "Experience") if kind == "latin" else ("林美華", "經歷")
    body = _fill(_LATIN_LINES if kind == "latin" else _CJK_LINES, chars)
    return f"{name}\n{head}\n{body}"[:chars]


def message_text(kind: str, chars: int, turn: int) -> str:
    lead = f"Turn {turn}: please revise the plan. " if kind == "latin" else f"第 {turn} 輪：請修改計畫。"
    filler = "Focus on remote roles in logistics. " if kind == "latin" else "請著重遠端的物流職缺。"
    return (lead + filler * (chars // len(filler) + 1))[:chars]


def run_scenario(kind: str, max_turns_to_try: int) -> dict:
    from django.conf import settings
    from rest_framework.test import APIClient

    from sessions_app import selectors
    from sessions_app.models import AgentSession

    client = APIClient()
    created = client.post("/agent/sessions", {"resume_text": resume_text(kind, settings.RESUME_MAX_CHARS)}, format="json")
    assert created.status_code == 201, created.content
    session_id, token = created.json()["session_id"], created.json()["token"]
    headers = {"HTTP_X_SESSION_TOKEN": token}
    session = AgentSession.objects.get(session_id=session_id)
    stored = selectors.session_usage(session).size_bytes
    turns, exports, refusal = [], [], None
    for number in range(1, max_turns_to_try + 1):
        last_pk = session.events.order_by("-pk").values_list("pk", flat=True).first() or 0
        message = message_text(kind, settings.MESSAGE_MAX_CHARS, number)
        started = time.perf_counter()
        response = client.post(f"/agent/sessions/{session_id}/messages", {"message": message}, format="json", **headers)
        elapsed = time.perf_counter() - started
        if response.status_code != 200:
            refusal = {"turn": number, "status": response.status_code, **response.json(), "seconds": elapsed}
            break
        rows = list(session.events.filter(pk__gt=last_pk).values_list("event_id", "timestamp", "event_data"))
        added = [len(data) for _, _, data in rows]
        now_stored = selectors.session_usage(session).size_bytes
        turns.append({"turn": number, "seconds": elapsed, "stored_bytes": now_stored,
                      "added_bytes": now_stored - stored, "events_added": len(added), "largest_event_bytes": max(added),
                      "save_plan_event_bytes": save_plan_event_bytes(session, token, rows)})
        stored = now_stored
        if number % EXPORT_EVERY == 0 or number == 1:
            exports.append(measure_export(client, session_id, headers, number, now_stored))
    if not exports or exports[-1]["turn"] != turns[-1]["turn"]:
        exports.append(measure_export(client, session_id, headers, turns[-1]["turn"], stored))
    events = session.events.count()
    client.delete(f"/agent/sessions/{session_id}", **headers)
    return {"kind": kind, "turns": turns, "exports": exports, "refusal": refusal, "events": events}


def save_plan_event_bytes(session, token: str, rows: list[tuple]) -> int:
    """Sealed size of the turn's event whose state delta saves a plan (the one that grew quadratically)."""
    from google.adk.events.event import Event

    from agent.plans import PLAN_COUNT_KEY
    from sessions_app import sealing
    from sessions_app.crypto import token_context

    with token_context(token):
        sealer = sealing.session_sealer(session.app_name, session.user_id, session.session_id)
        for event_id, timestamp, data in rows:
            event = Event.model_validate_json(sealing.open_event(sealer, event_id, timestamp, data))
            if event.actions and PLAN_COUNT_KEY in (event.actions.state_delta or {}):
                return len(data)
    return 0


def measure_export(client, session_id: str, headers: dict, turn: int, stored: int) -> dict:
    started = time.perf_counter()
    response = client.get(f"/agent/sessions/{session_id}/export", **headers)
    elapsed = time.perf_counter() - started
    assert response.status_code == 200
    size = len(response.content)
    return {"turn": turn, "seconds": elapsed, "bytes": size, "stored_bytes": stored, "ratio": size / stored}


def _kb(value: float) -> str:
    return f"{value / 1024:,.1f}"


def render(results: list[dict], limits: dict, args, info: dict, command: str, elapsed: float) -> tuple[str, dict]:
    title = "## Session limits: one session driven to its maximum size" + (" (quick run)" if args.quick else " (full run)")
    lines = [title, "", *_common.header_lines(command, info), ""]
    lines.append(
        "In-process through the API (Django test client, offline model, temporary SQLite file), message"
        " throttles lifted. Limits in force: " + ", ".join(f"`{k}` = {v:,}" for k, v in limits.items()) + "."
        " Each scenario: one session, a 50,000-character resume, then 4,000-character messages until a turn is"
        " refused. Sizes in KB (1,024 bytes) of stored, sealed bytes; times in ms."
    )
    data = {"info": info, "command": command, "quick": args.quick, "limits": limits, "scenarios": results,
            "elapsed_s": elapsed}
    for result in results:
        turns = result["turns"]
        lines += ["", f"### {result['kind']}", ""]
        shown = [t for t in turns if t["turn"] in (1, 2, 5) or t["turn"] % 10 == 0 or t is turns[-1]]
        lines += _common.md_table(
            ["turn", "turn time (ms)", "stored after (KB)", "added by the turn (KB)", "largest event (KB)",
             "save_plan event (KB)"],
            [[t["turn"], _common.fmt_ms(t["seconds"]), _kb(t["stored_bytes"]), _kb(t["added_bytes"]),
              _kb(t["largest_event_bytes"]), _kb(t["save_plan_event_bytes"])] for t in shown],
        )
        lines += [""]
        lines += _common.md_table(
            ["after turn", "export (KB)", "export / stored", "export time (ms)"],
            [[e["turn"], _kb(e["bytes"]), f"{e['ratio']:.2f}", _common.fmt_ms(e["seconds"])] for e in result["exports"]],
        )
        refusal = result["refusal"]
        first, last = turns[0], turns[-1]
        lines += [
            "",
            f"{len(turns)} turns, {result['events']} events, {_kb(last['stored_bytes'])} KB stored. Turn time"
            f" {_common.fmt_ms(first['seconds'])} ms (turn 1) → {_common.fmt_ms(last['seconds'])} ms (turn"
            f" {last['turn']}, noisy: the machine is shared); the save_plan event {_kb(first['save_plan_event_bytes'])}"
            f" KB → {_kb(last['save_plan_event_bytes'])} KB: it holds only its own version (with one list of every"
            " version it grew by a plan per turn: 8.5 KB at turn 1, 484 KB at turn 60, in the issue's measurement).",
        ]
        if refusal:
            lines.append(
                f"Turn {refusal['turn']} was refused: HTTP {refusal['status']}, code `{refusal.get('code')}`, in"
                f" {_common.fmt_ms(refusal['seconds'])} ms (before the model runs)."
            )
    lines += ["", f"Run time: {elapsed:.0f} s."]
    return "\n".join(lines), data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="SESSION_MAX_TURNS=10")
    parser.add_argument("--name", default="session_limits", help="results file stem")
    args = parser.parse_args(argv)
    started = time.monotonic()
    command = _common.command_line(argv)
    info = _common.machine_info(PACKAGES)
    with tempfile.TemporaryDirectory(prefix="session-limits-bench-") as tmp:
        os.environ.update({
            "DJANGO_CACHE_DIR": str(Path(tmp) / "cache"),
            "DJANGO_ALLOWED_HOSTS": "testserver",
            "SESSION_MESSAGE_RATE": "1000000/min",
            "CLIENT_MESSAGE_RATE": "1000000/min",
            "SESSION_CREATE_RATE": "1000000/hour",
        })
        for name in ("GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
            os.environ.pop(name, None)  # the offline model: no network, no cost
        if args.quick:
            os.environ["SESSION_MAX_TURNS"] = "10"
        _common.setup_django(Path(tmp) / "bench.db")
        from django.conf import settings

        from agent.plans import max_plan_versions

        limits = {
            "SESSION_MAX_TURNS": settings.SESSION_MAX_TURNS,
            "SESSION_MAX_BYTES": settings.SESSION_MAX_BYTES,
            "AGENT_MAX_LLM_CALLS": settings.AGENT_MAX_LLM_CALLS,
            "PLAN_MAX_VERSIONS": max_plan_versions(),
            "RESUME_MAX_CHARS": settings.RESUME_MAX_CHARS,
            "MESSAGE_MAX_CHARS": settings.MESSAGE_MAX_CHARS,
        }
        results = [run_scenario(kind, settings.SESSION_MAX_TURNS + 1) for kind in ("latin", "cjk")]
    markdown, data = render(results, limits, args, info, command, time.monotonic() - started)
    md_path, _ = _common.write_results(args.name, markdown, data)
    print(markdown)
    print(f"\nwrote {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
