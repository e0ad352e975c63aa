"""What the benchmark scripts share: `main()` (`--quick`, `--out`, child processes), the header naming command
and machine, Markdown tables, verdicts, number formats, Django on a database of the benchmark's own.
No Django import at module level: a script imports this before it configures Django."""

import argparse
import contextlib
import datetime as dt
import json
import math
import os
import platform
import re
import shlex
import sqlite3
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

ROOT_DIR = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT_DIR / "benchmarks" / "results"
FIXTURES = ROOT_DIR / "tests" / "fixtures"  # the fictional resume and its markers
RESUME, PY = (FIXTURES / "resume_lin.txt").read_text("utf-8"), sys.executable
_NUMBERS_RE = re.compile(r"\[\s+([-+0-9.eE,\s]+?)\s+\]")  # a JSON list of numbers: written on one line
# One client address sends every request (creates, messages, deletes), far faster than a person: throttles lifted.
UNTHROTTLED = {"AGENT_SESSION_MESSAGE_RATE": "1000000/min", "CLIENT_MESSAGE_RATE": "1000000/min"}
UNTHROTTLED |= {"AGENT_SESSION_CREATE_RATE": "1000000/hour", "AGENT_SESSION_DELETE_RATE": "1000000/min"}
# Turns in flight per client and per /24 (issue 39): every client of a benchmark is 127.0.0.1
UNTHROTTLED |= {"AGENT_MAX_TURNS_PER_CLIENT": "0", "AGENT_MAX_TURNS_PER_IPV4_24": "0"}


def main(name: str, title: str, packages: list[str], run, children: dict | None = None, options=()) -> int:
    """`script <child> args…` runs that child; else `run(args)` (Markdown lines, a dict) -> <out>/<name>.md, .json."""
    if len(sys.argv) > 1 and sys.argv[1] in (children or {}):
        children[sys.argv[1]](*sys.argv[2:])
        return 0
    parser = argparse.ArgumentParser(description=title)
    parser.add_argument("--quick", action="store_true", help="small sizes: shows the script works")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="output directory (default: benchmarks/results)")
    for flag, text in options:  # the script's own options
        parser.add_argument(flag, help=text)
    args = parser.parse_args()
    args.command, info, started = command_line(), machine_info(packages), time.monotonic()
    (body, data), elapsed = run(args), time.monotonic() - started
    heading = f"## {title}" + (" (quick run)" if args.quick else "")
    markdown = "\n".join([heading, "", *header_lines(args.command, info), "", *body, "", f"Run time: {elapsed:.0f} s."])
    data = {"command": args.command, "machine": info, "quick": args.quick, **data, "elapsed_s": elapsed}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.md").write_text(markdown + "\n", encoding="utf-8")
    text = json.dumps(_rounded(data), indent=2, ensure_ascii=False, default=str)
    text = _NUMBERS_RE.sub(lambda m: "[" + ", ".join(m[1].split()).replace(",,", ",") + "]", text)
    (args.out / f"{name}.json").write_text(text + "\n", encoding="utf-8")
    print(markdown + "\n")
    print(f"wrote {args.out / name}.md and .json", file=sys.stderr)
    return 0 if data.get("valid", True) else 1


def command_line() -> str:  # as it can be pasted from the project root
    script = Path(sys.argv[0]).resolve()
    script = script.relative_to(ROOT_DIR) if script.is_relative_to(ROOT_DIR) else script
    return " ".join([".venv/bin/python", str(script), *map(shlex.quote, sys.argv[1:])])


def machine_info(packages: list[str]) -> dict:  # what every section starts with
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    models = [line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")]
    info = {"date_utc": dt.datetime.now(dt.UTC).strftime("%a %b %d %H:%M:%S UTC %Y"), "nproc": os.cpu_count()}
    info |= {"machine": platform.machine(), "cpu_model": (models or [platform.processor() or "unknown"])[0]}
    info |= {"kernel": platform.release(), "python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    info |= {"packages": {name: metadata.version(name) for name in packages}}
    return info | {"load_average_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg())}


def header_lines(command: str, info: dict) -> list[str]:
    packages = "; " * bool(info["packages"]) + ", ".join(f"{k} {v}" for k, v in info["packages"].items())
    return [
        f"Command: `{command}`  ",
        f"Date: {info['date_utc']}  ",
        f"Machine: {info['nproc']} CPUs (nproc), {info['machine']}, {info['cpu_model']}, "
        f"Linux {info['kernel']}; load average at start: {info['load_average_at_start']}  ",
        f"Python {info['python']}, SQLite {info['sqlite']}{packages}",
    ]


def md_table(header: str, rows: list[list]) -> list[str]:
    """A Markdown table; `header` is written as it reads in Markdown: "a | b | c"."""
    out = [f"| {header} |", "|" + "---|" * len(header.split(" | "))]
    return out + ["| " + " | ".join(map(str, row)) + " |" for row in rows]


def verdict(ok: bool, text: str) -> str:
    return f"{'MET' if ok else 'MISSED'}: {text}"


def section(title: str) -> list[str]:  # a heading, with the blank lines around it
    return ["", f"### {title}", ""]


def targets(verdicts: list[str]) -> list[str]:
    return [*section("Targets"), *(f"- {v}" for v in verdicts)]


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 100 else f"{ms:.0f}"


def fmt(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None or x != x else f"{x:,.{digits}f}"


def slashed(figures: dict, keys: str = "p50 p95 p99", digits: int = 0) -> str:  # "12/30/41": the figures of `keys`
    return "/".join(fmt(figures[key], digits) for key in keys.split())


def tally(counts: dict, item: str = "`{}` x{}") -> str:  # "`a` x2, `b` x1"
    return ", ".join(item.format(*pair) for pair in counts.items())


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100), linear between closest ranks (numpy's default); NaN for none."""
    if not values:
        return math.nan
    if not 0 <= q <= 100:
        raise ValueError("q must be within 0..100")
    xs, pos = sorted(values), (len(values) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summarize_ms(latencies_s: list[float]) -> dict:
    ms = [x * 1000 for x in latencies_s]
    return {"n": len(ms), **{f"p{q}": percentile(ms, q) for q in (50, 95, 99)}, "max": max(ms) if ms else math.nan}


def pss_kb(pid: int | str) -> int:
    """Proportional set size: a page that forked processes share is split between them (counted once in all)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return 0


def _rounded(value):  # floats rounded (seconds to 0.1 µs), recursively
    if isinstance(value, dict):
        return {str(key): _rounded(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(item) for item in value]
    return round(value, 7) if isinstance(value, float) else value


def clean_env(**extra: str) -> dict:  # for a process we start: no model credentials, this project importable
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "PYTEST", "DJANGO_"))}
    return {**env, "PYTHONPATH": str(ROOT_DIR), "DJANGO_SECRET_KEY": "benchmark-only-key", **extra}


def run_child(script: str, args: list[str], env: dict, timeout: float = 600) -> tuple[dict, str]:
    """`script args…` in a fresh process (`main`'s children): its last line of output as JSON, and its stderr."""
    done = subprocess.run([PY, script, *args], cwd=ROOT_DIR, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode:
        raise RuntimeError(f"{args[0]} child failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def setup_django(url: str) -> None:
    """Django on DATABASE_URL `url` (the benchmark's own database, never var/sessions.db), migrated."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SECRET_KEY", "benchmark-only-not-a-secret-" + "x" * 40)
    os.environ["DJANGO_DEBUG"] = "0"  # DEBUG would make Django keep every query in memory (and slow it down)
    import dj_database_url
    import django
    from django.conf import settings
    from django.core.management import call_command

    django.setup()
    # Never the service's own database: settings must have taken this URL.
    name, expected = str(settings.DATABASES["default"]["NAME"]), str(dj_database_url.parse(url)["NAME"])
    if name != expected:
        raise RuntimeError(f"benchmark database is {name}, expected {expected}")
    call_command("migrate", verbosity=0, interactive=False)


def api_session(client, resume: str = RESUME) -> tuple[str, dict]:
    """A session created through the API (Django's test client): its id, and the headers carrying its token."""
    created = client.post("/agent/sessions", {"resume_text": resume}, content_type="application/json")
    assert created.status_code == 201, created.content
    return created.json()["session_id"], {"HTTP_X_SESSION_TOKEN": created.json()["token"]}


def api_turn(client, session_id: str, headers: dict, message: str):
    url = f"/agent/sessions/{session_id}/messages"
    return client.post(url, {"message": message}, content_type="application/json", **headers)


def setup_in_process(tmp: Path, **env: str) -> None:
    """Django in this process for the API's test client, on <tmp>/bench.db: offline model, throttles lifted."""
    os.environ.update(DJANGO_CACHE_DIR=str(tmp / "cache"), DJANGO_ALLOWED_HOSTS="testserver", **UNTHROTTLED, **env)
    for name in ("GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        os.environ.pop(name, None)  # the offline model: no network, no cost
    setup_django(f"sqlite:///{tmp / 'bench.db'}")
