"""Text no resume needs, and what it says once decoded (issue 40, point 2).

A resume has no use for Unicode tag characters (U+E0000 block: invisible ASCII), bidi overrides
(or isolates around anything but right-to-left letters), or private-use characters; each is a
signal in itself. And an instruction can be written so that no one reads it as text until it is
decoded: base64, ROT13, reversed, its letters spaced out, hex bytes, percent-escapes, digits for
letters ("1nclud3"), or in tag characters. `decoded_forms`
gives a line's decoded readings, which the screen reads as it reads the line (a decoded
instruction is flagged as `encoded`) and the worst-model tests copy into every output, as a model
that decodes would.

Every function here scans its text once with patterns that start only where their run starts:
linear in the text's length.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
import unicodedata
import urllib.parse

from agent.text import CJK_RE, choices

TAG_BLOCK = range(0xE0000, 0xE0080)
# Variation selectors carry a byte each when strung after a character (VS1-16: 0-15, VS17-256: 16-255):
# one selector after an emoji chooses how it looks, the supplement's are for rare ideographs, and a run
# of them is a message no one sees ("emoji smuggling").
_VS, _VS_SUPPLEMENT = range(0xFE00, 0xFE10), range(0xE0100, 0xE01F0)
_VS_RUN_MIN = 2
_VS_RUN_RE = re.compile(f"[\ufe00-\ufe0f\U000e0100-\U000e01ef]{{{_VS_RUN_MIN},}}")
# Bidi controls (not the marks LRM/RLM, which an Arabic or Hebrew name uses): an embedding or an isolate
# around right-to-left letters is how such a name is written in a left-to-right line; one around anything
# else, an override (which reorders what is shown) and an unmatched closer are signals.
_BIDI_OPENERS, _BIDI_CLOSERS, _BIDI_OVERRIDES = (
    frozenset("\u202a\u202b\u2066\u2067\u2068"),
    frozenset("\u202c\u2069"),
    frozenset("\u202d\u202e"),
)
_BASE64_RE = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=])")
# Letters spaced out: "i g n o r e  a l l" (five single letters or more, one space or dot apart),
# and characters of any kind so spaced, words two or three spaces apart ("t e x t  + 1 - 5 5 5").
_SPACED_RE = re.compile(r"(?<![^\W\d_])(?:[^\W\d_][ .]){4,}[^\W\d_](?![^\W\d_])")
_SPACED_CHARS_RE = re.compile(r"(?<!\S)(?:\S {1,3}){5,}\S")
_WORD_GAP_RE = re.compile(r"[ .]{2,}|\s*/\s*")  # what separates spaced words: two spaces, or a slash
# Bytes written in hex ("50 6c 61 6e ..." or "506c616e..."): eight or more.
# (No condition after the run: one there would make a long run of pairs fail and retry from each pair.)
_HEX_RE = re.compile(r"(?<![0-9a-f])(?:[0-9a-f]{2}[ :]?){8,}", re.IGNORECASE)
# Bytes written in binary ("01010000 01101100 ..."): four or more.
_BINARY_RE = re.compile(r"(?<![01])(?:[01]{8}[ ]?){4,}")
_PERCENT_RE = re.compile(r"(?:%[0-9a-f]{2}){3}", re.IGNORECASE)  # three escapes in a row: text, not a path
# Digits for letters inside words ("pl4n5 mu57 1nclud3"): read where three words or more mix them.
_LEET_WORD_RE = re.compile(r"\b(?=\w*[a-z])(?=\w*[013457])\w{3,}\b", re.IGNORECASE)
_LEET = str.maketrans("013457", "oieast")
_LEET_MIN_WORDS = 3
_LATIN_RE = re.compile(r"[A-Za-z]")
_MIN_DECODED_LETTERS = 8
# ROT13 and reversed readings are screened only where the line holds, so encoded, a word no order to
# an assistant goes without: two readings of every line were two thirds of a resume's screening.
_ORDER_WORDS = choices(
    "ignore|disregard|forget|instruction|system|assistant|reply|respond|answer|plan|step|save|you|prompt|reveal"
    "|tool|override|model|reader|operator|contact|register|call|send|include|add"
    "|忽略|無視|指示|指令|系統|回覆|回答|計畫|步驟|儲存|請|你|您|務必|必須"
)
_ROT13_HINT_RE = re.compile("|".join(codecs.encode(word, "rot13") for word in _ORDER_WORDS))
_REVERSED_HINT_RE = re.compile("|".join(word[::-1] for word in _ORDER_WORDS))


def hidden_signals(text: str) -> set[str]:
    """Which characters no resume needs `text` holds: "tag", "bidi", "private_use", "selectors" (a run
    of variation selectors)."""
    found, runs = set(), []  # runs: per open embedding or isolate, whether it holds a right-to-left letter
    selectors = 0  # variation selectors in a row
    for char in text:
        code = ord(char)
        selectors = selectors + 1 if code in _VS or code in _VS_SUPPLEMENT else 0
        if selectors >= _VS_RUN_MIN:
            found.add("selectors")
        if code in TAG_BLOCK:
            found.add("tag")
        elif char in _BIDI_OPENERS:
            runs.append(False)
        elif char in _BIDI_CLOSERS:
            held_rtl = bool(runs) and runs.pop()
            if not held_rtl:
                found.add("bidi")
            elif runs:
                runs[-1] = True  # the letters sit inside the outer run too
        elif char in _BIDI_OVERRIDES:
            found.add("bidi")
        elif runs and not runs[-1] and unicodedata.bidirectional(char) in ("R", "AL"):
            runs[-1] = True
        elif unicodedata.category(char) == "Co":
            found.add("private_use")
    return found | ({"bidi"} if not all(runs) else set())


def _tag_text(text: str) -> str:
    """The ASCII that tag characters spell (U+E0041 is "A")."""
    return "".join(chr(ord(c) - 0xE0000) for c in text if ord(c) in TAG_BLOCK and 0x20 <= ord(c) - 0xE0000 < 0x7F)


def _selector_text(text: str) -> str:
    """The bytes each run of variation selectors carries, as UTF-8 text (a lone selector after an
    emoji carries none)."""
    return " ".join(
        bytes(ord(c) - 0xFE00 if ord(c) in _VS else ord(c) - 0xE0100 + 16 for c in run).decode("utf-8", "ignore")
        for run in _VS_RUN_RE.findall(text)
    )


def _texts(blobs: list[str], decode) -> list[str]:
    """What each blob decodes to (`decode`: bytes' text, or an error), where it reads as text: printable,
    with enough Latin letters or a Chinese character."""
    texts = []
    for blob in blobs:
        try:
            decoded = decode(blob)
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        if decoded.isprintable() and (
            len(_LATIN_RE.findall(decoded)) >= _MIN_DECODED_LETTERS or CJK_RE.search(decoded)
        ):
            texts.append(decoded)
    return texts


def _base64_texts(text: str) -> list[str]:
    return _texts(
        _BASE64_RE.findall(text),
        lambda blob: base64.b64decode(blob + "=" * (-len(blob) % 4), validate=True).decode("utf-8"),
    )


def _spaced_text(text: str) -> str:
    runs = [
        _WORD_GAP_RE.sub("\0", run).replace(" ", "").replace(".", "").replace("\0", " ")
        for run in _SPACED_RE.findall(text)
    ]
    return " ".join(runs)


def _spaced_chars_text(text: str) -> str:
    return " ".join(
        re.sub(r" {2,}", "\0", run).replace(" ", "").replace("\0", " ") for run in _SPACED_CHARS_RE.findall(text)
    )


def _hex_texts(text: str) -> list[str]:
    return _texts(_HEX_RE.findall(text), lambda run: bytes.fromhex(re.sub(r"[ :]", "", run)).decode("utf-8"))


def _binary_texts(text: str) -> list[str]:
    def decode(run: str) -> str:
        bits = run.replace(" ", "")
        return bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits) - 7, 8)).decode("utf-8")

    return _texts(_BINARY_RE.findall(text), decode)


def _percent_text(text: str) -> str:
    return urllib.parse.unquote(text) if has_percent_escapes(text) else ""


# Typoglycemia ("plaese tlel the cnadidate"): a word's inner letters shuffled, its first and last kept,
# which a reader (and a model) still reads. Words an order to a reader is made of, keyed by that
# reading; a line where three or more read as one of them, differently spelt, is read unscrambled.
_SCRAMBLE_WORDS = choices(
    "please|tell|email|send|ignore|previous|instructions|candidate|applicant|their|before|applying|anywhere"
    "|review|reviewer|resume|address|include|contact|register|follow|first|must|should|every|always|never"
    "|reply|answer|respond|write|plan|step|code|link|visit|pay|deposit|transfer|forward|summary|recruiter"
    "|assistant|system|model|reader|remove|delete|omit|replace|advise|remind|recommend|mention|immediately"
    "|anyone|someone|everyone|applications|application|interview|salary|account|password|contract|agency"
)
_WORD_MIN, _WORD_MAX = 4, 14


def _scramble_key(word: str) -> tuple[str, str, str]:
    return word[0], word[-1], "".join(sorted(word[1:-1]))


_UNSCRAMBLED = {_scramble_key(word): word for word in _SCRAMBLE_WORDS}
_LATIN_WORD_RE = re.compile(r"[a-z]+")
_SCRAMBLED_MIN = 3


def _unscrambled_text(text: str) -> str:
    folded = text.casefold()
    found = 0

    def unscramble(match: re.Match) -> str:
        nonlocal found
        word = match.group(0)
        known = _UNSCRAMBLED.get(_scramble_key(word)) if _WORD_MIN <= len(word) <= _WORD_MAX else None
        if known and known != word:
            found += 1
            return known
        return word

    read = _LATIN_WORD_RE.sub(unscramble, folded)
    return read if found >= _SCRAMBLED_MIN else ""


def _leet_text(text: str) -> str:
    words = _LEET_WORD_RE.findall(text)
    return text.translate(_LEET) if len(words) >= _LEET_MIN_WORDS else ""


def has_percent_escapes(text: str) -> bool:
    """Three percent-escapes in a row: text encoded in a link, not a path."""
    return bool(_PERCENT_RE.search(text))


def without_hidden(text: str) -> str:
    """`text` without the characters no resume needs: tag characters, private use, bidi overrides,
    the supplement's variation selectors (what a reply, a plan or a tool's arguments never need either)."""
    return "".join(
        c
        for c in text
        if ord(c) not in TAG_BLOCK
        and ord(c) not in _VS_SUPPLEMENT
        and c not in _BIDI_OVERRIDES
        and unicodedata.category(c) != "Co"
    )


def decoded_forms(line: str, *, every: bool = False) -> list[str]:
    """The readings of `line` that decoding gives: its tag characters as ASCII, the bytes its variation
    selectors carry, each base64 blob that decodes to text, its letters (or characters) spaced out
    joined, its hex and binary bytes and percent-escapes decoded, its digits read as letters, its
    shuffled words unscrambled, and ROT13 (of a line with Latin letters)
    and reversed, these two where the line holds an order's word so encoded (`every`: always, as a
    model that decodes everything would read it)."""
    folded = line.casefold()
    forms = [_tag_text(line), _selector_text(line), *_base64_texts(line), _spaced_text(line), _spaced_chars_text(line)]
    forms += [*_hex_texts(line), *_binary_texts(line), _percent_text(line), _leet_text(line), _unscrambled_text(line)]
    if every or _REVERSED_HINT_RE.search(folded):
        forms.append(line[::-1])
    if len(_LATIN_RE.findall(line)) >= _MIN_DECODED_LETTERS and (every or _ROT13_HINT_RE.search(folded)):
        forms.append(codecs.encode(line, "rot13"))
    return [form for form in forms if form.strip()]
