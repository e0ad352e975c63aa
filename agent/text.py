"""How agent/ reads text, said once: folding, scripts, bullets, links and e-mail addresses.

The screen, the guards, the claim check and the offline model all read text through this
module. `fold` is NFKC, case-folded: full-width letters and punctuation (ＡＩ？！：，) match
their ASCII patterns. `normalise` also makes every dash ASCII and collapses whitespace: how
two texts are compared by the eval's judge and the offline model. `reading` is how the screen
and the guards read a person's text: `normalise`, then invisible characters (zero-width, soft
hyphen, bidi controls, every other format character) and combining marks dropped, every
look-alike letter replaced by the letter it imitates (UTS #39 confusables, from the data the
`confusable_homoglyphs` library ships with Unicode's confusables.txt) and the spaces between
two Chinese characters dropped: "Ignоre" with a Cyrillic о, "ig\u200bnore" and "忽　略" read
as "ignore" and "忽略". `mixed_script_words` finds words that mix Latin with Greek or Cyrillic
letters, a disguise in itself; a word wholly in one script (a Greek or Cyrillic name) is not
one. `script_weights` weighs a text's scripts: one Chinese character about as much as one
Latin word.

Each pattern that scans a run of letters starts only where the run starts (a lookbehind, not
\\b): from every position inside a run, `a-a-a-…` or `a.a.a.…` took time quadratic in its
length (50 s for a 50,000-character line).
"""

from __future__ import annotations

import re
import unicodedata

from confusable_homoglyphs import confusables

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
# Phone and account numbers: digit groups joined by up to two of space, dash, dot or bracket
# ("+1 (555) 010-0199"), counted by their digits alone. Each repeat takes a digit and the
# possessive group never gives back, so no start is scanned twice.
_NUMBER_RE = re.compile(r"(?<![\w+-])\+?\(?\d(?:[ .()-]{0,2}\d)*+")
_NUMBER_MIN_DIGITS = 8
_YEAR_RANGE_RE = re.compile(r"(?:19|20)\d\d(?:19|20)\d\d")


def long_numbers(text: str) -> set[str]:
    """The digits of each phone or account number in `text` ("0912-345-678" is "0912345678"):
    eight digits or more, a year range ("2019-2022") aside."""
    found = ("".join(c for c in number if c.isdigit()) for number in _NUMBER_RE.findall(text))
    return {digits for digits in found if len(digits) >= _NUMBER_MIN_DIGITS and not _YEAR_RANGE_RE.fullmatch(digits)}


def open_item_start(read: str) -> int | None:
    """Where, in a read sentence (`reading`) that a seam follows, an item starts that the next
    sentence may go on with: a link up to a Chinese full stop, ！ or ？ (a link holds them), or a number
    before a full stop and its space ("1234. 5678" is one number). None: none may."""
    starts = [m.start() for m in LINK_RE.finditer(read) if m.end() == len(read)]
    if read.endswith("."):
        starts += [m.start() for m in _NUMBER_RE.finditer(read) if m.end() == len(read) - 1]
    return min(starts, default=None)


def fold(text: str, *, keep_case: bool = False) -> str:
    """NFKC (full-width letters and punctuation, ？！：，, become their ASCII forms), case-folded
    unless `keep_case`."""
    text = unicodedata.normalize("NFKC", text or "")
    return text if keep_case else text.casefold()


def normalise(text: object) -> str:
    """`fold`, every dash as "-", whitespace collapsed."""
    return " ".join(fold(str(text or "")).translate(_DASHES).split())


def _is_hidden(char: str) -> bool:
    """Drawn as nothing: format characters (zero-width, soft hyphen, bidi controls, tags),
    combining marks, variation selectors and the Hangul fillers."""
    return unicodedata.category(char) in ("Cf", "Mn", "Me") or char in "\u115f\u1160\u3164\uffa0"


def _prototype(char: str) -> str | None:
    """The letter `char` imitates (UTS #39 confusables): an ASCII letter or digit, else a Chinese
    character (CJK radicals look like the characters they come from). Single characters only,
    so "rn" is not read as "m"."""
    targets = [entry["c"].casefold() for entry in confusables.confusables_data.get(char, ())]
    ascii_like = [t for t in targets if len(t) == 1 and t.isascii() and t.isalnum()]
    chinese = [t for t in targets if len(t) == 1 and CJK_RE.match(t)]
    return (ascii_like or chinese or [None])[0]


def _reading_table() -> dict[int, str | None]:
    """One translate table for `reading`, built once: hidden characters dropped, accented and
    look-alike letters as the ASCII letter (or Chinese character) they show."""
    table: dict[int, str | None] = {}
    # NFKC has already made full-width and mathematical letters plain; beyond these planes lie
    # only the tag characters (format characters) and variation selectors (marks).
    for code in [*range(0x80, 0x10000), *range(0xE0000, 0xE0200)]:
        char = chr(code)
        if _is_hidden(char):
            table[code] = None
            continue
        if CJK_RE.match(char):
            continue
        base = unicodedata.normalize("NFD", char)
        if len(base) > 1 and all(unicodedata.category(c) in ("Mn", "Me") for c in base[1:]):
            char = base[0]  # é is e, ѐ is е
        target = char if char.isascii() else (_prototype(char) or char)
        if target != chr(code):
            table[code] = target
    return table


_READING_TABLE = _reading_table()
_CJK_GAP_RE = re.compile(f"(?<=[{CJK}])[^\\S\\n]+(?=[{CJK}])")  # within a line
_WORD_RE = re.compile(r"[^\W\d_]+")
_LATIN_RE = re.compile(r"[a-z\u00df-\u024f]")
_GREEK_CYRILLIC_RE = re.compile(r"[\u0370-\u03ff\u1f00-\u1fff\u0400-\u052f]")
# The same before folding: mathematical Greek letters (𝛂) fold into Greek ones.
_GREEK_CYRILLIC_RAW_RE = re.compile(r"[\u0370-\u03ff\u1f00-\u1fff\u0400-\u052f\U0001d6a8-\U0001d7cb]")


# What `reading` leaves as it is: ASCII, Chinese characters and their punctuation (most of a
# resume; translating only the rest keeps a screen's CPU near what it was).
_PLAIN_RE = re.compile(f"[\\x00-\\x7f{CJK}\u3000-\u303f\uff0c\uff1a\uff1b\uff01\uff1f]*+")
_HIDDEN_TABLE = {code: None for code, target in _READING_TABLE.items() if target is None}


def reading(text: object) -> str:
    """How the screen and the guards read a text: `normalise`, hidden characters dropped, look-alike
    and accented letters as the letters they show, no spaces between Chinese characters."""
    return " ".join(_read_folded(str(text or "")).split())


def reading_lines(lines: list[str]) -> list[str]:
    """`reading` of each of `lines`, folded and translated in one pass (a resume's lines at once,
    not a call per line: the guards read every line on every model call)."""
    return [" ".join(line.split()) for line in _read_folded("\n".join(lines)).split("\n")]


def _read_folded(text: str) -> str:
    folded = fold(text)
    if _PLAIN_RE.fullmatch(folded) is None:
        folded = folded.translate(_READING_TABLE)
    if not folded.isascii():
        folded = _CJK_GAP_RE.sub("", folded).translate(_DASHES)
    return folded


def mixed_script_words(text: str) -> list[str]:
    """Words that mix Latin letters with Greek or Cyrillic ones ("Ignоre" with a Cyrillic о), hidden
    characters dropped first. A word in one script ("Αλέξανδρος", "Наталья") is not one; nor is a
    unit of two letters ("μs")."""
    if text.isascii() or not _GREEK_CYRILLIC_RAW_RE.search(text):
        return []
    visible = fold(text).translate(_HIDDEN_TABLE)
    return [
        word
        for word in _WORD_RE.findall(visible)
        if len(word) > 2 and _LATIN_RE.search(word) and _GREEK_CYRILLIC_RE.search(word)
    ]


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
