"""How agent/ reads text, said once: folding, scripts, bullets, links and e-mail addresses.

The screen, the guards, the claim check and the offline model all read text through this
module. `fold` is NFKC, case-folded: full-width letters and punctuation (ＡＩ？！：，) match
their ASCII patterns. `normalise` also makes every dash ASCII and collapses whitespace: how
a line is read by the screen and how two texts are compared by the guards. `script_weights`
weighs a text's scripts: one Chinese character about as much as one Latin word.

Each pattern that scans a run of letters starts only where the run starts (a lookbehind, not
\\b): from every position inside a run, `a-a-a-…` or `a.a.a.…` took time quadratic in its
length (50 s for a 50,000-character line).
"""

from __future__ import annotations

import re
import unicodedata

CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
CJK_RE = re.compile(f"[{CJK}]")
_LATIN_WORD_RE = re.compile(r"[a-z]+")
_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"), "-")

# A numbered line ("1. ", "2)", "3、", "一、"): a plan step, not a claim.
_NUMBER = r"\d{1,2}[.)、]|[一二三四五六七八九十]+、"
NUMBERED_RE = re.compile(rf"^\s*(?:{_NUMBER})\s*")
BULLET_RE = re.compile(rf"^\s*(?:[-*•·▪‣●○■□◆◇▸►✓✔・–—]|{_NUMBER})\s*")

_LINK = r"https?://[^\s\"'<>)）」』]+|www\.[^\s\"'<>)）」』]+"
_DOMAIN = r"(?<![a-z0-9.-])-*+((?:[a-z0-9-]+\.)+(?:com|net|org|io|ai|app|dev|xyz|info|test))\b"
LINK_RE = re.compile(_LINK)
DOMAIN_RE = re.compile(_DOMAIN)  # group 1: the domain without leading dashes
URL_RE = re.compile(f"{_LINK}|{_DOMAIN}")  # a link or a bare domain, in one scan
EMAIL_RE = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def fold(text: str, *, keep_case: bool = False) -> str:
    """NFKC (full-width letters and punctuation, ？！：，, become their ASCII forms), case-folded
    unless `keep_case`."""
    text = unicodedata.normalize("NFKC", text or "")
    return text if keep_case else text.casefold()


def normalise(text: object) -> str:
    """`fold`, every dash as "-", whitespace collapsed."""
    return " ".join(fold(str(text or "")).translate(_DASHES).split())


def script_weights(text: str) -> tuple[int, int]:
    """(Chinese characters, Latin words): one character weighs about as much as one word."""
    folded = fold(text)
    return len(CJK_RE.findall(folded)), len(_LATIN_WORD_RE.findall(folded))


def word_set(text: str) -> frozenset[str]:
    """A set of keywords written compactly: word_set("a b") is {"a", "b"}."""
    return frozenset(text.split())


def choices(text: str) -> tuple[str, ...]:
    """Keywords that hold spaces, written compactly: choices("a|b c") is ("a", "b c")."""
    return tuple(text.split("|"))
