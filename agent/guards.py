"""Output and tool guards: text from a flagged resume line never reaches a reply or a tool.

They run in code around the model, as the LlmAgent's callbacks (ADK's public API), so
they hold whichever model runs, the one that obeys every line it reads included:

* `guard_model_response` (after_model_callback): a reply sentence that carries
  something found only in flagged text (a link, an e-mail address, a code such as
  "PWNED-7731", or a run of its wording) is dropped, and a note in the reply's language
  says so; the same found in a tool call's arguments is replaced by `REDACTED` before
  the call is recorded or run (flag_suspicious_text's `excerpt` aside: quoting the line
  is what a flag is for).
* `guard_tool_call` (before_tool_callback): `save_plan` refuses a plan that still holds
  such text or a redaction, and answers the model with a note instead of saving.

"Found only in flagged text": a link, address or code counts when it appears in a flagged
line and nowhere else in the resume nor in the person's own messages (what they asked for
is theirs); a run of wording counts when it is at least `RUN_MIN_CHARS` long
(`RUN_MIN_CHARS_CJK` for Chinese) and appears in no clean line or message either.
Flagged lines are the screen's (stored with the session) and the model's own flags, and also any
line that reads as an instruction (`agent.screening.held_lines`), flagged or not: the guards
do not rest on the screen's recall alone. Texts are compared as `agent.text.reading` reads them
(look-alike letters and invisible characters undone), so a disguised copy is the same text.
Phone and account numbers count by their digits ("0912-345-678" is "0912345678").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from agent.screening import flagged_lines, held_lines
from agent.text import BULLET_RE, CJK_RE, DOMAIN_RE, EMAIL_RE, LINK_RE, long_numbers, reading, script_weights

RUN_MIN_CHARS = 16
RUN_MIN_CHARS_CJK = 6
WHOLE_MIN_CHARS = 4  # a held line repeated whole counts from this length ("好的。", "## assistant")
REDACTED = "[removed: text from a flagged resume line]"
FLAG_TOOL = "flag_suspicious_text"
NOTES = {
    "en": "[A link, address or instruction that appears only in a flagged line of your resume was left out.]",
    "zh-Hant": "[回覆中只出現在履歷標記行裡的連結、地址或指示已被移除。]",
}
PLAN_REFUSED = {
    "error": "plan_refused",
    "note": "save_plan refused: the plan holds text that appears only in a flagged resume line (a link, address,"
    " code or instruction). Write the plan in your own words from the person's real experience, without it.",
}

_CODE_RE = re.compile(r"(?<![a-z0-9_-])[_-]*+((?=[a-z0-9_-]*\d)(?=[a-z0-9_-]*[a-z])[a-z0-9][a-z0-9_-]{4,})\b")
_ITEM_RES = (LINK_RE, EMAIL_RE, DOMAIN_RE, _CODE_RE)  # links, e-mail addresses, domains, codes ("PWNED-7731")

# Sentence ends: . ! ? before a space (not inside a link), or a Chinese terminator.
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


def _items(text: str) -> set[str]:
    """Links, e-mail addresses, domains, codes and long numbers (by their digits)."""
    return {match.rstrip(".,;:") for pattern in _ITEM_RES for match in pattern.findall(text)} | long_numbers(text)


def _has_item(text: str) -> bool:
    return bool(_items(text))


def _bare(text: str) -> str:
    """A read line without its bullet or number ("1. ", "- ")."""
    return BULLET_RE.sub("", text)


def _windows(text: str) -> set[str]:
    """Every run of wording long enough to count: RUN_MIN_CHARS characters, or RUN_MIN_CHARS_CJK
    that hold a Chinese character. A text of n characters has fewer than 2n of them."""
    runs = {text[i : i + RUN_MIN_CHARS] for i in range(len(text) - RUN_MIN_CHARS + 1)}
    short = RUN_MIN_CHARS_CJK
    runs |= {text[i : i + short] for i in range(len(text) - short + 1) if CJK_RE.search(text, i, i + short)}
    return runs


@dataclass(frozen=True)
class Taint:
    """What may not leave flagged lines: their items and runs of wording, minus what is clean.

    Both are sets of strings looked up in a hash, so checking a text costs time linear in its
    length whatever the flagged lines hold. (difflib's matching blocks took 346 s to compare a
    4,000-character answer with a flagged line of 4,000 `a`s: cubic in the lengths.)"""

    flagged: tuple[str, ...]  # normalised flagged lines
    items: frozenset[str]  # links, addresses and codes found only in flagged lines
    runs: frozenset[str]  # runs of flagged wording found in no clean line or message
    # Held lines themselves, bullet-less: one repeated whole never passes, even when every run of
    # its wording also appears in a clean line (a forged turn that quotes the resume).
    whole: frozenset[str] = frozenset()

    @classmethod
    def of(cls, state: Mapping, messages: Iterable[str] = ()) -> Taint:
        # Stripped as the prompt strips it: the same text, the same lines.
        resume = str(state.get("resume_text") or "").strip("\n")
        # Not the screen's word alone: a line that reads as an instruction is held back too.
        flags = list(state.get("suspicious_flags") or [])
        flagged, reads = held_lines(resume, flagged_lines(resume, flags), _has_item)
        if not flagged:
            return cls((), frozenset(), frozenset())
        flagged_set = set(flagged)
        clean = [read for line, read in reads.items() if line not in flagged_set] + [reading(m) for m in messages]
        norm_flagged = tuple(reads.get(line) or reading(line) for line in flagged)
        clean_items = {item for text in clean for item in _items(text)}
        items = {item for line in norm_flagged for item in _items(line)} - clean_items
        runs = set().union(*map(_windows, norm_flagged)) - set().union(*map(_windows, clean))
        whole = {_bare(line) for line in norm_flagged} - {_bare(text) for text in clean}
        return cls(
            norm_flagged, frozenset(items), frozenset(runs), frozenset(w for w in whole if len(w) >= WHOLE_MIN_CHARS)
        )

    def __bool__(self) -> bool:
        return bool(self.flagged)

    def hits(self, text: Any) -> bool:
        """Does `text` carry a flagged line's item or a run of its wording found nowhere clean?"""
        norm = reading(text)
        if not self or not norm:
            return False
        if not (self.items.isdisjoint(_items(norm)) and self.runs.isdisjoint(_windows(norm))):
            return True
        return any(_bare(reading(line)) in self.whole for line in str(text).splitlines())


def _messages(callback_context: CallbackContext) -> list[str]:
    """The person's own messages in this session (the current one included)."""
    texts = []
    contents = [event.content for event in callback_context.session.events if event.author == "user"]
    for content in [*contents, callback_context.user_content]:
        for part in (content.parts if content else None) or []:
            if part.text:
                texts.append(part.text)
    return texts


def taint_of(callback_context: CallbackContext) -> Taint:
    return Taint.of(callback_context.state, _messages(callback_context))


def clean_reply(text: str, taint: Taint) -> tuple[str, bool]:
    """(the reply without the sentences that carry flagged text, whether any was dropped)."""
    if not taint.hits(text):
        return text, False
    kept_lines = []
    for line in text.split("\n"):
        if not taint.hits(line):
            kept_lines.append(line)
            continue
        sentences = [s for s in _SENTENCE_END_RE.split(line) if s.strip()]
        kept = " ".join(s.strip() for s in sentences if not taint.hits(s)).strip()
        if kept and not taint.hits(kept):  # what is left, read whole, must be clean too
            kept_lines.append(kept)
    return "\n".join(kept_lines).strip("\n"), True


def note_for(text: str) -> str:
    cjk, latin = script_weights(text)
    return NOTES["zh-Hant"] if cjk > latin else NOTES["en"]


def redact_args(value: Any, taint: Taint) -> tuple[Any, bool]:
    """`value` with every string that carries flagged text replaced by REDACTED."""
    if isinstance(value, str):
        return (REDACTED, True) if taint.hits(value) else (value, False)
    if isinstance(value, dict):
        pairs = {key: redact_args(item, taint) for key, item in value.items()}
        return {key: item for key, (item, _) in pairs.items()}, any(hit for _, hit in pairs.values())
    if isinstance(value, (list, tuple)):
        pairs = [redact_args(item, taint) for item in value]
        return [item for item, _ in pairs], any(hit for _, hit in pairs)
    return value, False


def guard_model_response(callback_context: CallbackContext, llm_response: LlmResponse) -> LlmResponse | None:
    """after_model_callback: the response without flagged text (None: nothing to change)."""
    content = llm_response.content
    if content is None or not content.parts:
        return None
    taint = taint_of(callback_context)
    if not taint:
        return None
    parts, changed, dropped_text = [], False, False
    for part in content.parts:
        if part.text and not part.thought:
            text, dropped = clean_reply(part.text, taint)
            if dropped:
                changed = dropped_text = True
                part = part.model_copy(update={"text": text})
        elif part.function_call and part.function_call.name:
            args = dict(part.function_call.args or {})
            kept = (
                {"excerpt": args.pop("excerpt")} if part.function_call.name == FLAG_TOOL and "excerpt" in args else {}
            )
            redacted, hit = redact_args(args, taint)
            if hit:
                changed = True
                call = part.function_call.model_copy(update={"args": {**redacted, **kept}})
                part = part.model_copy(update={"function_call": call})
        parts.append(part)
    if not changed:
        return None
    if dropped_text:
        texts = [p for p in parts if p.text and not p.thought]
        note = note_for(" ".join(p.text for p in texts))
        if texts:
            last = texts[-1]
            parts[parts.index(last)] = last.model_copy(update={"text": f"{last.text}\n\n{note}".lstrip()})
        else:
            parts.append(types.Part(text=note))
    return llm_response.model_copy(update={"content": types.Content(role=content.role, parts=parts)})


def guard_tool_call(tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> dict | None:
    """before_tool_callback: save_plan refuses flagged text (None: the tool runs)."""
    if tool.name != "save_plan":
        return None
    plan = str(args.get("plan", ""))
    if REDACTED in plan or taint_of(tool_context).hits(plan):
        return dict(PLAN_REFUSED)
    return None
