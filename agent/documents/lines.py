"""What a file read gives: lines, each visible or hidden (and why), and the refusals.

`assemble` turns a reader's characters into lines in one pass: a line ends at a line break, and
also where the hidden reason changes mid-line (a white keyword run after visible words is a line
of its own, so the person sees exactly what was hidden). Linear in the characters.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

# Why a line would not be seen by a person reading the file.
COLOUR = "colour"  # white or near the (white) page's colour, or fully transparent
TINY = "tiny"  # type under MIN_VISIBLE_POINTS
OFF_PAGE = "off_page"  # drawn outside the page's box
INVISIBLE = "invisible"  # a PDF text render mode that paints nothing
UNDER_IMAGE = "under_image"  # an image painted over it
HIDDEN_RUN = "hidden_run"  # a Word run marked hidden (w:vanish)
HIDDEN_REASONS = (COLOUR, TINY, OFF_PAGE, INVISIBLE, UNDER_IMAGE, HIDDEN_RUN)
MIN_VISIBLE_POINTS = 4.0

PDF, DOCX, TEXT = "pdf", "docx", "text"


class DocumentRefused(Exception):
    """The file cannot be read; `code` says why (the service words it for the person)."""

    CODES = ("unsupported", "encrypted", "damaged", "too_many_pages", "too_complex", "too_slow", "empty", "too_long")

    def __init__(self, code: str):
        if code not in self.CODES:
            raise ValueError(code)
        super().__init__(code)
        self.code = code


@dataclass(frozen=True)
class Line:
    text: str
    page: int  # 1 = the first
    hidden: str | None = None  # one of HIDDEN_REASONS, or None when a reader sees it


@dataclass
class Document:
    kind: str
    pages: int
    lines: list[Line] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)

    @property
    def hidden_line_numbers(self) -> list[int]:
        """The hidden lines' numbers in `text` (1 = the first)."""
        return [number for number, line in enumerate(self.lines, start=1) if line.hidden]

    def lines_per_page(self) -> list[int]:
        counts = [0] * self.pages
        for line in self.lines:
            counts[line.page - 1] += 1
        return counts

    def as_dict(self) -> dict:
        return {"kind": self.kind, "pages": self.pages, "lines": [(x.text, x.page, x.hidden) for x in self.lines]}

    @classmethod
    def from_dict(cls, data: dict) -> Document:
        return cls(data["kind"], data["pages"], [Line(*line) for line in data["lines"]])


BREAK = None  # a character slot that ends the line


def assemble(characters: Iterable[tuple[str, str | None] | None], page: int) -> list[Line]:
    """Lines from (character, hidden reason) pairs and BREAKs, read once. Blank lines are dropped;
    whitespace takes the reason of the text around it, so it never cuts a line by itself."""
    lines: list[Line] = []
    run: list[str] = []
    reason: str | None = None

    def close():
        text = "".join(run).strip()
        if text:
            lines.append(Line(" ".join(text.split()), page, reason))
        run.clear()

    for slot in characters:
        if slot is BREAK:
            close()
            continue
        character, why = slot
        if character.isspace():
            if run:
                run.append(" ")
            continue
        if why != reason and run:
            close()
        reason = why
        run.append(character)
    close()
    return lines
