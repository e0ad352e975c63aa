"""Writes docs/MUTATION_REPORT.md from the results of `mutmut run` (`make mutants`).

Per module: mutants, killed, survived, and the rest (timeouts, no tests, ...).
Then one line per surviving mutant, with a note: the test that now kills it,
or why the mutant is equivalent (the code means the same). Notes are kept
from the previous report for mutants that still survive, so a rerun only
asks for notes on new survivors. `mutmut show NAME` prints a mutant's diff.

Reads mutmut's per-file results (`mutants/<module>.meta`, JSON) directly;
run it from the project root after `mutmut run`.
"""

from __future__ import annotations

import argparse
import json
import re
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "docs" / "MUTATION_REPORT.md"
# mutmut's exit codes (mutmut/stats.py), folded into the report's columns.
KILLED = {1, 3, 37}  # a failing test, pytest's internal error, the type checker
SURVIVED = {0}
TIMEOUT = {36, 24, -24, 152, 255}
NO_TESTS = {5, 33}
NOTE_LINE = re.compile(r"^\| `(?P<name>[^`]+)` \| (?P<note>.*) \|$")
NO_NOTE = "_to do: the test that kills it, or why it is equivalent_"


def modules(root: Path) -> list[str]:
    config = tomllib.loads((root / "pyproject.toml").read_text("utf-8"))["tool"]["mutmut"]
    return list(config["only_mutate"])


def results(root: Path, module: str) -> dict[str, int | None]:
    meta = root / "mutants" / f"{module}.meta"
    if not meta.exists():
        return {}
    return json.loads(meta.read_text("utf-8"))["exit_code_by_key"]


def kept_notes(report: Path) -> dict[str, str]:
    if not report.exists():
        return {}
    notes = {}
    for line in report.read_text("utf-8").splitlines():
        match = NOTE_LINE.match(line)
        if match and match["note"] != NO_NOTE:
            notes[match["name"]] = match["note"]
    return notes


def column(code: int | None) -> str:
    if code in KILLED:
        return "killed"
    if code in SURVIVED:
        return "survived"
    if code in TIMEOUT:
        return "timeout"
    if code in NO_TESTS:
        return "no tests"
    if code is None:
        return "not run"
    return "other"


def _mutant_order(name: str) -> tuple[str, int]:
    function, _, number = name.rpartition("__mutmut_")
    return function, int(number) if number.isdigit() else 0


def render(root: Path, notes: dict[str, str]) -> str:
    rows, survivors = [], []
    totals: Counter = Counter()
    for module in modules(root):
        by_mutant = results(root, module)
        counts = Counter(column(code) for code in by_mutant.values())
        totals.update(counts)
        totals["mutants"] += len(by_mutant)
        rows.append(
            f"| `{module}` | {len(by_mutant)} | {counts['killed']} | {counts['survived']} "
            f"| {counts['timeout']} | {counts['no tests']} | {counts['not run'] + counts['other']} |"
        )
        survivors += sorted(
            (name for name, code in by_mutant.items() if column(code) in ("survived", "no tests")), key=_mutant_order
        )
    score = f"{100 * totals['killed'] / totals['mutants']:.1f}%" if totals["mutants"] else "-"
    lines = [
        "# Mutation testing of the guarantee code",
        "",
        "Written by `benchmarks/mutation_report.py` after `make mutants` (mutmut, configured in",
        "`pyproject.toml` `[tool.mutmut]`). A mutant is one small change to the code; a test",
        "that fails on it kills it. A survivor is either a missing test or an equivalent change.",
        "",
        "| module | mutants | killed | survived | timeout | no tests | not run / other |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        *rows,
        f"| **all** | {totals['mutants']} | {totals['killed']} | {totals['survived']} | {totals['timeout']} "
        f"| {totals['no tests']} | {totals['not run'] + totals['other']} |",
        "",
        f"Killed: {score}.",
        "",
        "## Survivors",
        "",
        "One line each (`mutmut show NAME` prints the change): the test that kills it now, or why",
        "it is equivalent. Mutants no test reaches (\"no tests\") are listed too.",
        "",
        "| mutant | note |",
        "| --- | --- |",
        *(f"| `{name}` | {notes.get(name, NO_NOTE)} |" for name in survivors),
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=REPORT)
    args = parser.parse_args()
    args.output.write_text(render(ROOT, kept_notes(args.output)), encoding="utf-8")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
