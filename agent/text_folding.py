"""Text folding shared by the offline model's fixed rules, for messages and resumes alike.

The rules match folded text (`fold`: lower-cased NFKC, so full-width letters and
punctuation match their ASCII patterns) and weigh a text's scripts (`script_weights`):
one Chinese character about as much as one Latin word.
"""

from __future__ import annotations

import re
import unicodedata

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
CJK_RE = re.compile(f"[{_CJK}]")
_LATIN_WORD_RE = re.compile(r"[a-z]+")


def fold(text: str) -> str:
    """Lower-cased NFKC: full-width letters and punctuation (？！：，) become their ASCII forms."""
    return unicodedata.normalize("NFKC", text or "").lower()


def script_weights(text: str) -> tuple[int, int]:
    """(Chinese characters, Latin words): one character weighs about as much as one word."""
    folded = fold(text)
    return len(CJK_RE.findall(folded)), len(_LATIN_WORD_RE.findall(folded))


def word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


def choices(words: str) -> tuple[str, ...]:
    """Keyword lists that hold spaces, kept compact: "a|b c" is ("a", "b c")."""
    return tuple(words.split("|"))
