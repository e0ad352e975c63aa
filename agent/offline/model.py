"""The ADK side of the offline model: reading the request, choosing the step, building the response."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from agent.offline.messages import classify_message, reply_language, revision_so_far
from agent.offline.replies import OFFLINE_BANNER, Turn, build_plan, compose_reply, plan_changes, quotes_for, translation
from agent.offline.resume import ResumeFacts
from agent.prompt import PLAN_BEGIN, PLAN_END, extract_flagged_lines, extract_resume

_PLAN_COUNT_RE = re.compile(r"^Saved plan versions so far: \d+ \(latest is v(\d+)\)", re.MULTILINE)
_PLAN_BLOCK_RE = re.compile(rf"^{re.escape(PLAN_BEGIN)}\n(.*?)\n^{re.escape(PLAN_END)}$", re.MULTILINE | re.DOTALL)


# The model's name in a turn's answer (`model`); the page shows it in words of its language.
OFFLINE_MODEL_NAME = "offline-resume-model"


class OfflineResumeModel(BaseLlm):
    """Answers every request by fixed rules (agent/offline/__init__.py): one step of the turn per call."""

    model: str = OFFLINE_MODEL_NAME

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        step = self._next_step(llm_request)
        if stream:  # ADK's SSE streaming mode: the text in pieces first, as Gemini sends it
            for piece in _pieces(step):
                yield piece
                await asyncio.sleep(0)  # each piece is handed on before the next
        yield step

    def _next_step(self, llm_request: LlmRequest) -> LlmResponse:
        """The turn's next step, given the tool responses so far: a tool call or the final text."""
        contents = list(llm_request.contents or [])
        system = _system_text(llm_request)
        resume = extract_resume(system)
        message, answered = _current_turn(contents)
        lang = reply_language(message, resume)
        if not resume.strip():
            _ = translation(lang)
            return _text(_(OFFLINE_BANNER) + "\n" + _("I don't see a resume yet. Please upload one first."))

        facts = ResumeFacts(resume, extract_flagged_lines(system))
        if facts.suspicious and not _calls(contents, "flag_suspicious_text"):
            return _call(
                "flag_suspicious_text",
                excerpt=facts.suspicious[0],
                reason="Resume text tries to instruct the assistant; treated as data and not followed.",
            )
        version, plan = _saved_plan(system)
        # Classified against the plans saved before this turn, at every step of the turn alike.
        saved_before = version - 1 if "save_plan" in answered else version
        intent = classify_message(message, has_plan=saved_before > 0)
        quotes = quotes_for(facts, intent)
        if quotes and "verify_claims" not in answered:
            return _call("verify_claims", claims=quotes)
        history = _user_messages(contents)
        if intent.saves_plan and "save_plan" not in answered:
            return _call("save_plan", plan=build_plan(facts, revision_so_far(history, facts.skills), lang))

        turn = Turn(facts, resume, intent, lang, quotes=_supported(answered), plan_version=version, plan=plan)
        if intent.saves_plan:  # the plan this turn saved, its version, and for a revision what changed
            turn.plan_version = int(answered["save_plan"].get("version") or turn.plan_version)
            turn.plan = str(_calls(contents, "save_plan")[-1].get("plan", ""))
            if intent.kind == "revise":
                before = revision_so_far(history[:-1], facts.skills)
                turn.changes = plan_changes(before, revision_so_far(history, facts.skills), lang)
        return _text(compose_reply(turn))


# --- reading the request ---------------------------------------------------------------


def _system_text(llm_request: LlmRequest) -> str:
    si = llm_request.config.system_instruction if llm_request.config else None
    if isinstance(si, str):
        return si
    parts = getattr(si, "parts", None) or []
    return "\n".join(p.text for p in parts if getattr(p, "text", None))


def _saved_plan(system_text: str) -> tuple[int, str]:
    """(latest saved version, its text) from the instruction prompt.py built; (0, "") if none.

    The first match is ours: the instruction puts these before the resume, whose own
    markers are defanged.
    """
    count, block = _PLAN_COUNT_RE.search(system_text), _PLAN_BLOCK_RE.search(system_text)
    return (int(count.group(1)), block.group(1) if block else "") if count else (0, "")


def _is_user_text(content: types.Content) -> bool:
    parts = content.parts or []
    return content.role == "user" and any(p.text for p in parts) and not any(p.function_response for p in parts)


def _user_messages(contents: list[types.Content]) -> list[str]:
    return ["".join(p.text for p in c.parts if p.text) for c in contents if _is_user_text(c)]


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


def _supported(answered: dict[str, dict]) -> list[str]:
    """The claims verify_claims answered as supported this turn: the lines the reply may quote."""
    results = answered.get("verify_claims", {}).get("results", [])
    return [str(r.get("claim", "")) for r in results if r.get("supported")]


# --- answering -------------------------------------------------------------------------


def _response(*parts: types.Part) -> LlmResponse:
    # Offline calls cost nothing; explicit zeros keep ADK's usage telemetry quiet.
    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=0, candidates_token_count=0, total_token_count=0
    )
    return LlmResponse(content=types.Content(role="model", parts=list(parts)), usage_metadata=usage)


def _call(name: str, **args) -> LlmResponse:
    return _response(types.Part(function_call=types.FunctionCall(name=name, args=args)))


def _text(text: str) -> LlmResponse:
    return _response(types.Part(text=text))


PIECE_WORDS = 8  # words (with the spaces after each; a Chinese character is a word) per streamed piece
_WIDE = "\u3000-\u9fff\uff00-\uffef"
_WORD_RE = re.compile(rf"[{_WIDE}]\s*|[^\s{_WIDE}]+\s*|\s+")


def _pieces(step: LlmResponse) -> list[LlmResponse]:
    """A text step as the partial responses a streaming model sends before the whole one: about
    PIECE_WORDS words each.
    None for a tool call (it comes whole)."""
    parts = step.content.parts if step.content else []
    if len(parts) != 1 or not parts[0].text:
        return []
    words = _WORD_RE.findall(parts[0].text)
    chunks = ["".join(words[i : i + PIECE_WORDS]) for i in range(0, len(words), PIECE_WORDS)]
    return [
        LlmResponse(content=types.Content(role="model", parts=[types.Part(text=chunk)]), partial=True)
        for chunk in chunks
    ]
