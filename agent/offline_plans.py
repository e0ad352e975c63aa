"""The offline model's job-search plans, and the changes asked for in them.

`revision_so_far` replays every message that saved a plan (by `classify_message`) and
merges the changes they asked for into a `Revision`: focus phrases, skills to lead with,
extra steps (remote roles, salary, interviews, referrals), requests the rules do not
recognise kept in the person's words, a shorter or longer plan. `build_plan` writes the
numbered plan from the resume's facts and that revision; `plan_changes` names, in short
phrases, what one version changed from the one before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .offline_intents import INTERVIEW_RE, SALARY_RE, classify_message
from .offline_texts import TEXTS
from .resume_lines import ResumeFacts
from .text import choices, fold, script_weights

MAX_NOTE_CHARS = 200
MAX_FOCUS_CHARS = 80
MAX_REMEMBERED = 3  # focus phrases, skills and notes a plan keeps from the conversation

# --- the changes asked for, replayed from the messages --------------------------------

_FOCUS_EN_RE = re.compile(
    r"\b(?:focus(?:ed|ing)?|concentrate|target(?:ing)?|prioriti[sz]e|look(?:ing)? for|interested in|"
    r"prefer(?:ring)?|switch to|aim (?:at|for))\s+(?:more\s+|only\s+|mainly\s+|mostly\s+)?(?:on\s+|at\s+)?"
    r"(?P<what>[^.!?;\n]+)",
    re.IGNORECASE,
)
_FOCUS_ZH_RE = re.compile(
    r"(?:專注|专注|聚焦|鎖定|锁定|只找|想找|改找|偏好|著重|着重|集中|目標是|目标是|目標放在|目标放在|改成|改為|改为|換成|换成)"
    r"(?:在|於|于)?(?P<what>[^。！？；!?;\n]+)"
)
_TRAILING_FILLER = choices("please|pls|thank you|thanks|thx|謝謝|谢谢|感謝|感谢|請|请|好嗎|好吗|可以嗎|可以吗|吧")
_SHORT_RE = re.compile(
    r"\b(?:short(?:er|en)?|concise|brief(?:er)?|simpler|fewer steps)\b|簡短|简短|精簡|精简|縮短|缩短|短一點|短一点"
)
_LONG_RE = re.compile(r"\b(?:longer|more detail(?:s|ed)?|detailed|expand)\b|詳細|详细|長一點|长一点")
_EXTRAS = (
    ("remote", re.compile(r"\b(?:remote|work from home|wfh)\b|遠端|远程|遠距|远距|在家工作")),
    ("salary", SALARY_RE),
    ("interview", INTERVIEW_RE),
    ("network", re.compile(r"\b(?:network(?:ing)?|referrals?|linkedin)\b|人脈|人脉|內推|内推|推薦|推荐")),
)
# What a bare "update my plan, please" is made of: nothing to act on beyond saving again.
_FILLER_RE = re.compile(
    r"\b(?:please|pls|can|could|would|you|the|my|a|an|it|this|that|plan|again|new|version|make|do|"
    r"revise|update|change|edit|modify|adjust|redo|rework|tweak|bit|some|and)\b"
    r"|請|请|幫我|帮我|麻煩|麻烦|可以|一下|我的|的|再|重新|一版|版本|計畫|計劃|计划|更新|修改|調整|调整|改|[^\w]"
)


def _without_trailing_filler(text: str) -> str:
    """ "Go roles in Tokyo, please" -> "Go roles in Tokyo" (string ends, not a regex: no backtracking)."""
    while True:
        text = text.rstrip(" ,，、")
        filler = next((word for word in _TRAILING_FILLER if text.lower().endswith(word)), "")
        before = text[: len(text) - len(filler)]
        if not filler or (filler.isascii() and before[-1:].isalpha()):  # "displease" keeps its "please"
            return text
        text = before


def _clean_phrase(text: str, limit: int) -> str:
    text = _without_trailing_filler(" ".join(text.split()))
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0]


def _focus_phrase(message: str) -> str:
    """What the person wants the search to focus on, in their words: "Go roles in Tokyo"."""
    text = fold(message, keep_case=True)
    match = _FOCUS_EN_RE.search(text) or _FOCUS_ZH_RE.search(text)
    return _clean_phrase(match.group("what"), MAX_FOCUS_CHARS) if match else ""


def _mentions_skill(message: str, skill: str) -> bool:
    # Short names ("Go", "R", "C") only as written, so "go to" and "a car" do not count.
    flags = 0 if len(skill) <= 3 else re.IGNORECASE
    return bool(re.search(rf"(?<![A-Za-z0-9]){re.escape(skill)}(?![A-Za-z0-9])", message, flags))


def _keep_latest(old: tuple[str, ...], new: Iterable[str]) -> tuple[str, ...]:
    merged = list(dict.fromkeys([*old, *new]))
    return tuple(merged[-MAX_REMEMBERED:])


@dataclass(frozen=True)
class Revision:
    """Every change the person asked for so far, replayed from their messages."""

    focus: tuple[str, ...] = ()
    skills: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    length: str = ""  # "short", "long" or "" (as drafted)

    def merged(self, other: Revision) -> Revision:
        return Revision(
            focus=_keep_latest(self.focus, other.focus),
            skills=_keep_latest(self.skills, other.skills),
            extras=tuple(dict.fromkeys([*self.extras, *other.extras])),
            notes=_keep_latest(self.notes, other.notes),
            length=other.length or self.length,
        )


def _weight(text: str) -> int:
    """About how many words: Latin words, and two Chinese characters to a word."""
    cjk, latin = script_weights(text)
    return latin + cjk // 2


def _revision_from(message: str, facts: ResumeFacts, is_change: bool) -> Revision:
    text = fold(message)
    revision = Revision(
        focus=tuple(filter(None, [_focus_phrase(message)])),
        skills=tuple(skill for skill in facts.skills if _mentions_skill(message, skill)),
        extras=tuple(kind for kind, pattern in _EXTRAS if pattern.search(text)),
        length="short" if _SHORT_RE.search(text) else "long" if _LONG_RE.search(text) else "",
    )
    # A change the rules do not recognise is kept in the person's words as a step, but a
    # bare "update my plan" has nothing in it to keep.
    if is_change and revision == Revision() and _weight(_FILLER_RE.sub(" ", text)) >= 2:
        revision = Revision(notes=(_clean_phrase(message, MAX_NOTE_CHARS),))
    return revision


def revision_so_far(user_messages: list[str], facts: ResumeFacts) -> Revision:
    """The changes asked for in every message that saved a plan, oldest first."""
    revision, saved_before = Revision(), False
    for message in user_messages:
        if classify_message(message, has_plan=saved_before).saves_plan:
            revision = revision.merged(_revision_from(message, facts, is_change=saved_before))
            saved_before = True
    return revision


# --- the plan --------------------------------------------------------------------------


def _sentence(text: str, lang: str = "en") -> str:
    return text if text.endswith((".", "!", "?", "。", "！", "？")) else text + ("。" if lang == "zh" else ".")


def _skills_in_order(facts: ResumeFacts, revision: Revision) -> list[str]:
    """The resume's skills, those the person asked to lead with first."""
    return list(dict.fromkeys([*revision.skills, *facts.skills]))[:6]


def _plan_steps(facts: ResumeFacts, revision: Revision, lang: str) -> list[str]:
    t = TEXTS[lang]
    base = []
    if facts.current_role:
        base.append(t["step_role"].format(line=_sentence(facts.current_role.line, lang)))
    if facts.best_result:
        base.append(t["step_result"].format(line=_sentence(facts.best_result, lang)))
    if facts.earlier_roles:
        base.append(t["step_story"].format(line=_sentence(facts.earlier_roles[0].line, lang)))
    if facts.projects:
        base.append(t["step_project"].format(line=_sentence(facts.projects[0], lang)))
    skills = _skills_in_order(facts, revision)
    if skills:
        base.append(t["step_skills"].format(skills=t["list_sep"].join(skills)))
    extras = list(revision.extras)
    if revision.length == "short":
        base, extras = base[:2], extras[:1]
    elif revision.length == "long":
        extras = list(dict.fromkeys([*extras, "network", "follow_up"]))
    focus = [t["step_focus"].format(focus=phrase) for phrase in revision.focus]
    notes = [t["step_note"].format(note=_sentence(note, lang)) for note in revision.notes]
    return [*focus, *base, *(t[f"step_{kind}"] for kind in extras), *notes, t["step_apply"]]


def build_plan(facts: ResumeFacts, revision: Revision, lang: str) -> str:
    """The numbered plan: the focus asked for, steps on the resume's lines, the extra steps and
    notes asked for, and applying every week last."""
    steps = _plan_steps(facts, revision, lang)
    return "\n".join(f"{i}. {step}" for i, step in enumerate(steps, 1))


def plan_changes(before: Revision, after: Revision, lang: str) -> list[str]:
    """What `after` changed from `before`, in short phrases (no sentence ends: they go in a bracket)."""
    t = TEXTS[lang]
    changes = [t["change_focus"].format(focus=f) for f in after.focus if f not in before.focus]
    new_skills = [s for s in after.skills if s not in before.skills]
    if new_skills:
        changes.append(t["change_skills"].format(skills=t["list_sep"].join(new_skills)))
    changes += [t[f"change_{kind}"] for kind in after.extras if kind not in before.extras]
    if after.length != before.length and after.length:
        changes.append(t[f"change_{after.length}"])
    if any(note not in before.notes for note in after.notes):
        changes.append(t["change_note"])
    return changes
