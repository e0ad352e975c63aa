"""Writes docs/MUTATION_REPORT.md from mutmut's per-file results (`mutants/<module>.meta`, JSON)
after `mutmut run` (`make mutants`): per module the mutants killed and survived, then one line per
survivor with its note (the test that kills it, or why it is equivalent). Notes of mutants that still
survive are kept from the previous report, so a rerun asks only about new survivors.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common  # noqa: E402

REPORT = _common.ROOT_DIR / "docs" / "MUTATION_REPORT.md"
# mutmut's exit codes (mutmut/stats.py): a failing test, pytest's internal error or the type checker kill a mutant.
COLUMNS = {0: "survived", None: "not run", **dict.fromkeys((1, 3, 37), "killed"), **dict.fromkeys((5, 33), "no tests")}
COLUMNS |= dict.fromkeys((36, 24, -24, 152, 255), "timeout")
NOTE_LINE = re.compile(r"^\| `(?P<name>[^`]+)` \| (?P<note>.*) \|$")
NO_NOTE = "_to do: the test that kills it, or why it is equivalent_"


def results(root: Path, module: str) -> dict[str, int | None]:
    meta = root / "mutants" / f"{module}.meta"
    return json.loads(meta.read_text("utf-8"))["exit_code_by_key"] if meta.exists() else {}


def kept_notes(report: Path) -> dict[str, str]:
    lines = report.read_text("utf-8").splitlines() if report.exists() else []
    return {m["name"]: m["note"] for m in map(NOTE_LINE.match, lines) if m and m["note"] != NO_NOTE}


def _mutant_order(name: str) -> tuple[str, int]:
    function, _, number = name.rpartition("__mutmut_")
    return function, int(number) if number.isdigit() else 0


def _row(label: str, counts: Counter) -> list:
    shown = (counts[c] for c in ("killed", "survived", "timeout", "no tests"))
    return [label, counts["mutants"], *shown, counts["not run"] + counts["other"]]


def render(root: Path, notes: dict[str, str]) -> str:
    rows, survivors, totals = [], [], Counter()
    for module in tomllib.loads((root / "pyproject.toml").read_text("utf-8"))["tool"]["mutmut"]["only_mutate"]:
        by_mutant = results(root, module)
        counts = Counter(COLUMNS.get(code, "other") for code in by_mutant.values()) + Counter(mutants=len(by_mutant))
        totals.update(counts)
        rows.append(_row(f"`{module}`", counts))
        unkilled = (name for name, code in by_mutant.items() if COLUMNS.get(code) in ("survived", "no tests"))
        survivors += sorted(unkilled, key=_mutant_order)
    score = f"{100 * totals['killed'] / totals['mutants']:.1f}%" if totals["mutants"] else "-"
    lines = [
        "# Mutation testing of the guarantee code",
        "",
        "Written by `benchmarks/mutation_report.py` after `make mutants` (mutmut, configured in",
        "`pyproject.toml` `[tool.mutmut]`). A mutant is one small change to the code; a test",
        "that fails on it kills it. A survivor is either a missing test or an equivalent change.",
        "",
        *_common.md_table(
            "module | mutants | killed | survived | timeout | no tests | not run / other",
            [*rows, _row("**all**", totals)],
        ),
        "",
        f"Killed: {score}.",
        "",
        "## Survivors",
        "",
        "One line each (`mutmut show NAME` prints the change): the test that kills it now, or why",
        'it is equivalent. Mutants no test reaches ("no tests") are listed too.',
        "",
        *_common.md_table("mutant | note", [[f"`{name}`", notes.get(name, NO_NOTE)] for name in survivors]),
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=REPORT)
    args = parser.parse_args()
    args.output.write_text(render(_common.ROOT_DIR, kept_notes(args.output)), encoding="utf-8")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
