"""Collects the benchmark sections in benchmarks/results/ into benchmarks/RESULTS.md.

`make bench` runs every benchmark (each writes its own section) and then this.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import header_lines, machine_info  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SECTIONS = ["store", "growth", "service", "purge", "session_limits"]


def main() -> None:
    info = machine_info(["Django", "google-adk", "gunicorn", "django-q2"])
    parts = ["# Benchmark results", "", *header_lines("make bench", info), ""]
    parts.append("Each section below was written by its own script; its first lines give the exact command.")
    for name in SECTIONS:
        section = RESULTS / f"{name}.md"
        parts += ["", section.read_text(encoding="utf-8").strip() if section.exists() else f"## {name}\n\n(not run)"]
    out = Path(__file__).resolve().parent / "RESULTS.md"
    out.write_text("\n".join(parts) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
