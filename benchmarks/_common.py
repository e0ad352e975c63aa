"""Small helpers shared by the benchmark scripts: machine facts, Markdown, results files.

Only functions live here (no state, no Django import at module level), so any
benchmark script can import it before it configures Django.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import shlex
import sqlite3
import statistics
import subprocess
import sys
from importlib import metadata
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"
ROOT_DIR = Path(__file__).resolve().parent.parent


def command_line(argv: list[str] | None = None) -> str:
    """The command that ran this script, as it can be pasted from the project root."""
    script = Path(sys.argv[0]).resolve()
    try:
        script_text = str(script.relative_to(ROOT_DIR))
    except ValueError:
        script_text = str(script)
    args = sys.argv[1:] if argv is None else argv
    return " ".join([".venv/bin/python", script_text, *map(shlex.quote, args)])


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def package_versions(names: list[str]) -> dict[str, str]:
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def machine_info(packages: list[str]) -> dict:
    """Date, machine, Python, SQLite and package versions (what every section starts with)."""
    try:
        date = subprocess.run(["date", "-u"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        date = dt.datetime.now(dt.timezone.utc).strftime("%a %b %d %H:%M:%S UTC %Y")
    return {
        "date_utc": date,
        "nproc": os.cpu_count(),
        "machine": platform.machine(),
        "cpu_model": cpu_model(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "packages": package_versions(packages),
        "load_average_at_start": load_average(),
    }


def header_lines(command: str, info: dict) -> list[str]:
    packages = ", ".join(f"{name} {version}" for name, version in info["packages"].items())
    return [
        f"Command: `{command}`  ",
        f"Date: {info['date_utc']}  ",
        f"Machine: {info['nproc']} CPUs (nproc), {info['machine']}, {info['cpu_model']}, "
        f"Linux {info['kernel']}; load average at start: {info['load_average_at_start']}  ",
        f"Python {info['python']}, SQLite {info['sqlite']}; {packages}",
    ]


def md_table(headers: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return out


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 100 else f"{ms:.0f}"


def fmt_rate(per_second: float) -> str:
    return f"{per_second:,.0f}" if per_second >= 100 else f"{per_second:,.1f}"


def write_results(name: str, markdown: str, data: dict) -> tuple[Path, Path]:
    """Writes benchmarks/results/<name>.md and <name>.json; returns both paths."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    md_path = RESULTS_DIR / f"{name}.md"
    json_path = RESULTS_DIR / f"{name}.json"
    md_path.write_text(markdown if markdown.endswith("\n") else markdown + "\n", encoding="utf-8")
    text = json.dumps(_rounded(data), indent=2, ensure_ascii=False)
    # Lists of numbers on one line each, so raw samples stay readable and small.
    text = re.sub(r"\[\s+([-+0-9.eE,\s]+?)\s+\]", lambda m: "[" + ", ".join(m.group(1).split()).replace(",,", ",") + "]", text)
    json_path.write_text(text + "\n", encoding="utf-8")
    return md_path, json_path


def _rounded(value, digits: int = 7):
    """Floats rounded (seconds to 0.1 µs), everything else as is, recursively."""
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {key: _rounded(item, digits) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(item, digits) for item in value]
    return value


def setup_django(db_path: Path) -> None:
    """Points the project's settings at a temporary SQLite file and migrates it.

    Must run before anything imports Django models. Never touches var/sessions.db.
    """
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ["DATABASE_URL"] = f"sqlite:///{db_path}"
    os.environ.setdefault("DJANGO_SECRET_KEY", "benchmark-only-not-a-secret-" + "x" * 40)
    # DEBUG would make Django keep every query in memory (and slow it down).
    os.environ["DJANGO_DEBUG"] = "0"
    if str(ROOT_DIR) not in sys.path:
        sys.path.insert(0, str(ROOT_DIR))
    import django
    from django.conf import settings
    from django.core.management import call_command

    django.setup()
    name = str(settings.DATABASES["default"]["NAME"])
    if Path(name).resolve() != Path(db_path).resolve():
        raise RuntimeError(f"benchmark database is {name}, expected {db_path}")
    call_command("migrate", verbosity=0, interactive=False)
