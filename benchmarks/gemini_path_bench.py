"""The real model path against an instant double: what a turn costs on ADK's Gemini class and google-genai's HTTP
client compared with the offline model, and whether a long run logs errors. Two child processes run the same turns
in-process through the API: one on the offline model, one with GOOGLE_GEMINI_BASE_URL on a local double of the
Gemini REST API (tests/gemini_double.py) answering at once, as the offline model does (verify_claims, save_plan,
then text). What each child's service logged (its own handlers, on stderr) is searched for ERROR records and the
double's texts. Figures: results/gemini_path.md.
"""

import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import _common  # noqa: E402

PACKAGES = ["Django", "djangorestframework", "google-adk", "google-genai", "httpx"]
MESSAGES = ["Please draft my job-search plan", "Focus on remote roles", "What about salary?"]
UPSTREAM_MARKERS = ("UPSTREAM-PLAN-4471", "UPSTREAM-REPLY-9083")  # what the double says: never in a log line
TARGET_RATIO, CALLS_PER_TURN = 1.3, 3


def child(turns: str) -> None:
    """Runs `turns` turns (sessions of three) after a warm-up session and prints one JSON line of figures."""
    _common.setup_django(os.environ["DATABASE_URL"])
    from django.test import Client

    client, seconds, cpu = Client(), [], 0.0
    warm = _common.api_session(client)
    for message in MESSAGES:  # warm-up: imports, caches, the first client
        _common.api_turn(client, *warm, message)
    for created in [_common.api_session(client) for _ in range(-(-int(turns) // len(MESSAGES)))]:
        for message in MESSAGES[: int(turns) - len(seconds)]:
            started, cpu_started = time.perf_counter(), time.process_time()
            assert _common.api_turn(client, *created, message).status_code == 200
            seconds.append(time.perf_counter() - started)
            cpu += time.process_time() - cpu_started
    figures = {"turns": len(seconds), "median_ms": 1000 * statistics.median(seconds)}
    figures |= {"p95_ms": 1000 * statistics.quantiles(seconds, n=20)[18], "cpu_ms_per_turn": 1000 * cpu / len(seconds)}
    print(json.dumps(figures))


def replay_child() -> None:
    """Sends the Gemini path's recorded model calls (JSON lines on stdin) again through google-genai's async client
    alone, no ADK and no Django, and prints its CPU per call: the part of a turn no setting of ours reaches."""
    from google import genai
    from google.genai import types

    calls = []
    for body in map(json.loads, sys.stdin):
        config = types.GenerateContentConfig.model_validate(body.get("generationConfig", {}))
        config.system_instruction = types.Content.model_validate(body["systemInstruction"])
        config.tools = [types.Tool.model_validate(tool) for tool in body.get("tools", [])]
        calls.append((body["model"], [types.Content.model_validate(c) for c in body["contents"]], config))

    async def replay() -> float:
        client, started = genai.Client(), 0.0  # GOOGLE_API_KEY and GOOGLE_GEMINI_BASE_URL: the double
        for i, (model, contents, config) in enumerate(calls):  # the first three warm up: imports, the connection
            started = time.process_time() if i == 3 else started
            await client.aio.models.generate_content(model=model, contents=contents, config=config)
        return time.process_time() - started

    print(json.dumps({"calls": len(calls) - 3, "cpu_ms_per_call": 1000 * asyncio.run(replay()) / (len(calls) - 3)}))


def run_child(turns: int, tmp: Path, name: str, **extra: str) -> dict:
    env = {"DATABASE_URL": f"sqlite:///{tmp}/{name}.db", "DJANGO_VAR_DIR": str(tmp / f"var-{name}")}
    env = _common.clean_env(**env, DJANGO_ALLOWED_HOSTS="testserver", **_common.UNTHROTTLED, **extra)
    figures, log = _common.run_child(__file__, ["--child", str(turns)], env, timeout=1200)
    figures["error_records"] = len(re.findall(r" (?:ERROR|CRITICAL) ", log))
    figures["upstream_text_logged"] = sum(log.count(marker) for marker in UPSTREAM_MARKERS)
    return figures | {"log_lines": len(log.splitlines())}


def run(args) -> tuple[list[str], dict]:
    from tests.gemini_double import GeminiDouble, call_answer, text_answer

    turns, keys = 30 if args.quick else 200, {"GOOGLE_API_KEY": "key-of-the-local-double"}
    with tempfile.TemporaryDirectory(prefix="gemini-path-") as tmp:
        offline = run_child(turns, Path(tmp), "offline")
        double = GeminiDouble().start()
        try:
            for _ in range(turns + len(MESSAGES)):
                double.answer(
                    call_answer("verify_claims", {"claims": ["Led the payments team"]}),
                    call_answer("save_plan", {"plan": f"1. Apply to three teams ({UPSTREAM_MARKERS[0]})"}),
                    text_answer(f"Saved plan v1. {UPSTREAM_MARKERS[1]}"),
                )
            keys["GOOGLE_GEMINI_BASE_URL"] = double.url
            gemini = run_child(turns, Path(tmp), "gemini", **keys)
            calls, connections = len(double.requests), len(set(double.client_ports))
            requests = double.requests[len(MESSAGES) * CALLS_PER_TURN :]
            double.answer(*(text_answer("Replayed.", request["model"]) for request in requests))
            lines = "".join(json.dumps(request) + "\n" for request in requests)
            replay = _common.run_child(__file__, ["--replay"], _common.clean_env(**keys), input=lines)[0]
        finally:
            double.stop()
    ratio = gemini["median_ms"] / offline["median_ms"]
    # Where the target would be if everything but google-genai's own work cost nothing extra.
    floor = (offline["cpu_ms_per_turn"] + CALLS_PER_TURN * replay["cpu_ms_per_call"]) / offline["cpu_ms_per_turn"]
    verdicts = [
        _common.verdict(ratio <= TARGET_RATIO, f"Gemini-path turn <= {TARGET_RATIO}x the offline turn (median):")
        + f" {gemini['median_ms']:.1f} ms vs {offline['median_ms']:.1f} ms = {ratio:.2f}x",
        _common.verdict(gemini["error_records"] == 0, f"0 ERROR records over {gemini['turns']} Gemini-path turns:")
        + f" {gemini['error_records']}",
        _common.verdict(gemini["upstream_text_logged"] == 0, "no upstream text in the log:")
        + f" {gemini['upstream_text_logged']} occurrences",
    ]
    rows = [
        [name, r["turns"], *(_common.fmt(r[k]) for k in ("median_ms", "p95_ms", "cpu_ms_per_turn"))]
        + [r["error_records"], r["upstream_text_logged"]]
        for name, r in (("offline model", offline), ("Gemini path (instant double)", gemini))
    ]
    lines = [
        f"{turns} turns per model (sessions of {len(MESSAGES)} turns), in-process through the Django test client,"
        " temporary SQLite files, after a warm-up session. Gemini path: ADK's Gemini class and google-genai over HTTP"
        " to a local double on 127.0.0.1 that answers at once: verify_claims, save_plan, then text, three model calls"
        f" per turn as the offline model makes. The double saw {calls:,} model calls on {connections} connection(s).",
        "",
        *_common.md_table(
            "model | turns | median ms | p95 ms | CPU ms/turn | ERROR records | upstream text in log", rows
        ),
        "",
        f"google-genai alone: the Gemini path's {replay['calls']:,} recorded model calls sent again through"
        " `genai.Client().aio.models.generate_content` to the same double, no ADK and no Django, cost"
        f" **{replay['cpu_ms_per_call']:.1f} ms of CPU per call**, {CALLS_PER_TURN * replay['cpu_ms_per_call']:.1f}"
        f" ms per turn. Added to the offline turn's CPU that alone is {floor:.2f}x: the lowest ratio this"
        " client allows, whatever the service does around it.",
        *_common.targets(verdicts),
    ]
    data = {"turns": turns, "offline": offline, "gemini": gemini, "model_calls": calls, "connections": connections}
    return lines, data | {"google_genai_alone": replay, "ratio_floor_of_the_client": floor, "verdicts": verdicts}


if __name__ == "__main__":
    title = "The Gemini path against an instant double, beside the offline model"
    sys.exit(_common.main("gemini_path", title, PACKAGES, run, {"--child": child, "--replay": replay_child}))
