"""Deterministic claim checking against the resume (no model, no dependencies).

The service runs `verify_reply` on every reply, whatever the model did, so a
model that skips `verify_claims` still gets its claims checked.

The rule, kept simple so a person can explain any verdict:

* A text's *content tokens* are: English words (lowercased, a plural "s"
  dropped, stopwords removed), numbers (commas removed: "40,000" -> "40000"),
  and for Chinese/Japanese text, overlapping character bigrams (a lone CJK
  character counts as itself). Bigrams holding a particle such as 的/在/是 are
  dropped, as are generic verbs such as 擔任/工作.
* The person's name (first resume line) is the subject of every claim, not
  evidence, so its tokens are ignored unless nothing else is left.
* A claim is **supported** when ONE resume line covers at least
  `SUPPORT_THRESHOLD` (60%) of the claim's content tokens AND every number in
  the claim appears on that same line. The best-covering line is the evidence.
  An unsupported claim gets evidence "" so no line is shown as backing it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.text import BULLET_RE, CJK, NUMBERED_RE

SUPPORT_THRESHOLD = 0.6
NAME_MAX_CHARS = 80

_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "from",
        "with",
        "as",
        "into",
        "onto",
        "over",
        "under",
        "about",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "will",
        "would",
        "can",
        "could",
        "should",
        "may",
        "might",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "than",
        "then",
        "so",
        "such",
        "very",
        "also",
        "just",
        "only",
        "not",
        "no",
        "i",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "yours",
        "he",
        "him",
        "his",
        "she",
        "her",
        "they",
        "them",
        "their",
        "who",
        "whom",
        "which",
        "what",
        "per",
        "via",
        "up",
        "out",
        "across",
        "while",
        "during",
        "after",
        "before",
        "since",
        "until",
        "experience",
        "experienced",
        "skill",
        "skilled",
        "strong",
        "worked",
        "work",
        "working",
        "role",
        "position",
        "resume",
        "cv",
        "including",
        "include",
        "includes",
        "list",
        "listed",
        "profile",
        "background",
    ]
)
# CJK characters that are grammar, not content; any bigram containing one is dropped.
_CJK_STOP_CHARS = frozenset("的了在是曾於于和與与及也都很您你妳他她我其此並并而")
_CJK_STOP_BIGRAMS = frozenset(
    [
        "擔任",
        "担任",
        "工作",
        "負責",
        "负责",
        "經驗",
        "经验",
        "曾經",
        "曾经",
        "目前",
        "現在",
        "现在",
        "擁有",
        "拥有",
        "具有",
        "具備",
        "具备",
        "履歷",
        "履历",
    ]
)

_TOKEN_RE = re.compile(rf"(?P<num>\d[\d,]*(?:\.\d+)?)|(?P<word>[a-z][a-z0-9+#]*)|(?P<cjk>[{CJK}]+)")
# Split after CJK terminators anywhere, or after . ! ? followed by whitespace,
# except after a one-letter abbreviation such as the "S." in "M.S.".
_SENTENCE_END_RE = re.compile(r"(?<=[。！？])\s*|(?<=[.!?])(?<!\b[A-Za-z]\.)\s+|\s+[•·▪]\s+")

_PERSON_WORDS = frozenset({"you", "your", "yours", "yourself"})
_PERSON_CJK = ("您", "你", "妳")
_GREETINGS = frozenset({"hi", "hello", "hey", "dear", "welcome"})
_GREETINGS_CJK = ("你好", "您好", "嗨", "哈囉", "哈喽")
# Advice verbs: a sentence opening with one is a recommendation, not a claim.
_IMPERATIVES = frozenset(
    [
        "apply",
        "target",
        "prepare",
        "update",
        "practice",
        "reach",
        "network",
        "highlight",
        "consider",
        "learn",
        "contribute",
        "write",
        "ask",
        "research",
        "schedule",
        "tailor",
        "focus",
        "add",
        "lead",
        "emphasize",
        "emphasise",
        "quantify",
        "build",
        "show",
        "start",
        "keep",
        "review",
        "polish",
        "join",
        "attend",
        "follow",
        "try",
        "use",
        "make",
        "plan",
        "let",
    ]
)
_IMPERATIVES_CJK = (
    "建議",
    "建议",
    "準備",
    "准备",
    "投遞",
    "投递",
    "申請",
    "申请",
    "更新",
    "練習",
    "练习",
    "加強",
    "加强",
    "請",
    "请",
)


def split_sentences(text: str) -> list[str]:
    """Sentences of English/Chinese text: split on newlines, . ! ? 。！？ and bullets."""
    sentences = []
    for line in (text or "").splitlines():
        line = BULLET_RE.sub("", line)
        for piece in _SENTENCE_END_RE.split(line):
            piece = piece.strip()
            if piece:
                sentences.append(piece)
    return sentences


def resume_name(resume_text: str) -> str:
    """The person's name: the resume's first non-empty line, stripped and capped."""
    for line in (resume_text or "").splitlines():
        if line.strip():
            return line.strip()[:NAME_MAX_CHARS]
    return ""


def _normalise_word(word: str) -> str:
    # Crude plural folding ("services" ~ "service"), applied to both sides alike.
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def tokens(text: str) -> tuple[set[str], set[str]]:
    """(content tokens, numbers) of `text`; numbers are also content tokens."""
    content, numbers = set(), set()
    for match in _TOKEN_RE.finditer((text or "").lower()):
        if match.group("num"):
            number = match.group("num").replace(",", "")
            content.add(number)
            numbers.add(number)
        elif match.group("word"):
            word = match.group("word")
            if len(word) > 1 and word not in _STOPWORDS:
                content.add(_normalise_word(word))
        else:
            run = match.group("cjk")
            grams = [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
            for gram in grams:
                if gram not in _CJK_STOP_BIGRAMS and not any(c in _CJK_STOP_CHARS for c in gram):
                    content.add(gram)
    return content, numbers


@dataclass(frozen=True)
class _ResumeIndex:
    """The resume as claims are checked against it: each line with its tokens, and the name's
    tokens. Built once per reply (`verify_reply`), not once per claim and line."""

    lines: list[tuple[str, set[str]]]
    name_tokens: set[str]

    @classmethod
    def of(cls, resume_text: str) -> _ResumeIndex:
        lines = [(line.strip(), tokens(line)[0]) for line in (resume_text or "").splitlines()]
        return cls(lines, tokens(resume_name(resume_text))[0])


def _claim_tokens(claim: str, index: _ResumeIndex) -> tuple[set[str], set[str]]:
    content, numbers = tokens(claim)
    without_name = content - index.name_tokens
    return (without_name or content), numbers


def check_claim(claim: str, resume_text: str, index: _ResumeIndex | None = None) -> dict:
    """Is `claim` backed by a single resume line? Returns claim/supported/evidence."""
    index = index or _ResumeIndex.of(resume_text)
    wanted, numbers = _claim_tokens(claim, index)
    best_line, best_cover = "", 0.0
    if wanted:
        for line, have in index.lines:
            cover = len(wanted & have) / len(wanted)
            if cover > best_cover and numbers <= have:
                best_line, best_cover = line, cover
    supported = best_cover >= SUPPORT_THRESHOLD
    return {"claim": claim, "supported": supported, "evidence": best_line if supported else ""}


def check_claims(claims: list[str], resume_text: str) -> list[dict]:
    """check_claim for each claim, against one index of the resume."""
    index = _ResumeIndex.of(resume_text)
    return [check_claim(claim, resume_text, index) for claim in claims]


def _is_claim(sentence: str, index: _ResumeIndex) -> bool:
    """Does this reply sentence assert something about the person?

    Skipped: questions, headings (trailing colon or leading #), bracketed
    notices like "[offline model ...]", greetings, and advice that opens with
    an imperative verb. Kept: sentences that mention the person (their name,
    you/your/您/你) or contain a number, and that have something to check.
    """
    s = sentence.strip()
    if not s or s[-1] in "?？:：" or s.startswith("#") or (s.startswith("[") and s.endswith("]")):
        return False
    words = re.findall(r"[a-z]+", s.lower())
    first = words[0] if words and s[0].isascii() else ""
    if first in _GREETINGS or s.startswith(_GREETINGS_CJK):
        return False
    if first in _IMPERATIVES or s.startswith(_IMPERATIVES_CJK):
        return False
    content, numbers = tokens(s)
    mentions_person = (
        bool(_PERSON_WORDS & set(words)) or any(p in s for p in _PERSON_CJK) or bool(content & index.name_tokens)
    )
    return bool(content) and (mentions_person or bool(numbers))


def verify_reply(reply: str, resume_text: str) -> list[dict]:
    """check_claim for every claim sentence in a model reply.

    Numbered lines ("1. ...", "一、...") are plan steps, not claims, and are skipped.
    """
    results, index = [], _ResumeIndex.of(resume_text)
    for line in (reply or "").splitlines():
        if NUMBERED_RE.match(line):
            continue
        for sentence in split_sentences(line):
            if _is_claim(sentence, index):
                results.append(check_claim(sentence, resume_text, index))
    return results
