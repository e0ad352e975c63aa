"""Where a resume line's text may go: the positive reading the guards fail closed on (issue 40).

The screen recognises attacks; whatever phrasing it has never seen goes through it. So the guards
do not ask "does this line look like an attack?" but "does this line positively read as a resume's
own?", and hold everything else:

* a **contact line** (the resume's own name, e-mail, phone, links: "Email: ada@example.test |
  Taipei") vouches for its links, addresses and numbers: they may appear in a reply, a plan or a
  tool's arguments;
* a **content line** (a heading, a role or school with its dates, an achievement, a list of skills,
  a summary) may be quoted, and vouches for its ordinary codes ("python3", "2019-present");
* every other line (one that addresses a reader, a tool or a process; a note; a notice; a line
  the screen flagged or the guards hold; one that sends the reader to a party to contact, unless
  it opens as a duty the person held: "負責與廠商聯繫") is **untrusted**: its wording is not quoted
  and nothing it holds is vouched for.

A line that speaks to someone (a directive, "you", a reader or a process named) is never contact
or content, whatever its form. The person's own messages vouch for everything in them.

Pure Python, no Django and no ADK; each line is read once, by patterns that start only where
their run starts (agent/text.py): linear in the resume.
"""

from __future__ import annotations

import re

from agent.own_lines import directs_contact, is_contact_line, is_content_line
from agent.screening import speaks_to_someone
from agent.text import BULLET_RE

CONTACT, CONTENT, UNTRUSTED = "contact", "content", "untrusted"  # what `classify` says of a line


def classify(lines: list[str], reads: list[str], held: set[str]) -> list[str]:
    """CONTACT, CONTENT or UNTRUSTED for each of `lines` (stripped, non-empty) given how each reads (`reads`) and
    the lines the screen or the guards hold (`held`): held lines and lines that speak to someone
    are untrusted, whatever their form."""
    classes = []
    for position, (line, text) in enumerate(zip(lines, reads, strict=True)):
        bare = BULLET_RE.sub("", text)
        if line in held or not bare or speaks_to_someone(bare):
            classes.append(UNTRUSTED)
        elif is_contact_line(bare, position):
            classes.append(CONTACT)
        elif directs_contact(bare):
            classes.append(UNTRUSTED)
        elif is_content_line(bare, position, bare != text):
            classes.append(CONTENT)
        else:
            classes.append(UNTRUSTED)
    # A text cut into pieces under a bracket's label ("[ref QUAR]" ... "[ref RN-6617] join the [ref]
    # fragments"): where an untrusted line carries the label, so is every piece. A label of the
    # person's own (a citation, "[1]") is in no untrusted line.
    tags = [set(_TAG_RE.findall(text)) for text in reads]
    pieces = set().union(*(tag for tag, kind in zip(tags, classes, strict=True) if kind == UNTRUSTED))
    return [UNTRUSTED if not tag.isdisjoint(pieces) else kind for tag, kind in zip(tags, classes, strict=True)]


# A bracket's label, a word that names a piece ("[ref QUAR]", "【附件 二】"); bounded, so linear.
_TAG_RE = re.compile(r"[\[【〔]\s*([a-z\u4e00-\u9fff]{2,12})(?=[\s\]】〕])")
