#!/usr/bin/env python3
"""Where a turn's CPU goes: turns run in-process through the API (Django test client, offline
model, a temporary SQLite file), sampled by py-spy in every thread (the Runner runs in
async_to_sync's loop thread, not the request thread). Each sample is charged to the innermost
frame of a known package: ADK, google-genai, pydantic, Django/DRF (its database backend
includes SQLite's own work: sqlite3 is C, so py-spy sees the Python frame calling it), asgiref
(thread hops between the request thread and the loop thread), ours (sessions_app, agent), or
the standard library (threads, event loops, json) when none is on the stack.
"""

from __future__ import annotations

import collections
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common, loadgen  # noqa: E402

PACKAGES = ["Django", "djangorestframework", "google-adk", "google-genai", "pydantic", "asgiref", "py-spy"]
MESSAGES = ["Please draft my job-search plan", "Focus on remote roles", "What about salary?"]
PARTS = {
    "(adk/": "ADK",
    "(opentelemetry": "ADK",
    "(genai/": "google-genai",
    "(pydantic": "pydantic",
    "(django/": "Django/DRF (with SQLite)",
    "(rest_framework/": "Django/DRF (with SQLite)",
    "(whitenoise": "Django/DRF (with SQLite)",
    "(axes/": "Django/DRF (with SQLite)",
    "(csp/": "Django/DRF (with SQLite)",
    "(asgiref/": "asgiref (thread hops)",
    "(sessions_app/": "ours",
    "(agent/": "ours",
    "(cryptography/": "ours",
}
# A thread waiting (the Runner's loop in epoll with nothing to do, the request thread waiting for the
# loop's answer) is sometimes sampled as running: its samples are not CPU work and are left out.
WAITING = ("EpollSelector.select (selectors.py", "Condition.wait (threading.py", "Event.wait (threading.py")
SETUP = ("migrate", "call_command", "_find_and_load", "SessionCreateView", "warm_up")  # not a turn's


def converse(client, sessions: list[dict]) -> int:
    for session in sessions:
        for message in MESSAGES:
            url = f"/agent/sessions/{session['session_id']}/messages"
            response = client.post(
                url, {"message": message}, content_type="application/json", HTTP_X_SESSION_TOKEN=session["token"]
            )
            assert response.status_code == 200, response.content
    return len(sessions) * len(MESSAGES)


def create(client, count: int) -> list[dict]:
    body = {"resume_text": _common.RESUME}
    return [client.post("/agent/sessions", body, content_type="application/json").json() for _ in range(count)]


def warm_up(client) -> None:
    """First turns import the agent stack and fill caches: not what a turn costs."""
    converse(client, create(client, 2))


def turns(sessions: int) -> None:
    """The measured workload: `sessions` sessions created first, then three turns each."""
    from django.test import Client

    client = Client()
    warm_up(client)
    created = create(client, sessions)
    started = time.process_time()
    count = converse(client, created)
    print(f"cpu_ms_per_turn={1000 * (time.process_time() - started) / count:.2f} turns={count}")


def part_of(frames: list[str]) -> str:
    for frame in reversed(frames):
        for marker, part in PARTS.items():
            if marker in frame:
                return part
    return "standard library (threads, event loops)"


def parts(raw: Path) -> tuple[dict, int]:
    """Share of the turn samples per part, from py-spy's raw (collapsed stack) output."""
    counts, total = collections.Counter(), 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if any(name in stack for name in SETUP) or stack.split(";")[-1].startswith(WAITING):
            continue
        counts[part_of(stack.split(";"))] += int(count)
        total += int(count)
    return {part: count / total for part, count in counts.most_common()}, total


def run(args) -> tuple[list[str], dict]:
    sessions = 10 if args.quick else 60
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    with tempfile.TemporaryDirectory(prefix="turn-profile-") as tmp:
        env = loadgen.clean_env(
            DATABASE_URL=f"sqlite:///{tmp}/bench.db",
            DJANGO_VAR_DIR=str(Path(tmp) / "var"),
            DJANGO_LOG_LEVEL="WARNING",
            DJANGO_ALLOWED_HOSTS="testserver",
            **loadgen.UNTHROTTLED,
        )
        child = [sys.executable, __file__, "--child", str(sessions)]
        plain = subprocess.run(child, env=env, capture_output=True, text=True, check=True, timeout=600).stdout
        raw = Path(tmp) / "raw.txt"
        sampled = [py_spy, "record", "-r", "250", "-f", "raw", "-o", str(raw), "--", *child]
        subprocess.run(sampled, env=env, capture_output=True, text=True, check=True, timeout=600)
        shares, samples = parts(raw)
    cpu_ms = float(plain.split("cpu_ms_per_turn=")[1].split()[0])
    lines = [
        f"{sessions} sessions × {len(MESSAGES)} turns (messages {MESSAGES}), in one process through the Django test"
        " client, offline model, temporary SQLite file; CPU per turn from process_time() over every thread, in a"
        f" run without the sampler. Shares from py-spy at 250 Hz in a second run ({samples:,} samples of turns).",
        "",
        f"**CPU per turn: {cpu_ms:.1f} ms** (in-process: no HTTP server, no load generator).",
        "",
    ]
    rows = [[part, f"{100 * share:.1f}%", f"{cpu_ms * share:.1f}"] for part, share in shares.items()]
    lines += _common.md_table("part | share of the samples | ms per turn", rows)
    return lines, {"sessions": sessions, "cpu_ms_per_turn": cpu_ms, "shares": shares, "samples": samples}


if __name__ == "__main__":
    if "--child" in sys.argv:
        _common.setup_django_url(os.environ["DATABASE_URL"])
        turns(int(sys.argv[sys.argv.index("--child") + 1]))
        sys.exit(0)
    sys.exit(_common.main("turn_profile", "Where a turn's CPU goes (py-spy, every thread)", PACKAGES, run))
