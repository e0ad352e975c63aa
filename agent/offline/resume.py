"""Which resume line is which: `label_resume_lines`, and `ResumeFacts`, what the coach quotes.

Every content line after the name gets a label, from the section its heading opens and from
what the line holds: role (title/employer), achievement, project, skill, summary or other.
Lines the screen flags (agent/screening.py) are dropped, so they are never quoted or obeyed.
`ResumeFacts` groups the labelled lines, copied verbatim: roles with their achievements, the
best result, projects and skills; `role_title` finds the job title in a role line.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from agent.screening import screen
from agent.text import BULLET_RE, CJK_RE, choices, fold, word_set
from agent.verification import resume_name

# Heading keywords, tried in this order: "專案經歷" is projects, not experience, and
# "Career summary" a summary.
_HEADINGS = {
    kind: choices(keywords)
    for kind, keywords in {
        "projects": "project|portfolio|專案|项目|作品|專題|专题",
        "skills": "skill|technolog|tech stack|tools|competenc|programming|技能|專長|专长|技術|技术",
        "summary": "summary|about|profile|objective|簡介|简介|自傳|自传|摘要|關於|关于",
        "experience": "experience|employment|work history|career|經歷|经历|工作|經驗|经验",
        "other": "education|學歷|学历|language|語言|语言|contact|聯絡|联系|email|e-mail|phone|電話|电话|郵件|邮件|信箱"
        "|certificat|證照|证书|award|獎|奖|interest|興趣|兴趣|hobbies|reference|publication|著作|volunteer|志工"
        "|additional|notes|misc|備註|备注|其他",
    }.items()
}
_INLINE_HEADING_RE = re.compile(r"^([^:：]{1,40})[:：]\s*(.*)$")
_YEAR_RE = re.compile(r"(?<!\d)(?:19|20)\d{2}(?!\d)")
_PRESENT_RE = re.compile(r"\b(?:present|now|current|today)\b|至今|迄今|現在|现在|目前")
_TITLE_RE = re.compile(
    r"\b(?:engineer|developer|programmer|architect|manager|analyst|designer|scientist|consultant|specialist|"
    r"director|lead|head|officer|intern|assistant|associate|coordinator|administrator|accountant|researcher|"
    r"teacher|lecturer|nurse|editor|writer|marketer|recruiter|founder|co-founder|owner|president|vp|cto|ceo|"
    r"cfo|coo|technician|supervisor|executive|representative|strategist|planner|producer|tester|sre|devops)s?\b"
    r"|工程師|工程师|經理|经理|分析師|分析师|設計師|设计师|主管|主任|總監|总监|實習|实习|顧問|顾问|專員|专员|研究員|研究员"
    r"|助理|架構師|架构师|開發者|开发者|開發人員|开发人员|教師|教师|講師|讲师|創辦人|创办人|負責人|负责人|組長|组长|店長|店长"
    r"|會計|会计|業務|业务|行銷|营销|編輯|编辑|技術長|技术长|執行長|执行长"
)
_EMPLOYER_SEP_RE = re.compile(r",|\s@\s|\sat\s|\||\s[-–—]\s|・|\(")
_EDUCATION_RE = re.compile(
    r"\b(?:university|college|school|academy|bachelor|master|bsc|msc|mba|degree)\b|\b[bm]\.\s?sc?\b|\bph\.?d\b"
    r"|大學|大学|學院|学院|碩士|硕士|學士|学士|博士|高中|學系|学系"
)
_ACTION_VERBS = word_set(
    "led built cut reduced increased grew designed launched migrated improved managed created developed "
    "implemented delivered saved automated mentored shipped wrote owned drove ran scaled introduced "
    "established negotiated organised organized trained coached analysed analyzed optimised optimized "
    "architected headed spearheaded streamlined achieved won raised sold generated maintained supported "
    "handled coordinated planned published taught researched tested deployed refactored rebuilt "
    "redesigned halved doubled tripled boosted lowered accelerated oversaw supervised responsible "
    "contributed collaborated partnered worked helped hired defined prototyped modernised modernized "
    "consolidated replaced integrated authored presented served set"
)
_ACTION_CJK_RE = re.compile(
    r"^(?:主導|主导|帶領|带领|領導|领导|建置|建立|搭建|開發|开发|設計|设计|導入|导入|推動|推动|優化|优化|降低|提升|減少|减少"
    r"|增加|負責|负责|完成|規劃|规划|重構|重构|改善|協助|协助|撰寫|撰写|維護|维护|管理|參與|参与|以|將|将|把|成功|獨立|独立"
    r"|主持|執行|执行|整合|串接|實作|实作|實現|实现|打造|縮短|缩短|節省|节省|提高|培訓|培训|指導|指导)"
)
_CONTACT_RE = re.compile(r"@|https?://|www\.|\bphone\b|\bemail\b|電話|电话|郵件|邮件|信箱")
_SKILL_SPLIT_RE = re.compile(r"\s*[,，、;；|｜/•·]\s*")
_DATES_RE = re.compile(r"[(（][^)）]*[)）]")
_ROLE_PARTS_RE = re.compile(r",|，|\||｜|\s@\s|\sat\s|\s[-–—]\s|・")


def has_metric(text: str) -> bool:
    """A number other than a year: "38%", "40,000 merchants", "8 個微服務"."""
    return bool(re.search(r"\d", _YEAR_RE.sub("", text)))


def _heading(raw: str) -> tuple[str, str] | None:
    """(section kind, text after the colon) when `raw` is a heading: "Skills", "技能：Java、SQL".

    Headings are a few words with no digits or sentence punctuation: "Project Manager, Acme
    (2020)" is a role line, not the projects heading."""
    if not raw.strip() or raw[:1].isspace() or BULLET_RE.match(raw):
        return None
    inline = _INLINE_HEADING_RE.match(raw.strip())
    head, rest = (inline.group(1), inline.group(2).strip()) if inline else (raw.strip(), "")
    head = head.strip().rstrip(":：").strip()
    if not head or len(head) > 40 or len(head.split()) > 5 or re.search(r"[\d.,;，。；、]", head):
        return None
    low = fold(head)
    kind = next((kind for kind, keywords in _HEADINGS.items() if any(word in low for word in keywords)), None)
    return (kind, rest) if kind else None


def _starts_with_action(text: str) -> bool:
    folded = fold(text).lstrip()
    first = re.match(r"[a-z]+", folded)
    return (bool(first) and first.group(0) in _ACTION_VERBS) or bool(_ACTION_CJK_RE.match(folded))


def _is_role_line(text: str) -> bool:
    """A job title and/or employer, usually with dates: "Data Analyst, Harbor Logistics (2020-2024)"."""
    folded = fold(text)
    if _starts_with_action(text) or _EDUCATION_RE.search(folded) or _CONTACT_RE.search(folded):
        return False
    dated = bool(_YEAR_RE.search(folded) or _PRESENT_RE.search(folded))
    titled = bool(_TITLE_RE.search(folded))
    short = len(folded.split()) <= 16 and not folded.rstrip().endswith((".", "。"))
    return (dated and titled) or (short and bool(_EMPLOYER_SEP_RE.search(folded)) and (titled or dated))


def _is_achievement(text: str) -> bool:
    """What the person did in a role: an action, a number, or at least a full sentence."""
    folded = fold(text).strip()
    sentence = folded.endswith((".", "。", "!", "！")) or len(folded.split()) >= 6 or len(CJK_RE.findall(folded)) >= 10
    return _starts_with_action(text) or has_metric(text) or sentence


@dataclass
class _Line:
    text: str  # the line as written, without its bullet and surrounding spaces
    section: str
    bulleted: bool = False
    indented: bool = False
    label: str = "other"


def _labelled(resume: str, suspicious: list[str]) -> list[_Line]:
    """Every content line after the name, with its section and label.

    Injection-like lines are dropped, so they are never quoted back or obeyed; so are lines
    our prompt defanged (they no longer read as the person wrote them).
    """
    raw_lines = (resume or "").splitlines()
    start = next((i + 1 for i, raw in enumerate(raw_lines) if raw.strip()), len(raw_lines))  # after the name
    lines, section = [], "top"
    for raw in raw_lines[start:]:
        if not raw.strip() or raw.strip() in suspicious or "[marker removed]" in raw:
            continue
        heading = _heading(raw)
        if heading and not heading[1]:
            section = heading[0]
        elif heading:
            # "Skills: Python, SQL" is a section of one line: "Tools: Python" under a role must
            # not turn the role's next lines into skills.
            lines.append(_Line(heading[1], heading[0]))
        else:
            lines.append(_Line(BULLET_RE.sub("", raw).strip(), section, bool(BULLET_RE.match(raw)), raw[:1].isspace()))
    sections: dict[str, list[_Line]] = {}
    for line in lines:
        sections.setdefault(line.section, []).append(line)
    # No experience heading: find roles and results by their content, contact lines aside.
    experience = sections.get("experience") or [
        line for line in sections.get("top", []) if not _CONTACT_RE.search(fold(line.text))
    ]
    for line in experience:
        line.label = "role" if _is_role_line(line.text) else "achievement" if _is_achievement(line.text) else "other"
    # Projects: either every entry is a bullet, or titles stand at the margin with bullets or
    # indented lines under them as details.
    projects = sections.get("projects", [])
    titles = [line for line in projects if not line.bulleted and not line.indented]
    for line in titles or [line for line in projects if line.bulleted] or projects:
        line.label = "project"
    for line in sections.get("skills", []) + sections.get("summary", []):
        line.label = line.section.removesuffix("s")
    return lines


def _flagged(resume: str, flagged: list[str] | None) -> list[str]:
    """The flagged lines in resume order, each once: `flagged` as a turn has them (the findings
    stored with the session), else what the screen finds now."""
    lines = flagged if flagged is not None else [finding.excerpt for finding in screen(resume)]
    return list(dict.fromkeys(lines))


def label_resume_lines(resume: str) -> list[tuple[str, str]]:
    """(line, label) for every content line after the name, in order.

    Labels: role (title/employer), achievement (what was done in a role), project, skill,
    summary, other (contact, education, languages, ...).
    """
    return [(line.text, line.label) for line in _labelled(resume, _flagged(resume, None))]


@dataclass
class Role:
    """A role line (title/employer), and the achievements listed under it."""

    line: str
    achievements: list[str] = field(default_factory=list)


class ResumeFacts:
    """What the offline coach knows about the person: labelled lines, copied verbatim."""

    def __init__(self, resume: str, flagged: list[str] | None = None):
        """`flagged`: the resume's flagged lines as stored with its session (None: screen it now)."""
        self.suspicious = _flagged(resume, flagged)
        lines = _labelled(resume, self.suspicious)
        name = resume_name(resume)
        self.name = "" if name in self.suspicious else name  # never greet with an injection
        self.roles: list[Role] = []
        for line in lines:
            if line.label == "role":
                self.roles.append(Role(line.text))
            elif line.label == "achievement":
                if not self.roles:
                    self.roles.append(Role(""))  # results listed before any role line
                self.roles[-1].achievements.append(line.text)
        self.projects = [line.text for line in lines if line.label == "project"]
        skill_lines = [line.text for line in lines if line.label == "skill"]
        self.skills_line = skill_lines[0] if skill_lines else ""
        self.skills: list[str] = []
        for line in skill_lines:
            inline = _INLINE_HEADING_RE.match(line)  # "Languages: Python, Go"
            for item in _SKILL_SPLIT_RE.split(inline.group(2) if inline else line):
                item = item.strip().rstrip(".。")
                if item and item not in self.skills:
                    self.skills.append(item)
        self.has_summary = any(line.label == "summary" for line in lines)

    @functools.cached_property  # read for every role by earlier_roles: once, not once per role
    def current_role(self) -> Role | None:
        """The role marked present/至今, else the first listed (resumes list the latest first)."""
        titled = [role for role in self.roles if role.line]
        return ([role for role in titled if _PRESENT_RE.search(fold(role.line))] or titled or [None])[0]

    @property
    def earlier_roles(self) -> list[Role]:
        return [role for role in self.roles if role.line and role is not self.current_role]

    @property
    def results(self) -> list[str]:
        """Achievements, best first: the current role's with a number, any with a number, the rest."""
        current = self.current_role.achievements if self.current_role else []
        unique = list(dict.fromkeys(current + [line for role in self.roles for line in role.achievements]))
        return sorted(unique, key=lambda line: not has_metric(line))  # stable: in order within each

    @property
    def best_result(self) -> str:
        return next(iter(self.results), "")


def role_title(line: str) -> str:
    """The job title in a role line: "Senior Backend Engineer" in "Kingfisher Cloud Ltd., Senior
    Backend Engineer (2021-present)"; the line without its dates when no part names a title."""
    parts = [part.strip() for part in _ROLE_PARTS_RE.split(_DATES_RE.sub("", line)) if part.strip()]
    return next((part for part in parts if _TITLE_RE.search(fold(part))), " ".join(parts))
