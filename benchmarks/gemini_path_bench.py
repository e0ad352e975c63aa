#!/usr/bin/env python3
"""The real model path against an instant double: what a turn costs on ADK's Gemini class and
google-genai's HTTP client compared with the offline model, and whether a long run logs errors.

Two child processes run the same turns in-process through the API (Django test client, temporary
SQLite file): one on the offline model, one with GOOGLE_API_KEY set and GOOGLE_GEMINI_BASE_URL on
a local double of the Gemini REST API (tests/gemini_double.py) that answers at once, in this
process. The double answers each turn as the offline model does: verify_claims, then save_plan,
then a text reply (three model calls). Each child's records of ERROR and above are counted
in what the service logged (its own handlers, on stderr) and looks for the double's texts there.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common, loadgen  # noqa: E402

PACKAGES = ["Django", "djangorestframework", "google-adk", "google-genai", "httpx"]
MESSAGES = ["Please draft my job-search plan", "Focus on remote roles", "What about salary?"]
# What the double says: none of it may reach a log line.
UPSTREAM_MARKERS = ("UPSTREAM-PLAN-4471", "UPSTREAM-REPLY-9083")
TARGET_RATIO = 1.3


def script_turn(double) -> None:
    from tests.gemini_double import call_answer, text_answer

    double.answer(
        call_answer("verify_claims", {"claims": ["Led the payments team"]}),
        call_answer("save_plan", {"plan": f"1. Apply to three teams ({UPSTREAM_MARKERS[0]})"}),
        text_answer(f"Saved plan v1. {UPSTREAM_MARKERS[1]}"),
    )


def child(turns: int) -> None:
    """Runs `turns` turns (sessions of three) and prints one JSON line of figures."""
    _common.setup_django_url(os.environ["DATABASE_URL"])
    from django.test import Client

    client = Client()

    def session() -> dict:
        body = {"resume_text": _common.RESUME}
        return client.post("/agent/sessions", body, content_type="application/json").json()

    def turn(created: dict, message: str) -> float:
        url = f"/agent/sessions/{created['session_id']}/messages"
        started = time.perf_counter()
        response = client.post(
            url, {"message": message}, content_type="application/json", HTTP_X_SESSION_TOKEN=created["token"]
        )
        assert response.status_code == 200, response.status_code
        return time.perf_counter() - started

    warm = session()
    for message in MESSAGES:  # warm-up: imports, caches, the first client
        turn(warm, message)
    seconds, cpu, sessions = [], 0.0, [session() for _ in range(-(-turns // len(MESSAGES)))]
    for created in sessions:
        for message in MESSAGES:
            if len(seconds) == turns:
                break
            started = time.process_time()
            seconds.append(turn(created, message))
            cpu += time.process_time() - started
    print(
        json.dumps(
            {
                "turns": len(seconds),
                "median_ms": 1000 * statistics.median(seconds),
                "p95_ms": 1000 * statistics.quantiles(seconds, n=20)[18],
                "cpu_ms_per_turn": 1000 * cpu / len(seconds),
            }
        )
    )


def replay_child() -> None:
    """Sends the Gemini path's recorded model calls (JSON lines on stdin) again through
    google-genai's async client alone, no ADK and no Django, and prints its CPU per call:
    the part of a Gemini-path turn no setting of ours reaches."""
    import asyncio

    from google import genai
    from google.genai import types

    calls = []
    for line in sys.stdin:
        body = json.loads(line)
        config = types.GenerateContentConfig.model_validate(body.get("generationConfig", {}))
        config.system_instruction = types.Content.model_validate(body["systemInstruction"])
        config.tools = [types.Tool.model_validate(tool) for tool in body.get("tools", [])]
        contents = [types.Content.model_validate(content) for content in body["contents"]]
        calls.append((body["model"], contents, config))

    async def replay() -> float:
        client = genai.Client()  # GOOGLE_API_KEY and GOOGLE_GEMINI_BASE_URL: the double
        for model, contents, config in calls[:3]:  # warm-up: imports, the connection
            await client.aio.models.generate_content(model=model, contents=contents, config=config)
        started = time.process_time()
        for model, contents, config in calls[3:]:
            await client.aio.models.generate_content(model=model, contents=contents, config=config)
        return time.process_time() - started

    cpu = asyncio.run(replay())
    print(json.dumps({"calls": len(calls) - 3, "cpu_ms_per_call": 1000 * cpu / (len(calls) - 3)}))


def run_replay(requests: list[dict], double) -> dict:
    from tests.gemini_double import text_answer

    double.answer(*(text_answer("Replayed.", request["model"]) for request in requests))
    env = loadgen.clean_env(GOOGLE_API_KEY="key-of-the-local-double", GOOGLE_GEMINI_BASE_URL=double.url)
    lines = "".join(json.dumps(request) + "\n" for request in requests)
    command = [sys.executable, __file__, "--replay"]
    done = subprocess.run(
        command, env=env, input=lines, capture_output=True, text=True, timeout=600, cwd=_common.ROOT_DIR
    )
    if done.returncode:
        raise RuntimeError(f"replay child failed (exit {done.returncode})")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_child(turns: int, tmp: Path, name: str, **extra: str) -> dict:
    env = loadgen.clean_env(
        DATABASE_URL=f"sqlite:///{tmp}/{name}.db",
        DJANGO_VAR_DIR=str(tmp / f"var-{name}"),
        DJANGO_ALLOWED_HOSTS="testserver",
        **loadgen.UNTHROTTLED,
        **extra,
    )
    command = [sys.executable, __file__, "--child", str(turns)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200, cwd=_common.ROOT_DIR)
    if done.returncode:
        raise RuntimeError(f"{name} child failed (exit {done.returncode})")
    # What the service logged (its own handlers and redaction, on stderr): records of ERROR and above,
    # and the double's texts anywhere in it.
    log = done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["error_records"] = len(re.findall(r" (?:ERROR|CRITICAL) ", log))
    figures["upstream_text_logged"] = sum(log.count(marker) for marker in UPSTREAM_MARKERS)
    figures["log_lines"] = len(log.splitlines())
    return figures


def run(args) -> tuple[list[str], dict]:
    from tests.gemini_double import GeminiDouble

    turns = 30 if args.quick else 200
    with tempfile.TemporaryDirectory(prefix="gemini-path-") as tmp:
        offline = run_child(turns, Path(tmp), "offline")
        double = GeminiDouble().start()
        try:
            for _ in range(turns + len(MESSAGES)):
                script_turn(double)
            gemini = run_child(
                turns, Path(tmp), "gemini", GOOGLE_API_KEY="key-of-the-local-double", GOOGLE_GEMINI_BASE_URL=double.url
            )
            calls, connections = len(double.requests), len(set(double.client_ports))
            replay = run_replay(double.requests[len(MESSAGES) * 3 :], double)
        finally:
            double.stop()
    ratio = gemini["median_ms"] / offline["median_ms"]
    calls_per_turn = 3
    # Where the target would be if everything but google-genai's own work cost nothing extra.
    floor = (offline["cpu_ms_per_turn"] + calls_per_turn * replay["cpu_ms_per_call"]) / offline["cpu_ms_per_turn"]
    verdicts = [
        f"{'MET' if ratio <= TARGET_RATIO else 'MISSED'}: Gemini-path turn <= {TARGET_RATIO}x the offline turn"
        f" (median): {gemini['median_ms']:.1f} ms vs {offline['median_ms']:.1f} ms = {ratio:.2f}x",
        f"{'MET' if gemini['error_records'] == 0 else 'MISSED'}: 0 ERROR records over {gemini['turns']} Gemini-path"
        f" turns: {gemini['error_records']}",
        f"{'MET' if gemini['upstream_text_logged'] == 0 else 'MISSED'}: no upstream text in the log:"
        f" {gemini['upstream_text_logged']} occurrences",
    ]
    lines = [
        f"{turns} turns per model (sessions of {len(MESSAGES)} turns), in-process through the Django test client,"
        " temporary SQLite files, after a warm-up session. Gemini path: ADK's Gemini class and google-genai over HTTP"
        " to a local double on 127.0.0.1 that answers at once: verify_claims, save_plan, then text, three model calls"
        f" per turn as the offline model makes. The double saw {calls:,} model calls on {connections} connection(s).",
        "",
    ]
    rows = [
        [name, r["turns"], _common.fmt(r["median_ms"]), _common.fmt(r["p95_ms"]), _common.fmt(r["cpu_ms_per_turn"])]
        + [r["error_records"], r["upstream_text_logged"]]
        for name, r in (("offline model", offline), ("Gemini path (instant double)", gemini))
    ]
    header = "model | turns | median ms | p95 ms | CPU ms/turn | ERROR records | upstream text in log"
    lines += _common.md_table(header, rows)
    lines += [
        "",
        f"google-genai alone: the Gemini path's {replay['calls']:,} recorded model calls sent again through"
        " `genai.Client().aio.models.generate_content` to the same double, no ADK and no Django, cost"
        f" **{replay['cpu_ms_per_call']:.1f} ms of CPU per call**, {calls_per_turn * replay['cpu_ms_per_call']:.1f}"
        f" ms per turn. Added to the offline turn's CPU that alone is {floor:.2f}x: the lowest ratio this"
        " client allows, whatever the service does around it.",
    ]
    lines += ["", "### Targets", "", *(f"- {v}" for v in verdicts)]
    data = {"turns": turns, "offline": offline, "gemini": gemini, "model_calls": calls, "connections": connections}
    data |= {"google_genai_alone": replay, "ratio_floor_of_the_client": floor}
    return lines, data | {"verdicts": verdicts}


if __name__ == "__main__":
    if "--replay" in sys.argv:
        replay_child()
        sys.exit(0)
    if "--child" in sys.argv:
        child(int(sys.argv[sys.argv.index("--child") + 1]))
        sys.exit(0)
    title = "The Gemini path against an instant double, beside the offline model"
    sys.exit(_common.main("gemini_path", title, PACKAGES, run))
