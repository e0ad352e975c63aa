"""What the person's messages ask for: the reply's language, an `Intent`, the plan's changes.

Fixed rules over folded text (agent/text.py), for English and Chinese at any width.
`reply_language` picks the reply's language by the message's dominant script;
`classify_message` tells a request for a plan or for a change of it from a question (with
its topic) and from small talk; `revision_so_far` replays every message that saved a plan
and merges the changes they asked for into a `Revision`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from agent.text import choices, fold, normalise, script_weights, word_set

MAX_NOTE_CHARS, MAX_FOCUS_CHARS = 200, 80
MAX_REMEMBERED = 3  # focus phrases, skills and notes a plan keeps from the conversation


def reply_language(message: str, resume: str = "") -> str:
    """The reply's language by the message's dominant script: "zh" (Traditional Chinese) or "en".

    A message with no letters at all ("?", "👍") follows the resume's script; a tie is English.
    """
    cjk, latin = script_weights(message)
    if not cjk and not latin:
        cjk, latin = script_weights(resume)
    return "zh" if cjk > latin else "en"


@dataclass(frozen=True)
class Intent:
    """kind: plan | revise (both save a plan) | question | chat.

    topic, for a question: salary, weaknesses, interview, improve, current_plan, review or
    general; for chat: greeting, thanks or other.
    """

    kind: str
    topic: str = ""

    @property
    def saves_plan(self) -> bool:
        return self.kind in ("plan", "revise")


_PLAN_RE = re.compile(
    r"\b(?:plan|plans|planning|roadmap|strategy|job[- ]?search|next steps|action items)\b"
    r"|規劃|规划|計畫|計劃|计划|求職|求职|找工作|行動方案|行动方案"
)
# Words that ask for a different plan, including the kind of job wanted ("remote roles").
_CHANGE_RE = re.compile(
    r"\b(?:change|revise|revision|update|edit|modify|adjust|tweak|rewrite|redo|rework|shorten|shorter|longer|"
    r"simpler|concise|detailed|add|remove|drop|delete|replace|swap|instead|focus|concentrate|prioriti[sz]e|"
    r"emphasi[sz]e|target|exclude|prefer|switch|roles?|jobs?|positions?|openings?|remote|hybrid|on-?site|"
    r"full[- ]time|part[- ]time|freelance)\b|looking for|interested in|more detail"
    r"|修改|更新|調整|调整|改成|改為|改为|改一下|改寫|改写|重寫|重写|重新|加上|加入|增加|新增|刪掉|删掉|刪除|删除|移除|去掉|拿掉"
    r"|換成|换成|專注|专注|聚焦|著重|着重|鎖定|锁定|只找|想找|改找|偏好|優先|优先|縮短|缩短|精簡|精简|簡短|简短|短一點|短一点"
    r"|詳細|详细|職缺|职缺|職位|职位|遠端|远程|遠距|远距|全職|全职|兼職|兼职"
)
_POLITE_RE = re.compile(
    r"\b(?:please|pls|plz|help me|let'?s|i want|i need|i(?:'d| would) like)\b|^(?:can|could|would|will) you\b"
    r"|^(?:can|could|may) i (?:get|have)\b"
    r"|請(?!問)|请(?!问)|幫我|帮我|麻煩|麻烦|可以幫|可以帮|我想要|我要|我需要|希望|給我|给我"
)
# Asking to be told something that exists ("tell me my plan"): a question even when polite.
_INFO_VERB_RE = re.compile(
    r"\b(?:tell me|show me|remind me|explain|let me (?:see|know)|i want to (?:know|see)|what is|what's|what are)\b"
    r"|告訴我|告诉我|說明|说明|解釋|解释|給我看|给我看|讓我看|让我看|請問|请问"
)
_QUESTION_RE = re.compile(
    r"^(?:what|what's|whats|how|why|which|when|where|who|whose|should|shall|is|are|am|do|does|did|can|could|"
    r"would|will|may|might|have|has)\b"
)
_QUESTION_CJK_RE = re.compile(
    r"嗎|吗|呢|什麼|甚麼|什么|如何|怎麼|怎么|怎樣|怎样|為何|为何|為什麼|为什么|哪|多少|是否|能否|有沒有|有没有|要不要|可不可以|能不能|會不會|会不会|幾|几"
)
_IMPERATIVES = word_set(
    "draft create make write build give plan prepare update revise change focus add remove drop shorten "
    "rewrite redo target help put set include exclude start generate produce list adjust edit modify "
    "swap replace prioritise prioritize emphasise emphasize concentrate keep turn review analyse analyze "
    "check"
)
# Salary and interviews are question topics, and steps a plan adds on request.
_SALARY_RE = re.compile(
    r"\b(?:salary|salaries|pay|paid|compensation|wages?|income|offers?|negotiat\w*|raise)\b|薪|待遇|報酬|报酬|年收|收入|談判|谈判"
)
_INTERVIEW_RE = re.compile(r"\binterview\w*\b|面試|面试|面談|面谈")
_TOPICS = {
    "salary": _SALARY_RE,
    "weaknesses": re.compile(
        r"\b(?:weak\w*|gaps?|shortcomings?|downsides?|red flags?|flaws?)\b"
        r"|弱點|弱点|缺點|缺点|不足|短處|短处|劣勢|劣势|盲點|盲点"
    ),
    "interview": _INTERVIEW_RE,
    "improve": re.compile(
        r"\b(?:improve\w*|better|strengthen|fix|polish|missing|lacking)\b|what to change|should i change"
        r"|改進|改进|改善|加強|加强|提升|更好|補強|补强|哪裡可以|哪里可以"
    ),
    "current_plan": _PLAN_RE,
    "review": re.compile(
        r"\b(?:review|feedback|critique|assess|evaluate|thoughts|opinion|resume|cv)\b"
        r"|看看|看一下|評估|评估|意見|意见|回饋|回馈|反饋|反馈|點評|点评|履歷|履历|简历"
    ),
}
_GREETING_RE = re.compile(
    r"^(?:hi|hello|hey|hiya|yo|greetings|good (?:morning|afternoon|evening))\b"
    r"|^(?:你好|您好|嗨|哈囉|哈喽|哈啰|早安|午安|晚安)"
)
_THANKS_RE = re.compile(r"\b(?:thanks|thank you|thx|ty|cheers|appreciated?)\b|謝謝|谢谢|感謝|感谢|多謝|多谢|感恩")


def classify_message(message: str, has_plan: bool) -> Intent:
    """What the person's message asks for, by fixed rules (English and Chinese, any width).

    A request (polite, imperative, or a plain statement) that names a plan or a change
    saves a plan: "revise" when one exists, else "plan". A question asks to be told
    something and saves nothing, even when it mentions the plan ("what is my current
    plan?"); a polite question that asks for a change ("could you make it shorter?") is a
    request. Anything else is small talk.
    """
    text = normalise(message)
    informational = bool(_INFO_VERB_RE.search(text))
    asks = informational or "?" in text or bool(_QUESTION_RE.match(text) or _QUESTION_CJK_RE.search(text))
    first = re.match(r"[a-z']+", text)
    imperative = bool(first) and first.group(0) in _IMPERATIVES
    wants = not informational and bool(_POLITE_RE.search(text) or imperative)
    if (_CHANGE_RE.search(text) or _PLAN_RE.search(text)) and (wants or not asks):
        return Intent("revise" if has_plan else "plan")
    topic = next((topic for topic, pattern in _TOPICS.items() if pattern.search(text)), "")
    if topic or asks:
        return Intent("question", topic or "general")
    if _THANKS_RE.search(text):
        return Intent("chat", "thanks")
    return Intent("chat", "greeting" if _GREETING_RE.match(text) else "other")


# --- the changes asked for, replayed from the messages ---------------------------------

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
_EXTRAS = {
    "remote": re.compile(r"\b(?:remote|work from home|wfh)\b|遠端|远程|遠距|远距|在家工作"),
    "salary": _SALARY_RE,
    "interview": _INTERVIEW_RE,
    "network": re.compile(r"\b(?:network(?:ing)?|referrals?|linkedin)\b|人脈|人脉|內推|内推|推薦|推荐"),
}
# What a bare "update my plan, please" is made of: nothing to act on beyond saving again.
_FILLER_RE = re.compile(
    r"\b(?:please|pls|can|could|would|you|the|my|a|an|it|this|that|plan|again|new|version|make|do|"
    r"revise|update|change|edit|modify|adjust|redo|rework|tweak|bit|some|and)\b"
    r"|請|请|幫我|帮我|麻煩|麻烦|可以|一下|我的|的|再|重新|一版|版本|計畫|計劃|计划|更新|修改|調整|调整|改|[^\w]"
)


def _clean_phrase(text: str, limit: int) -> str:
    """ "Go roles in Tokyo, please" -> "Go roles in Tokyo", cut at a space within `limit`.

    The filler is cut at the string's end (not a regex: no backtracking); "displease" keeps its "please"."""
    text = " ".join(text.split())
    while True:
        text = text.rstrip(" ,，、")
        filler = next((word for word in _TRAILING_FILLER if text.lower().endswith(word)), "")
        before = text[: len(text) - len(filler)]
        if not filler or (filler.isascii() and before[-1:].isalpha()):
            break
        text = before
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0]


def _keep_latest(old: tuple[str, ...], new: Iterable[str]) -> tuple[str, ...]:
    return tuple(list(dict.fromkeys([*old, *new]))[-MAX_REMEMBERED:])


@dataclass(frozen=True)
class Revision:
    """Every change the person asked for so far, replayed from their messages."""

    focus: tuple[str, ...] = ()  # what to focus the search on, in their words: "Go roles in Tokyo"
    skills: tuple[str, ...] = ()  # resume skills to lead with
    extras: tuple[str, ...] = ()  # extra steps: remote, salary, interview, network
    notes: tuple[str, ...] = ()  # requests the rules do not recognise, in their words
    length: str = ""  # "short", "long" or "" (as drafted)

    def merged(self, other: Revision) -> Revision:
        return Revision(
            focus=_keep_latest(self.focus, other.focus),
            skills=_keep_latest(self.skills, other.skills),
            extras=tuple(dict.fromkeys([*self.extras, *other.extras])),
            notes=_keep_latest(self.notes, other.notes),
            length=other.length or self.length,
        )


def _mentions(message: str, skill: str) -> bool:
    # Short names ("Go", "R", "C") only as written, so "go to" and "a car" do not count.
    flags = 0 if len(skill) <= 3 else re.IGNORECASE
    return bool(re.search(rf"(?<![A-Za-z0-9]){re.escape(skill)}(?![A-Za-z0-9])", message, flags))


def _revision_from(message: str, skills: list[str], is_change: bool) -> Revision:
    text, kept_case = fold(message), fold(message, keep_case=True)
    focus = _FOCUS_EN_RE.search(kept_case) or _FOCUS_ZH_RE.search(kept_case)
    revision = Revision(
        focus=tuple(filter(None, [_clean_phrase(focus.group("what"), MAX_FOCUS_CHARS) if focus else ""])),
        skills=tuple(skill for skill in skills if _mentions(message, skill)),
        extras=tuple(kind for kind, pattern in _EXTRAS.items() if pattern.search(text)),
        length="short" if _SHORT_RE.search(text) else "long" if _LONG_RE.search(text) else "",
    )
    # A change the rules do not recognise is kept in the person's words as a step, but a
    # bare "update my plan" has nothing in it to keep (weighed as words: two characters a word).
    cjk, latin = script_weights(_FILLER_RE.sub(" ", text))
    if is_change and revision == Revision() and latin + cjk // 2 >= 2:
        revision = Revision(notes=(_clean_phrase(message, MAX_NOTE_CHARS),))
    return revision


def revision_so_far(user_messages: list[str], skills: list[str]) -> Revision:
    """The changes asked for in every message that saved a plan, oldest first."""
    revision, saved_before = Revision(), False
    for message in user_messages:
        if classify_message(message, has_plan=saved_before).saves_plan:
            revision = revision.merged(_revision_from(message, skills, is_change=saved_before))
            saved_before = True
    return revision
