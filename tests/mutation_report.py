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


def _score(counts) -> str:
    """Killed or timed out, of the mutants run, less those listed as equivalent."""
    run = counts["mutants"] - counts["not run"] - counts["equivalent"]
    return f"{100 * (counts['killed'] + counts['timeout']) / run:.1f}%" if run > 0 else "-"


def _row(label: str, counts: Counter, before: dict | None) -> list:
    shown = (counts[c] for c in ("killed", "timeout", "survived", "equivalent", "no tests"))
    row = [label, counts["mutants"], *shown, counts["not run"] + counts["other"], _score(counts)]
    return row + [_score(Counter(before)) if before else "-"] if before is not None else row


def _equivalent(note: str) -> bool:
    return note.lower().startswith("equivalent")


def _killed_by_hand(note: str) -> bool:
    """A survivor of mutmut's run that a test kills when run by hand: on the PostgreSQL leg (mutmut
    runs the SQLite one), or a test mutmut's incremental stats did not link to a new function."""
    return note.lower().startswith("killed")


def render(root: Path, notes: dict[str, str], baseline: dict | None = None) -> str:
    """`baseline`: counts per module of an earlier run (`--save-counts`), shown as "score before"."""
    rows, survivors, totals, per_module = [], [], Counter(), {}
    for module in tomllib.loads((root / "pyproject.toml").read_text("utf-8"))["tool"]["mutmut"]["only_mutate"]:
        by_mutant = results(root, module)
        counts = Counter(
            "equivalent"
            if code == 0 and _equivalent(notes.get(name, ""))
            else "killed"
            if code in (0, -1) and _killed_by_hand(notes.get(name, ""))
            else COLUMNS.get(code, "other")
            for name, code in by_mutant.items()
        ) + Counter(mutants=len(by_mutant))
        totals.update(counts)
        per_module[module] = dict(counts)
        rows.append(_row(f"`{module}`", counts, (baseline or {}).get(module, {}) if baseline is not None else None))
        # Every mutant without a verdict of killed, timeout or not run needs a note (an exit code
        # mutmut does not name, -1 for one, included).
        unkilled = (
            name for name, code in by_mutant.items() if COLUMNS.get(code, "other") in ("survived", "no tests", "other")
        )
        survivors += sorted(unkilled, key=_mutant_order)
    before_all = Counter()
    for counts in (baseline or {}).values():
        before_all.update(counts)
    header = "module | mutants | killed | timeout | survived | equivalent | no tests | not run / other | score"
    lines = [
        "# Mutation testing of the guarantee code",
        "",
        "Written by `tests/mutation_report.py` after `make mutants` (mutmut, configured in",
        "`pyproject.toml` `[tool.mutmut]`). A mutant is one small change to the code; a test",
        "that fails on it kills it. A survivor is either a missing test or an equivalent change.",
        "",
        "Score: killed or timed out, of the mutants run less the equivalent ones. A survivor whose note"
        ' starts with "killed" is counted as killed: its test, run by hand with the mutant active, fails'
        + (" (before: the same run before its survivors were handled)." if baseline is not None else "."),
        "",
        *_common.md_table(
            header + (" | score before" if baseline is not None else ""),
            [*rows, _row("**all**", totals, before_all if baseline is not None else None)],
        ),
        "",
        "## Survivors",
        "",
        "One line each (`mutmut show NAME` prints the change): the test that kills it now, or why",
        'it is equivalent. Mutants no test reaches ("no tests") are listed too.',
        "",
        *_common.md_table("mutant | note", [[f"`{name}`", notes.get(name, NO_NOTE)] for name in survivors]),
        "",
    ]
    return "\n".join(lines), per_module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=REPORT)
    parser.add_argument("--root", type=Path, default=_common.ROOT_DIR, help="the tree mutmut ran in")
    parser.add_argument("--baseline", type=Path, help="counts of an earlier run (JSON), shown as the score before")
    parser.add_argument("--save-counts", type=Path, help="also write this run's counts per module (JSON)")
    args = parser.parse_args()
    baseline = json.loads(args.baseline.read_text("utf-8")) if args.baseline else None
    text, per_module = render(args.root, kept_notes(args.output), baseline)
    args.output.write_text(text, encoding="utf-8")
    if args.save_counts:
        args.save_counts.write_text(json.dumps(per_module, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
