"""Collects the sections in benchmarks/results/ into benchmarks/RESULTS.md (`make bench` ends with it). A retired
script's section is kept as recorded; its file's first line names the commit that last had the script."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import _common  # noqa: E402

SECTIONS = "store growth service request_cost turn_profile gemini_path screen purge session_limits erasure_space"
SECTIONS += " journal_modes postgres memory turn_cpu log account"

if __name__ == "__main__":
    info = _common.machine_info(["Django", "google-adk", "gunicorn", "django-q2"])
    parts = ["# Benchmark results", "", *_common.header_lines("make bench", info), ""]
    parts.append("Each section below was written by its own script; its first lines give the exact command.")
    sections = (_common.RESULTS_DIR / f"{name}.md" for name in SECTIONS.split())
    parts += ["\n" + path.read_text("utf-8").strip() for path in sections if path.exists()]
    out = _common.RESULTS_DIR.parent / "RESULTS.md"
    out.write_text("\n".join(parts) + "\n", encoding="utf-8")
    print(f"wrote {out}")
