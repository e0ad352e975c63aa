"""Where a turn's CPU goes: turns in-process through the API (Django test client, offline model, temporary SQLite
file), sampled by py-spy in every thread (the Runner runs in async_to_sync's loop thread). Each sample is charged
to the innermost frame of a known package (PARTS; Django's database backend includes SQLite's own C work), or the
standard library when none is on the stack. Figures: results/turn_profile.md.
"""

import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import _common  # noqa: E402

PACKAGES = ["Django", "djangorestframework", "google-adk", "google-genai", "pydantic", "asgiref", "py-spy"]
MESSAGES = ["Please draft my job-search plan", "Focus on remote roles", "What about salary?"]
DJANGO = "Django/DRF (with SQLite)"
PARTS = {"(adk/": "ADK", "(opentelemetry": "ADK", "(genai/": "google-genai", "(pydantic": "pydantic"}
PARTS |= dict.fromkeys(("(django/", "(rest_framework/", "(whitenoise", "(axes/", "(csp/"), DJANGO)
PARTS |= {"(asgiref/": "asgiref (thread hops)"} | dict.fromkeys(("(sessions_app/", "(agent/", "(cryptography/"), "ours")
# A thread waiting (the Runner's loop in epoll with nothing to do, the request thread waiting for the
# loop's answer) is sometimes sampled as running: its samples are not CPU work and are left out.
WAITING = ("EpollSelector.select (selectors.py", "Condition.wait (threading.py", "Event.wait (threading.py")
SETUP = ("migrate", "call_command", "_find_and_load", "SessionCreateView", "warm_up")  # not a turn's


def converse(client, sessions: list) -> int:
    for session_id, headers in sessions:
        for message in MESSAGES:
            response = _common.api_turn(client, session_id, headers, message)
            assert response.status_code == 200, response.content
    return len(sessions) * len(MESSAGES)


def warm_up(client) -> None:
    """First turns import the agent stack and fill caches: not what a turn costs."""
    converse(client, [_common.api_session(client) for _ in range(2)])


def child(sessions: str) -> None:
    """The measured workload: `sessions` sessions created first, then three turns each."""
    _common.setup_django(os.environ["DATABASE_URL"])
    from django.test import Client

    client = Client()
    warm_up(client)
    created = [_common.api_session(client) for _ in range(int(sessions))]
    started = time.process_time()
    count = converse(client, created)
    print(json.dumps({"cpu_ms_per_turn": 1000 * (time.process_time() - started) / count, "turns": count}))


def parts(raw: Path) -> tuple[dict, int]:
    """Share of the turn samples per part, from py-spy's raw (collapsed stack) output."""
    counts = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if any(name in stack for name in SETUP) or stack.split(";")[-1].startswith(WAITING):
            continue
        frames = reversed(stack.split(";"))
        part = next((p for f in frames for m, p in PARTS.items() if m in f), "standard library (threads, event loops)")
        counts[part] += int(count)
    total = sum(counts.values())
    return {part: count / total for part, count in counts.most_common()}, total


def run(args) -> tuple[list[str], dict]:
    sessions = 10 if args.quick else 60
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    with tempfile.TemporaryDirectory(prefix="turn-profile-") as tmp:
        env = _common.clean_env(
            DATABASE_URL=f"sqlite:///{tmp}/bench.db",
            DJANGO_VAR_DIR=str(Path(tmp) / "var"),
            DJANGO_LOG_LEVEL="WARNING",
            DJANGO_ALLOWED_HOSTS="testserver",
            **_common.UNTHROTTLED,
        )
        cpu_ms = _common.run_child(__file__, ["--child", str(sessions)], env)[0]["cpu_ms_per_turn"]
        raw, child_command = Path(tmp) / "raw.txt", [sys.executable, __file__, "--child", str(sessions)]
        sampled = [py_spy, "record", "-r", "250", "-f", "raw", "-o", str(raw), "--", *child_command]
        subprocess.run(sampled, env=env, capture_output=True, text=True, check=True, timeout=600)
        shares, samples = parts(raw)
    lines = [
        f"{sessions} sessions × {len(MESSAGES)} turns (messages {MESSAGES}), in one process through the Django test"
        " client, offline model, temporary SQLite file; CPU per turn from process_time() over every thread, in a"
        f" run without the sampler. Shares from py-spy at 250 Hz in a second run ({samples:,} samples of turns).",
        "",
        f"**CPU per turn: {cpu_ms:.1f} ms** (in-process: no HTTP server, no load generator).",
        "",
        *_common.md_table(
            "part | share of the samples | ms per turn",
            [[part, f"{100 * share:.1f}%", f"{cpu_ms * share:.1f}"] for part, share in shares.items()],
        ),
    ]
    return lines, {"sessions": sessions, "cpu_ms_per_turn": cpu_ms, "shares": shares, "samples": samples}


if __name__ == "__main__":
    title = "Where a turn's CPU goes (py-spy, every thread)"
    sys.exit(_common.main("turn_profile", title, PACKAGES, run, {"--child": child}))
