"""What the benchmark scripts share: the `main()` skeleton (`--quick`, `--out`), the header naming
command and machine, Markdown tables, number formats, Django on a temporary database.

No Django import at module level, so a script can import this before it configures Django.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shlex
import sqlite3
import sys
import time
from importlib import metadata
from pathlib import Path

ROOT_DIR = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT_DIR / "benchmarks" / "results"
FIXTURES = ROOT_DIR / "tests" / "fixtures"  # the fictional resume and its markers
RESUME = (FIXTURES / "resume_lin.txt").read_text("utf-8")


def main(name: str, title: str, packages: list[str], run) -> int:
    """Parses `--quick` and `--out`, calls `run(args)` (which returns Markdown lines and a dict),
    then writes <out>/<name>.md and <out>/<name>.json under a header naming the command and machine."""
    parser = argparse.ArgumentParser(description=title)
    parser.add_argument("--quick", action="store_true", help="small sizes: shows the script works")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="output directory (default: benchmarks/results)")
    args = parser.parse_args()
    args.command = command_line()
    info = machine_info(packages)
    started = time.monotonic()
    body, data = run(args)
    elapsed = time.monotonic() - started
    heading = f"## {title}" + (" (quick run)" if args.quick else "")
    markdown = "\n".join([heading, "", *header_lines(args.command, info), "", *body, "", f"Run time: {elapsed:.0f} s."])
    data = {"command": args.command, "machine": info, "quick": args.quick, **data, "elapsed_s": elapsed}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.md").write_text(markdown + "\n", encoding="utf-8")
    text = json.dumps(_rounded(data), indent=2, ensure_ascii=False, default=str)
    # Lists of numbers on one line each, so raw samples stay readable and small.
    text = re.sub(
        r"\[\s+([-+0-9.eE,\s]+?)\s+\]", lambda m: "[" + ", ".join(m[1].split()).replace(",,", ",") + "]", text
    )
    (args.out / f"{name}.json").write_text(text + "\n", encoding="utf-8")
    print(markdown + "\n")
    print(f"wrote {args.out / name}.md and .json", file=sys.stderr)
    return 0 if data.get("valid", True) else 1


def command_line() -> str:
    """The command that ran this script, as it can be pasted from the project root."""
    script = Path(sys.argv[0]).resolve()
    script = script.relative_to(ROOT_DIR) if script.is_relative_to(ROOT_DIR) else script
    return " ".join([".venv/bin/python", str(script), *map(shlex.quote, sys.argv[1:])])


def machine_info(packages: list[str]) -> dict:
    """Date, machine, Python, SQLite and package versions (what every section starts with)."""
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    models = [line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")]
    return {
        "date_utc": dt.datetime.now(dt.UTC).strftime("%a %b %d %H:%M:%S UTC %Y"),
        "nproc": os.cpu_count(),
        "machine": platform.machine(),
        "cpu_model": (models or [platform.processor() or "unknown"])[0],
        "kernel": platform.release(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "packages": {name: metadata.version(name) for name in packages},
        "load_average_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


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
    return out + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 100 else f"{ms:.0f}"


def fmt(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None or x != x else f"{x:,.{digits}f}"


def _rounded(value):
    """Floats rounded (seconds to 0.1 µs), everything else as is, recursively."""
    if isinstance(value, dict):
        return {str(key): _rounded(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(item) for item in value]
    return round(value, 7) if isinstance(value, float) else value


def setup_django(db_path: Path) -> None:
    """Points the project's settings at a temporary SQLite file (never var/sessions.db) and migrates it;
    before anything imports Django models."""
    setup_django_url(f"sqlite:///{db_path}")


def setup_django_url(url: str) -> None:
    """The same on any database URL settings read from DATABASE_URL (dj-database-url), e.g. a fresh
    PostgreSQL database of the benchmark's own."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SECRET_KEY", "benchmark-only-not-a-secret-" + "x" * 40)
    # DEBUG would make Django keep every query in memory (and slow it down).
    os.environ["DJANGO_DEBUG"] = "0"
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
