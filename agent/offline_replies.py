"""The offline model's final text for one turn: `compose_reply(Turn)`.

A reply is the offline banner, a greeting by name, a notice when the resume holds
injection-like text, the body (the saved plan, the answer to a question by its topic,
or small talk), how many of the reply's claims the resume supports, and a closing line.
`quotes_for` picks the 1-2 resume lines a reply quotes; the turn first sends them to
verify_claims, and only those it supported are quoted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .offline_intents import Intent
from .offline_texts import TEXTS
from .resume_lines import ResumeFacts, has_metric, role_title
from .verification import verify_reply

MAX_QUOTE_CHARS = 300  # longer lines are not quoted: cutting one could cut a number in half


@dataclass
class Turn:
    """Everything one reply is written from."""

    facts: ResumeFacts
    resume: str
    intent: Intent
    lang: str
    quotes: list[str]  # resume lines verify_claims supported, to quote
    plan_version: int = 0  # the latest saved plan (after this turn's save, if any)
    plan: str = ""
    changes: list[str] | None = None  # for a revision: what changed (None: a first plan)

    @property
    def t(self) -> dict:
        return TEXTS[self.lang]

    def greeting(self, key: str = "greeting") -> str:
        name = self.facts.name
        return self.t[key].format(name=name) if name else self.t[f"{key}_anon"]

    def quoted(self, lines: Iterable[str]) -> list[str]:
        return [self.t["quote"].format(line=line) for line in lines if line in self.quotes]

    def plan_status(self) -> str:
        return self.t["plan_status"].format(v=self.plan_version) if self.plan_version else self.t["no_plan_status"]


def _numbered(items: Iterable[str]) -> list[str]:
    return [f"{i}. {item}" for i, item in enumerate(items, 1)]


def _gaps(facts: ResumeFacts) -> list[tuple[str, str]]:
    """What a recruiter may miss on the resume, most useful first: (kind, the line concerned)."""
    gaps = []
    unquantified = [line for line in facts.results if not has_metric(line)]
    if unquantified:
        gaps.append(("no_number", unquantified[0]))
    bare = [role for role in facts.roles if role.line and not role.achievements]
    if bare:
        gaps.append(("no_results", bare[0].line))
    if not facts.roles:
        gaps.append(("no_roles", ""))
    if not facts.projects:
        gaps.append(("no_projects", ""))
    if len(facts.skills) < 5:
        gaps.append(("few_skills", ""))
    if not facts.has_summary:
        gaps.append(("no_summary", ""))
    return [*gaps[:3], ("tailor", "")] if len(gaps) < 2 else gaps[:3]


def _gap_lines(turn: Turn) -> list[str]:
    return _numbered(turn.t[f"gap_{kind}"].format(line=line) for kind, line in _gaps(turn.facts))


def _plan_step(plan: str, pattern: str) -> str:
    """The first numbered line of `plan` matching `pattern` (plans in either language)."""
    return next((line for line in plan.splitlines() if re.match(r"\s*\d", line) and re.search(pattern, line)), "")


def _relevant_step(turn: Turn, pattern: str) -> list[str]:
    step = _plan_step(turn.plan, pattern) if turn.plan_version else ""
    return [turn.t["plan_step_heading"].format(v=turn.plan_version), step.strip()] if step else []


def _role_line(facts: ResumeFacts) -> str:
    return facts.current_role.line if facts.current_role else ""


def _plan_reply(turn: Turn) -> list[str]:
    t, v = turn.t, turn.plan_version
    lines = [t["plan_basis"], *turn.quoted(turn.quotes)] if turn.quotes else []
    lines += [t["plan_revised" if turn.changes is not None else "plan_saved"].format(v=v), turn.plan]
    lines.append(t["plan_saved_note"].format(v=v))
    if turn.changes is not None:
        changes = t["list_sep"].join(turn.changes)
        lines.append(t["changes"].format(v=v, changes=changes) if changes else t["no_change"].format(v=v))
    return lines


def _salary_reply(turn: Turn) -> list[str]:
    t, facts = turn.t, turn.facts
    title = role_title(_role_line(facts))
    tips = [tip for tip in t["salary_tips"] if ("{title}" not in tip or title)]
    tips = [tip for tip in tips if "{result}" not in tip or facts.best_result]
    return [
        t["salary_intro"],
        *turn.quoted([_role_line(facts), facts.best_result]),
        t["salary_heading"],
        *_numbered(tip.format(title=title, result=facts.best_result) for tip in tips),
        *_relevant_step(turn, r"(?i)salary|pay|薪"),
    ]


def _weaknesses_reply(turn: Turn) -> list[str]:
    t, facts = turn.t, turn.facts
    strengths = turn.quoted([facts.best_result])
    tips = [tip for tip in t["weak_interview_tips"] if "{result}" not in tip or facts.best_result]
    return [
        t["weak_intro"],
        *_gap_lines(turn),
        *([t["weak_strength"], *strengths] if strengths else []),
        t["weak_interview"],
        *_numbered(tip.format(result=facts.best_result) for tip in tips),
        *_relevant_step(turn, r"(?i)quantif|measurable|量化"),
    ]


def _improve_reply(turn: Turn) -> list[str]:
    keep = turn.quoted([turn.facts.best_result])
    return [
        turn.t["improve_intro"],
        *_gap_lines(turn),
        *([turn.t["improve_keep"], *keep] if keep else []),
        *_relevant_step(turn, r"(?i)quantif|measurable|量化"),
    ]


def _interview_reply(turn: Turn) -> list[str]:
    t, facts = turn.t, turn.facts
    tips = [tip for tip in t["interview_tips"] if "{role}" not in tip or _role_line(facts)]
    tips = [tip for tip in tips if "{skills}" not in tip or facts.skills]
    skills = t["list_sep"].join(facts.skills[:4])
    return [
        t["interview_intro"],
        *turn.quoted(facts.results[:2] or [_role_line(facts)]),
        t["interview_heading"],
        *_numbered(tip.format(role=_role_line(facts), skills=skills) for tip in tips),
        *_relevant_step(turn, r"STAR|(?i:interview)|面試"),
    ]


def _review_reply(turn: Turn) -> list[str]:
    t = turn.t
    return [t["review_intro"], *turn.quoted(turn.quotes), t["improve_intro"], *_gap_lines(turn)]


def _current_plan_reply(turn: Turn) -> list[str]:
    t = turn.t
    basis = turn.quoted([_role_line(turn.facts)])
    if not turn.plan_version:
        return [t["no_plan"], *([t["current_basis"], *basis] if basis else [])]
    plan = [line for line in turn.plan.splitlines() if line.strip()]
    return [t["current_plan"].format(v=turn.plan_version), *plan, *([t["current_basis"], *basis] if basis else [])]


def _general_reply(turn: Turn) -> list[str]:
    t = turn.t
    role = turn.quoted([_role_line(turn.facts)])
    return [t["general_intro"], t["general_topics"], *([t["role_heading"], *role] if role else [])]


def _chat_reply(turn: Turn) -> list[str]:
    t = turn.t
    role = turn.quoted([_role_line(turn.facts)])
    lines = [t["noted"]] if turn.intent.topic == "other" else []
    return [*lines, *([t["role_heading"], *role] if role else [])]


_ANSWERS = {
    "salary": _salary_reply,
    "weaknesses": _weaknesses_reply,
    "interview": _interview_reply,
    "improve": _improve_reply,
    "review": _review_reply,
    "current_plan": _current_plan_reply,
    "general": _general_reply,
}


def _closing(turn: Turn) -> list[str]:
    t, topic = turn.t, turn.intent.topic
    if turn.intent.saves_plan:
        return [t["plan_closing"]]
    if turn.intent.kind == "chat":
        return [turn.plan_status(), t["chat_closing"]]
    if topic == "review":
        return [turn.plan_status(), t["review_closing"]]
    return [turn.plan_status(), t["change_hint"] if turn.plan_version else t["no_plan_hint"]]


def compose_reply(turn: Turn) -> str:
    """The final text. Its claim count comes from `verify_reply` over the reply itself, the
    check the service runs on it; the count line is a bracketed notice, which that check
    skips, so adding it does not change what it counts."""
    t = turn.t
    greeting = turn.greeting("thanks" if turn.intent.topic == "thanks" else "greeting")
    head = [t["banner"], greeting, *([t["flagged"]] if turn.facts.suspicious else [])]
    if turn.intent.saves_plan:
        body = _plan_reply(turn)
    elif turn.intent.kind == "question":
        body = _ANSWERS[turn.intent.topic](turn)
    else:
        body = _chat_reply(turn)
    closing = _closing(turn)
    checks = verify_reply("\n".join([*head, *body, *closing]), turn.resume)
    count = [t["count"].format(n=sum(bool(c["supported"]) for c in checks), m=len(checks))] if checks else []
    return "\n".join([*head, *body, *count, *closing])


def quotes_for(facts: ResumeFacts, intent: Intent) -> list[str]:
    """The 1-2 resume lines the reply will quote (and first sends to verify_claims)."""
    role, results = _role_line(facts), facts.results
    if intent.kind == "question" and intent.topic in ("weaknesses", "improve"):
        picks = results[:1]
    elif intent.kind == "question" and intent.topic == "interview":
        picks = results[:2]
    elif intent.saves_plan or intent.topic in ("salary", "review"):
        picks = [role, *results[:1]]
    else:
        picks = [role]
    picks = [line for line in picks if line and len(line) <= MAX_QUOTE_CHARS]
    fallback = [ln for ln in [role, *results, facts.skills_line] if ln and len(ln) <= MAX_QUOTE_CHARS][:1]
    return list(dict.fromkeys(picks or fallback))
