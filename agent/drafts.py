"""What may be shown of a reply while the model is still writing it (a streamed turn's `text` events).

The guards (agent/guards.py) check a model's answer once it is whole: `clean_reply` drops every
line that carries held text (a link, address, code or wording found only in flagged or untrusted
resume lines: `Taint.hits`), and within such a line the sentences that carry it. A streamed turn
shows the model's text before that, so each piece goes through the same check first:

* The text is shown up to a boundary only: the end of a line, or of a sentence within the line
  being written. A half-written item ("https://jobs-tr...") is never shown: items hold no space.
* Each boundary shows the line so far only if `Taint.hits` would pass it from the line's start, so
  a run of held wording split across two sentences is caught when the second ends. A line that
  passes once complete is kept verbatim by `clean_reply` (it checks lines one by one), so what was
  shown is what the verified reply says.
* The first piece that fails stops the draft: nothing more of that model call is shown (not even
  clean lines after it). The verified reply, the stream's last event, then replaces the draft.

Checking the line from its start at each sentence's end cost time quadratic in the line's length
(a line of short sentences); `_Line` gives the same answer reading each sentence once: what the
line so far holds was checked at the boundaries before, so a boundary needs only what the new
sentence adds (`Taint.hits`' parts, each exact):

* items (links, addresses, codes, numbers): those of the sentence, and the one item that may run
  on across a seam (a link across a Chinese full stop, a number across ". "), carried over whole;
* runs of wording: those that end in the sentence, within the last RUN_MIN_CHARS - 1 read
  characters of the line before it;
* names: the sentence's words (a seam is no letter);
* the line repeated whole: the read line's hash, extended by each sentence; a match is checked again
  from the line's start (`Taint.hits`). The line's end is checked whole, once.

What is shown is a draft: its claims are not yet checked against the resume (the verified reply
carries the checks), and the final reply may still differ from it where the guards held something.
"""

from __future__ import annotations

import re

from agent.decoding import without_hidden
from agent.guards import RUN_MIN_CHARS, Taint, bare
from agent.text import BULLET_RE, open_item_start, reading

# Where a sentence ends within a line: . ! ? and the spaces after them, or a Chinese terminator.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")

# A polynomial hash of a read text, one UTF-32 code unit a digit: whole lines compared in O(1).
_MODULUS = (1 << 61) - 1


def _hash(text: str) -> int:
    return int.from_bytes(text.encode("utf-32-be", "surrogatepass"), "big") % _MODULUS


def _joined_hash(head: int, tail: str) -> int:
    return (head * pow(2, 32 * len(tail), _MODULUS) + _hash(tail)) % _MODULUS


class _Line:
    """What the checks of a line's sentences carry from one boundary to the next."""

    def __init__(self, start: int):
        self.start = start  # where the line starts in the draft's text
        self.read = ""  # the line's first sentence, read (`reading`): where its bullet is
        self.sentences = 0
        self.terminator = -1  # where the last sentence's . ! ? or 。 stands in the draft's text
        self.tail = ""  # the last RUN_MIN_CHARS - 1 read characters of the line so far
        self.carry = ""  # the read item the next sentence may go on with
        self.bare_hash = 0  # the hash of the read line so far, its bullet aside


class Draft:
    """One model call's text as it streams in (`add`), and how much of it may be shown."""

    def __init__(self, taint: Taint):
        self.taint = taint
        self.text = ""
        self.shown = 0  # characters of `text` shown so far
        self.held = False  # something failed the check: nothing more is shown
        self._scanned = 0  # no boundary was found in text[shown:_scanned]
        self._line = _Line(0)
        self._whole_hashes = frozenset(map(_hash, taint.whole))

    def add(self, chunk: str) -> str:
        """Appends the model's next `chunk`; returns what may be shown beyond what was ("": nothing yet)."""
        if self.held or not chunk:
            return ""
        start = self.shown
        self.text += chunk
        while not self.held:
            boundary = self._next_boundary()
            if boundary is None:
                self._scanned = len(self.text)
                break
            end, terminator = boundary
            if self._passes(end, terminator):
                self.shown = self._scanned = end
            else:
                self.held = True
        return without_hidden(self.text[start : self.shown])

    def _next_boundary(self) -> tuple[int, int] | None:
        """The nearest end of a line (its newline included) or of a sentence after what was shown,
        with where the sentence's terminator stands (-1 at a line's end); a list item's number
        alone, "2. ", ends nothing. Only text not yet scanned is scanned."""
        after, line = self.shown, self._line
        scan = max(after, self._scanned)
        newline = self.text.find("\n", scan)
        line_end = len(self.text) if newline < 0 else newline
        for match in _SENTENCE_END.finditer(self.text, scan, line_end):
            # Before the line's first boundary, the line so far is a bullet at most (a short run).
            if match.end() > after and (
                line.sentences or BULLET_RE.sub("", self.text[line.start : match.end()]).strip()
            ):
                return match.end(), match.start() - 1
        return None if newline < 0 else (newline + 1, -1)

    def _passes(self, end: int, terminator: int) -> bool:
        """Does the line so far, up to `end`, pass `Taint.hits`? Keeps what the next boundary needs."""
        line, taint = self._line, self.taint
        if terminator < 0:  # the line's end: checked whole, once; the next line starts afresh
            passes = not taint.hits(self.text[line.start : end])
            self._line = _Line(end)
            return passes
        if not line.sentences:  # the line's first sentence is the line so far
            sentence = self.text[line.start : end]
            if taint.hits(sentence):
                return False
            read = reading(sentence)
            items_read = read
            line.bare_hash = _hash(bare(read))
        else:
            # The new sentence read after its seam: the previous terminator's reading, then its own.
            read = reading(self.text[line.terminator : end])[1:]
            items_text = line.carry + self.text[line.terminator + 1 : end]
            if taint.unvouched(items_text) or taint.holds_runs(line.tail + read) or taint.holds_names(read):
                return False
            items_read = reading(items_text)
            if line.sentences == 1:  # the bullet, if any, is known by now: "1." and its space
                line.bare_hash = _hash(bare(line.read + read))
            else:
                line.bare_hash = _joined_hash(line.bare_hash, read)
            if line.bare_hash in self._whole_hashes and taint.hits(self.text[line.start : end]):
                return False
        if not line.sentences:
            line.read = read
        line.sentences += 1
        line.terminator = terminator
        line.tail = (line.tail + read)[-(RUN_MIN_CHARS - 1) :]
        open_at = open_item_start(items_read)
        line.carry = "" if open_at is None else items_read[open_at:]
        return True
