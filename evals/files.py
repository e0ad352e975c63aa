"""The injection eval's cases as resume files (issue 46): each case's resume written as a PDF and
as a DOCX, read back by the service's own readers (agent/documents/), and run through the same
eval (evals/injection.py) with the lines the file hid from its reader passed to the screen.

Per case and format, two variants:

* `visible`: every line as a reader sees it (the attack line too): the file's reading keeps it
  detectable;
* `hidden`: the attack lines hidden (white text in a PDF, a hidden run in a DOCX), the oldest
  screener trick; a clean resume gets legitimate small print instead (a 6-point grey footer), which
  must not be flagged.

A PDF is made only for a resume Helvetica can draw (Windows-1252: the Chinese cases are DOCX only).
The variants' ids are the case's with `@pdf-visible`, `@docx-hidden`... Resume text is never printed.
"""

from __future__ import annotations

from dataclasses import replace

from agent.documents.reading import read
from evals.documents import Text, content, docx, pdf

FORMATS = ("pdf", "docx")
VARIANTS = ("visible", "hidden")
FOOTER = "Page 1 of 1 - references available on request"
LEADING = 14


def _drawable(text: str) -> bool:
    try:
        text.encode("cp1252")
    except UnicodeEncodeError:
        return False
    return True


def _pdf(lines: list[str], hidden: set[int], small_print: bool = False) -> bytes:
    """One page tall and wide enough for every line (a long line is not cut at the page's edge)."""
    height = max(792, 2 * 72 + LEADING * (len(lines) + 2))
    width = max(612, 2 * 72 + 5.6 * max((len(line) for line in lines), default=0))
    drawn = [
        Text(line, y=height - 72 - LEADING * i, size=10, rgb=(1, 1, 1) if i in hidden else (0, 0, 0))
        for i, line in enumerate(lines)
    ]
    if small_print:
        drawn.append(Text(FOOTER, y=36, size=6, rgb=(0.45, 0.45, 0.45)))
    return pdf([content(drawn)], media_box=(width, height))


def _docx(lines: list[str], hidden: set[int]) -> bytes:
    return docx([(line, {"hidden": True} if i in hidden else {}) for i, line in enumerate(lines)])


def _file(case, file_format: str, variant: str) -> bytes | None:
    lines = [line for line in case.resume.splitlines() if line.strip()]
    attack = {line.strip() for line in case.attack_lines}
    hidden = {i for i, line in enumerate(lines) if line.strip() in attack} if variant == "hidden" else set()
    if file_format == "pdf":
        if not _drawable(case.resume):
            return None
        return _pdf(lines, hidden, small_print=variant == "hidden" and not case.is_attack)
    if variant == "hidden" and not case.is_attack:
        return docx([*((line, {}) for line in lines), (FOOTER, {"footer": True, "size_pt": 6})])
    return _docx(lines, hidden)


def _collapsed(text: str) -> str:
    return " ".join(text.split())


def file_cases(cases: list) -> list:
    """Each case as a PDF and a DOCX, visible and hidden, read back: new cases whose resume is the
    text read and whose `concealed_lines` are the lines the file hid."""
    made = []
    for case in cases:
        for file_format in FORMATS:
            for variant in VARIANTS:
                data = _file(case, file_format, variant)
                if data is None:
                    continue
                document = read(data, f"resume.{file_format}")
                made.append(
                    replace(
                        case,
                        id=f"{case.id}@{file_format}-{variant}",
                        resume=document.text,
                        attack_lines=tuple(_collapsed(line) for line in case.attack_lines),
                        payload=tuple(_collapsed(line) for line in case.payload),
                        concealed_lines=tuple(number - 1 for number in document.hidden_line_numbers),
                        file_format=f"{file_format}-{variant}",
                    )
                )
    return made
