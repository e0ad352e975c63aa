"""A deterministic stand-in for Gemini, used when no API key is configured.

It drives the real agent through ADK exactly as a model would: it reads the
LlmRequest and answers with function calls, then with text. No network, no
randomness, so the same conversation always produces the same reply.

Where the resume comes from: the agent's instruction provider (prompt.py)
places the resume between <<<RESUME and RESUME>>> in the system instruction;
`extract_resume` reads it back from `llm_request.config.system_instruction`.

One user turn, as seen in `llm_request.contents` (function responses of the
current turn come after the last user *text* content):
  1. [only if the resume holds injection-like text, once per conversation]
     flag_suspicious_text(excerpt=<that line>) -- and it is never followed;
  2. verify_claims(<2-3 of the resume's own lines>);
  3. save_plan(<numbered steps from the resume's employers/projects/skills>,
     plus the user's message as a revision note on later turns);
  4. final text: offline banner, greeting by name, 1-2 resume lines, the plan
     and its saved version number.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from .prompt import extract_resume
from .verification import resume_name, suspicious_lines

OFFLINE_BANNER = "[offline model — no GOOGLE_API_KEY set; deterministic demo reply]"
MAX_NOTE_CHARS = 200

_BULLET_RE = re.compile(r"^\s*(?:[-*•·▪‣]|\d{1,2}[.)、])\s*")
# Heading keywords, lower-cased. Unknown kinds still end the previous section.
_HEADINGS = {
    "experience": ("experience", "employment", "work history", "經歷", "经历", "工作"),
    "projects": ("project", "專案", "项目", "作品"),
    "skills": ("skill", "技能", "專長", "专长"),
    "other": (
        "education",
        "學歷",
        "学历",
        "language",
        "語言",
        "语言",
        "summary",
        "about",
        "contact",
        "certificat",
        "證照",
        "award",
        "interest",
        "reference",
    ),
}


def _heading_kind(raw: str) -> str | None:
    if not raw.strip() or raw[:1].isspace() or _BULLET_RE.match(raw) or len(raw.strip()) > 40:
        return None
    low = raw.lower()
    for kind, words in _HEADINGS.items():
        if any(w in low for w in words):
            return kind
    return None


def _sections(resume: str) -> dict[str, list[str]]:
    """Lines of the resume grouped under the heading they follow.

    Injection-like lines are dropped, so they are never quoted back or obeyed.
    """
    suspicious = set(suspicious_lines(resume))
    sections: dict[str, list[str]] = {"top": []}
    current = "top"
    for raw in resume.splitlines()[1:]:  # line 0 is the name
        if not raw.strip() or raw.strip() in suspicious:
            continue
        kind = _heading_kind(raw)
        if kind:
            current = kind
            sections.setdefault(kind, [])
        else:
            sections.setdefault(current, []).append(raw.rstrip())
    return sections


def _entries(lines: list[str]) -> list[str]:
    return [_BULLET_RE.sub("", line).strip() for line in lines if _BULLET_RE.match(line)]


def _details(lines: list[str]) -> list[str]:
    return [line.strip() for line in lines if not _BULLET_RE.match(line)]


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?", "。", "！", "？")) else text + "."


class _Facts:
    """The few resume lines the offline model quotes; all copied verbatim."""

    def __init__(self, resume: str):
        sections = _sections(resume)
        experience = sections.get("experience", [])
        # No recognisable experience section: fall back to the first lines that
        # are not contact details.
        if not experience:
            experience = [ln for ln in sections["top"] if "@" not in ln and "phone" not in ln.lower()]
        self.suspicious = suspicious_lines(resume)
        name = resume_name(resume)
        self.name = "" if name in self.suspicious else name  # never greet with an injection
        self.roles = _entries(experience) or [ln.strip() for ln in experience[:1]]
        self.results = [d for d in _details(experience) if d not in self.roles]
        self.projects = _entries(sections.get("projects", [])) or _details(sections.get("projects", []))
        self.skills = (sections.get("skills") or [""])[0].strip()

    def claims(self) -> list[str]:
        picks = [self.roles[0] if self.roles else "", self.results[0] if self.results else "", self.skills]
        return [c for c in picks if c][:3]

    def plan(self, note: str) -> str:
        steps = []
        if self.roles:
            steps.append(f"Lead your pitch with your current role: {_sentence(self.roles[0])}")
        if self.results:
            steps.append(f"Quantify impact with your own result: {_sentence(self.results[0])}")
        if len(self.roles) > 1:
            steps.append(f"Prepare a STAR story from your earlier role: {_sentence(self.roles[1])}")
        if self.projects:
            steps.append(f"Show a project as evidence of initiative: {_sentence(self.projects[0])}")
        if self.skills:
            steps.append(f"Target roles that ask for your core skills: {_sentence(self.skills)}")
        steps.append("Apply to five well-matched roles each week and track every response.")
        if note:
            steps.append(f"Revision requested by you: {_sentence(note)}")
        return "\n".join(f"{i}. {step}" for i, step in enumerate(steps, 1))


def _system_text(llm_request: LlmRequest) -> str:
    si = llm_request.config.system_instruction if llm_request.config else None
    if isinstance(si, str):
        return si
    parts = getattr(si, "parts", None) or []
    return "\n".join(p.text for p in parts if getattr(p, "text", None))


def _is_user_text(content: types.Content) -> bool:
    parts = content.parts or []
    return content.role == "user" and any(p.text for p in parts) and not any(p.function_response for p in parts)


def _current_turn(contents: list[types.Content]) -> tuple[str, dict[str, dict]]:
    """(latest user message, {tool name: response} for tools answered since it)."""
    responses: dict[str, dict] = {}
    for content in reversed(contents):
        if _is_user_text(content):
            return "".join(p.text for p in content.parts if p.text), responses
        for part in content.parts or []:
            if part.function_response:
                responses.setdefault(part.function_response.name, part.function_response.response or {})
    return "", responses


def _calls(contents: list[types.Content], name: str) -> list[dict]:
    """Arguments of every call to tool `name` in the conversation, oldest first."""
    return [
        dict(p.function_call.args or {})
        for c in contents
        for p in (c.parts or [])
        if p.function_call and p.function_call.name == name
    ]


def _response(*parts: types.Part) -> LlmResponse:
    # Offline calls cost nothing; explicit zeros keep ADK's usage telemetry quiet.
    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=0, candidates_token_count=0, total_token_count=0
    )
    return LlmResponse(content=types.Content(role="model", parts=list(parts)), usage_metadata=usage)


def _call(name: str, **args) -> LlmResponse:
    return _response(types.Part(function_call=types.FunctionCall(name=name, args=args)))


class OfflineResumeModel(BaseLlm):
    model: str = "offline-resume-model"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        yield self._next_step(llm_request)

    def _next_step(self, llm_request: LlmRequest) -> LlmResponse:
        contents = list(llm_request.contents or [])
        resume = extract_resume(_system_text(llm_request))
        message, answered = _current_turn(contents)
        if not resume.strip():
            return _response(types.Part(text=f"{OFFLINE_BANNER}\nI don't see a resume yet. Please upload one first."))

        facts = _Facts(resume)
        if facts.suspicious and not _calls(contents, "flag_suspicious_text"):
            return _call(
                "flag_suspicious_text",
                excerpt=facts.suspicious[0],
                reason="Resume text tries to instruct the assistant; treated as data and not followed.",
            )
        if "verify_claims" not in answered:
            return _call("verify_claims", claims=facts.claims())
        if "save_plan" not in answered:
            later_turn = sum(_is_user_text(c) for c in contents) > 1
            note = " ".join(message.split())[:MAX_NOTE_CHARS] if later_turn else ""
            return _call("save_plan", plan=facts.plan(note))
        plan = _calls(contents, "save_plan")[-1].get("plan", "")
        return _response(types.Part(text=self._final_text(facts, answered, plan)))

    @staticmethod
    def _final_text(facts: _Facts, answered: dict[str, dict], plan: str) -> str:
        version = answered["save_plan"].get("version", "?")
        checked = answered["verify_claims"].get("results", [])
        lines = [OFFLINE_BANNER, f"Hi {facts.name}!" if facts.name else "Hi there!"]
        if facts.roles:
            lines.append(f"From your resume: {_sentence(facts.roles[0])}")
        if facts.results:
            lines.append(f"Also on your resume: {_sentence(facts.results[0])}")
        lines.append(
            f"[verify_claims: {sum(bool(r.get('supported')) for r in checked)} of {len(checked)} claims supported]"
        )
        if facts.suspicious:
            lines.append("[flagged text in the resume that tried to instruct the assistant; it was not followed]")
        lines += [f"Your job-search plan (saved as v{version}):", plan, f"[plan v{version} saved]"]
        return "\n".join(lines)
