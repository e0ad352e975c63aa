"""What may be shown of a reply while the model is still writing it (a streamed turn's `text` events).

The guards (agent/guards.py) check a model's answer once it is whole: `clean_reply` drops every
line that carries held text (a link, address, code or wording found only in flagged or untrusted
resume lines: `Taint.hits`), and within such a line the sentences that carry it. A streamed turn
shows the model's text before that, so each piece goes through the same check first:

* The text is shown up to a boundary only: the end of a line, or of a sentence within the line
  being written. A half-written item ("https://jobs-tr...") is never shown: items hold no space.
* Each line is checked whole, with `Taint.hits`, the guard's own test: from its start up to the
  boundary, so a run of held wording split across two sentences is caught when the second ends.
  A line that passes once complete is kept verbatim by `clean_reply` (it checks lines one by one),
  so what was shown is what the verified reply says.
* The first piece that fails stops the draft: nothing more of that model call is shown (not even
  clean lines after it). The verified reply, the stream's last event, then replaces the draft.

What is shown is a draft: its claims are not yet checked against the resume (the verified reply
carries the checks), and the final reply may still differ from it where the guards held something.
"""

from __future__ import annotations

import re

from agent.decoding import without_hidden
from agent.guards import Taint
from agent.text import BULLET_RE

# Where a sentence ends within a line: . ! ? and the spaces after them, or a Chinese terminator.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


class Draft:
    """One model call's text as it streams in (`add`), and how much of it may be shown."""

    def __init__(self, taint: Taint):
        self.taint = taint
        self.text = ""
        self.shown = 0  # characters of `text` shown so far
        self.held = False  # something failed the check: nothing more is shown

    def add(self, chunk: str) -> str:
        """Appends the model's next `chunk`; returns what may be shown beyond what was ("": nothing yet)."""
        if self.held or not chunk:
            return ""
        self.text += chunk
        start = self.shown
        while not self.held:
            end = self._next_boundary(self.shown)
            if end is None:
                break
            line_start = self.text.rfind("\n", 0, self.shown) + 1
            piece = self.text[line_start:end]
            if self.taint.hits(piece):
                self.held = True
            else:
                self.shown = end
        return without_hidden(self.text[start : self.shown])

    def _next_boundary(self, after: int) -> int | None:
        """The nearest end of a line (its newline included) or of a sentence after `after` (a
        list item's number alone, "2. ", ends nothing)."""
        newline = self.text.find("\n", after)
        line_end = len(self.text) if newline < 0 else newline
        line_start = self.text.rfind("\n", 0, after) + 1
        for match in _SENTENCE_END.finditer(self.text, after, line_end):
            if match.end() > after and BULLET_RE.sub("", self.text[line_start : match.end()]).strip():
                return match.end()
        return None if newline < 0 else newline + 1
