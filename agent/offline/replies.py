"""What the offline model writes: the plan (`build_plan`, `plan_changes`) and the reply.

A reply (`compose_reply`) is the offline banner, a greeting by name, a notice when the resume
holds injection-like text, the body (the saved plan, the answer to a question by its topic, or
small talk), how many of the reply's claims the resume supports, and a closing line.
`quotes_for` picks the 1-2 resume lines a reply quotes; the turn first sends them to
verify_claims, and only those it supported are quoted.

Every text is advice (numbered steps, headings, imperatives, notices in brackets), never a
fact about the person: those come only from the quoted resume lines. The texts are English,
translated by gettext like every string of ours: for a Chinese reply, from the project's
catalogue (locale/zh_Hant/LC_MESSAGES/django.mo, read with Python's gettext: agent/ imports
no Django), whichever language the page is in.
"""

from __future__ import annotations

import functools
import gettext
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from agent.offline.messages import Intent, Revision
from agent.offline.resume import ResumeFacts, has_metric, role_title
from agent.verification import verify_reply

MAX_QUOTE_CHARS = 300  # longer lines are not quoted: cutting one could cut a number in half
_ZH_HANT = gettext.translation("django", Path(__file__).resolve().parents[2] / "locale", ["zh_Hant"], fallback=True)


def gettext_noop(message: str) -> str:
    """Marks a text for the catalogue; it is translated where it is used."""
    return message


@functools.cache
def translation(lang: str) -> Callable[..., str]:
    """gettext for a reply in `lang`: "zh" (Traditional Chinese) from the catalogue, "en" as written.

    `_(text, **values)` is the text translated and filled in with `values`, or "" when one of them
    is "" or None: a step or a tip about something the resume lacks is left out."""
    catalogue = _ZH_HANT.gettext if lang == "zh" else str

    def _(text: str, **values: object) -> str:
        if any(value is None or value == "" for value in values.values()):
            return ""
        return catalogue(text).format(**values) if values else catalogue(text)

    return _


OFFLINE_BANNER = gettext_noop("[offline model — no GOOGLE_API_KEY set; deterministic demo reply]")
OFFLINE_BANNER_ZH = translation("zh")(OFFLINE_BANNER)
_EXTRA_STEPS = {
    "remote": gettext_noop(
        "Filter job boards to remote roles and state in each application which time zones you can cover."
    ),
    "salary": gettext_noop(
        "Before final interviews, research the pay range for the role and prepare a range to ask for."
    ),
    "interview": gettext_noop("Practise two STAR stories aloud each week, each ending with its number."),
    "network": gettext_noop("Ask two former colleagues each week for a referral or an introduction."),
    "follow_up": gettext_noop(
        "Follow up a week after each application with a short note that restates your strongest result."
    ),
}
_CHANGES = {
    "remote": gettext_noop("a step for remote roles"),
    "salary": gettext_noop("a step to prepare the salary talk"),
    "interview": gettext_noop("a step to practise interviews"),
    "network": gettext_noop("a step for referrals"),
    "follow_up": gettext_noop("a step to follow up"),
    "short": gettext_noop("fewer steps"),
    "long": gettext_noop("more steps"),
}
_GAPS = {
    "no_number": gettext_noop(
        "This line has no number yet; add the scale or the result (users, %, time, money): {line}"
    ),
    "no_results": gettext_noop(
        "This role lists no result; add one or two lines on what changed because of your work: {line}"
    ),
    "no_roles": gettext_noop(
        "No role with a title and dates stands out; give each job a line: “Title, Employer (start–end)”."
    ),
    "no_projects": gettext_noop(
        "There is no projects section; one or two side projects show initiative beyond the job."
    ),
    "few_skills": gettext_noop(
        "The skills list is short; name the tools the target job ads ask for that you really use."
    ),
    "no_summary": gettext_noop(
        "There is no summary at the top; add two lines on the role you want and your strongest result."
    ),
    "tailor": gettext_noop(
        "The same resume sent everywhere is the most common weak point; reorder its top lines for each ad."
    ),
}


def _sentence(text: str, lang: str) -> str:
    return text if text.endswith((".", "!", "?", "。", "！", "？")) else text + ("。" if lang == "zh" else ".")


def _numbered(*items: str) -> list[str]:
    """The items that are not "", numbered."""
    return [f"{i}. {item}" for i, item in enumerate(filter(None, items), 1)]


# --- the plan --------------------------------------------------------------------------


def build_plan(facts: ResumeFacts, revision: Revision, lang: str) -> str:
    """The numbered plan: the focus asked for, steps on the resume's lines, the extra steps and
    notes asked for, and applying every week last."""
    _, role, result, earlier = translation(lang), facts.current_role, facts.best_result, facts.earlier_roles
    skills = list(dict.fromkeys([*revision.skills, *facts.skills]))[:6]  # those asked for first
    base = [  # each step only with its line: `_` leaves out a text with an empty value
        _("Lead every application with your current role: {line}", line=role and _sentence(role.line, lang)),
        _("Open your pitch with your strongest measurable result: {line}", line=result and _sentence(result, lang)),
        _(
            "Turn your earlier role into a STAR interview story: {line}",
            line=_sentence(earlier[0].line, lang) if earlier else None,
        ),
        _(
            "Show a project as evidence of initiative: {line}",
            line=_sentence(facts.projects[0], lang) if facts.projects else None,
        ),
        _("Target roles that ask for your core skills: {skills}.", skills=_(", ").join(skills)),
    ]
    base, extras = [step for step in base if step], list(revision.extras)
    if revision.length == "short":
        base, extras = base[:2], extras[:1]
    elif revision.length == "long":
        extras = list(dict.fromkeys([*extras, "network", "follow_up"]))
    return "\n".join(
        _numbered(
            *(_("Search focus, as you asked: {focus}.", focus=focus) for focus in revision.focus),
            *base,
            *(_(_EXTRA_STEPS[kind]) for kind in extras),
            *(_("Your request, kept as a step to act on: {note}", note=_sentence(n, lang)) for n in revision.notes),
            _("Apply to five well-matched roles each week and track every response."),
        )
    )


def plan_changes(before: Revision, after: Revision, lang: str) -> list[str]:
    """What `after` changed from `before`, in short phrases (no sentence ends: they go in a bracket)."""
    _ = translation(lang)
    changes = [_("search focus “{focus}”", focus=focus) for focus in after.focus if focus not in before.focus]
    skills = _(", ").join(skill for skill in after.skills if skill not in before.skills)
    changes += [_("{skills} first among the skills", skills=skills)] if skills else []
    changes += [_(_CHANGES[kind]) for kind in after.extras if kind not in before.extras]
    changes += [_(_CHANGES[after.length])] if after.length and after.length != before.length else []
    changes += [_("your request kept as a step")] if any(n not in before.notes for n in after.notes) else []
    return changes


# --- the reply -------------------------------------------------------------------------


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
    def _(self) -> Callable[..., str]:
        return translation(self.lang)

    @property
    def role_line(self) -> str:
        return self.facts.current_role.line if self.facts.current_role else ""

    def quoted(self, lines: Iterable[str], heading: str = "") -> list[str]:
        """The lines verify_claims supported, quoted; under `heading` if any."""
        quotes = [self._("- “{line}”", line=line) for line in lines if line in self.quotes]
        return [heading, *quotes] if quotes and heading else quotes

    def plan_status(self) -> str:
        v = self.plan_version or None
        return self._("[current plan: v{v}, unchanged; nothing was saved]", v=v) or self._(
            "[no plan saved yet; nothing was saved]"
        )

    def gap_lines(self) -> list[str]:
        """What a recruiter may miss on the resume, most useful first."""
        facts = self.facts
        unquantified = [line for line in facts.results if not has_metric(line)]
        bare = [role.line for role in facts.roles if role.line and not role.achievements]
        gaps = [("no_number", line) for line in unquantified[:1]] + [("no_results", line) for line in bare[:1]]
        missing = {"no_roles": not facts.roles, "no_projects": not facts.projects, "few_skills": len(facts.skills) < 5}
        gaps += [(kind, "") for kind, gap in {**missing, "no_summary": not facts.has_summary}.items() if gap]
        gaps = [*gaps[:3], ("tailor", "")] if len(gaps) < 2 else gaps[:3]
        return _numbered(*(self._(_GAPS[kind]).format(line=line) for kind, line in gaps))

    def plan_step(self, pattern: str) -> list[str]:
        """The first numbered step of the saved plan matching `pattern` (plans in either language)."""
        lines = self.plan.splitlines() if self.plan_version else []
        step = next((line for line in lines if re.match(r"\s*\d", line) and re.search(pattern, line)), "")
        return [self._("The step of plan v{v} that covers this:", v=self.plan_version), step.strip()] if step else []


def _plan_reply(turn: Turn) -> list[str]:
    _, v = turn._, turn.plan_version
    lines = turn.quoted(turn.quotes, _("What the plan builds on, from the resume:"))
    if turn.changes is None:
        return [*lines, _("Your job-search plan, saved as v{v}:", v=v), turn.plan, _("[plan v{v} saved]", v=v)]
    changes = _("[changes in v{v}: {changes}]", v=v, changes=_(", ").join(turn.changes)) or _(
        "[no specific change recognised, so v{v} repeats the plan; name a focus, a skill or “shorter”]", v=v
    )
    return [
        *lines,
        _("Your revised job-search plan, saved as v{v}:", v=v),
        turn.plan,
        _("[plan v{v} saved]", v=v),
        changes,
    ]


def _salary_reply(turn: Turn) -> list[str]:
    _, result = turn._, turn.facts.best_result
    return [
        _("Salary figures are out of reach offline, so here is how to negotiate from the resume's evidence:"),
        *turn.quoted([turn.role_line, result]),
        _("How to negotiate:"),
        *_numbered(
            _(
                "Look up the pay range for “{title}” in two salary surveys or job ads for the city and level you want.",
                title=role_title(turn.role_line),
            ),
            _(
                "Answer the first salary question with a researched range, not a single number, and put your"
                " target near its top."
            ),
            _("Tie the ask to your strongest result: {result}", result=result),
            _(
                "Negotiate the whole package (base, bonus, equity, remote days, training) once there is a"
                " written offer."
            ),
        ),
        *turn.plan_step(r"(?i)salary|pay|薪"),
    ]


def _weaknesses_reply(turn: Turn) -> list[str]:
    _, result = turn._, turn.facts.best_result
    return [
        _("Weak points a recruiter may notice on the resume, each with its fix:"),
        *turn.gap_lines(),
        *turn.quoted([result], _("What already works, and should stay at the top:")),
        _("If an interviewer asks about weaknesses:"),
        *_numbered(
            _("Name one real, minor weakness that does not block this job, and what you do about it."),
            _("Finish with a result that shows progress, such as: {result}", result=result),
        ),
        *turn.plan_step(r"(?i)quantif|measurable|量化"),
    ]


def _improve_reply(turn: Turn) -> list[str]:
    return [
        turn._("What to improve first:"),
        *turn.gap_lines(),
        *turn.quoted([turn.facts.best_result], turn._("Keep leading with this line, the strongest on the resume:")),
        *turn.plan_step(r"(?i)quantif|measurable|量化"),
    ]


def _interview_reply(turn: Turn) -> list[str]:
    _, facts, role = turn._, turn.facts, turn.role_line
    return [
        _("Stories to prepare for interviews, from the resume (STAR: situation, task, action, result):"),
        *turn.quoted(facts.results[:2] or [role]),
        _("How to prepare:"),
        *_numbered(
            _("Turn each line above into a two-minute STAR story that ends with its number."),
            _("Prepare a one-minute introduction that starts from your current role: {role}", role=role),
            _(
                "Expect questions on {skills}; prepare one concrete example for each.",
                skills=_(", ").join(facts.skills[:4]),
            ),
            _("Prepare two questions for the interviewer about the team and how success is measured."),
        ),
        *turn.plan_step(r"STAR|(?i:interview)|面試"),
    ]


def _review_reply(turn: Turn) -> list[str]:
    _ = turn._
    return [
        _("What stands out on the resume:"),
        *turn.quoted(turn.quotes),
        _("What to improve first:"),
        *turn.gap_lines(),
    ]


def _current_plan_reply(turn: Turn) -> list[str]:
    _, v = turn._, turn.plan_version
    plan = [_("The current plan, v{v}:", v=v), *(line for line in turn.plan.splitlines() if line.strip())]
    return [
        *(plan if v else [_("No plan is saved yet.")]),
        *turn.quoted([turn.role_line], _("Built on this line of the resume:")),
    ]


def _current_role(turn: Turn) -> list[str]:
    return turn.quoted([turn.role_line], turn._("The current role on the resume:"))


def _general_reply(turn: Turn) -> list[str]:
    _ = turn._
    return [
        _("That is beyond what the offline demo model can answer."),
        _(
            "It answers questions about salary, weak points, interviews, what to improve and the current plan, and it"
            " drafts or revises the plan."
        ),
        *_current_role(turn),
    ]


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
    _, topic = turn._, turn.intent.topic
    if turn.intent.saves_plan:
        return [_("Ask about salary, weak points or interviews, or say what to change in the plan.")]
    if turn.intent.kind == "chat":
        hint = _("Ask for a job-search plan, or ask about salary, weak points or interviews.")
    elif topic == "review":
        hint = _("Want a job-search plan built on this? Ask for one, such as “Please plan my job search”.")
    elif turn.plan_version:
        hint = _("Say what to change, such as “focus on remote roles” or “make it shorter”, for a new version.")
    else:
        hint = _("Ask for one, such as “Please plan my job search”, and it is saved as the first version.")
    return [turn.plan_status(), hint]


def compose_reply(turn: Turn) -> str:
    """The final text. Its claim count comes from `verify_reply` over the reply itself, the
    check the service runs on it; the count line is a bracketed notice, which that check
    skips, so adding it does not change what it counts."""
    _, name, intent = turn._, turn.facts.name, turn.intent
    if intent.topic == "thanks":
        greeting = _("Hi {name}, glad to help!", name=name) or _("Hi there, glad to help!")
    else:
        greeting = _("Hi {name}!", name=name) or _("Hi there!")
    head = [_(OFFLINE_BANNER), greeting]
    if turn.facts.suspicious:
        head.append(_("[flagged text in the resume that tried to instruct the assistant; it was not followed]"))
    if intent.saves_plan:
        body = _plan_reply(turn)
    elif intent.kind == "question":
        body = _ANSWERS[intent.topic](turn)
    else:
        body = [*([_("Noted.")] if intent.topic == "other" else []), *_current_role(turn)]
    closing = _closing(turn)
    checks = verify_reply("\n".join([*head, *body, *closing]), turn.resume)
    supported = sum(bool(check["supported"]) for check in checks)
    count = _("[{n} of {m} claims about you in this reply are supported by your resume]").format(
        n=supported, m=len(checks)
    )
    return "\n".join([*head, *body, *([count] if checks else []), *closing])


def quotes_for(facts: ResumeFacts, intent: Intent) -> list[str]:
    """The 1-2 resume lines the reply will quote (and first sends to verify_claims)."""
    role, results = (facts.current_role.line if facts.current_role else ""), facts.results
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
