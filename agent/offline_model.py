"""A deterministic stand-in for Gemini, used when no API key is configured.

It drives the real agent through ADK exactly as a model would: it reads the
LlmRequest and answers with function calls, then with text. No network, no
randomness, so the same conversation always produces the same reply.

Where things come from: the agent's instruction provider (prompt.py) places
the resume between <<<RESUME and RESUME>>> and the latest saved plan between
<<<PLAN and PLAN>>> in the system instruction; both are read back from
`llm_request.config.system_instruction`. The conversation so far (the user's
messages, earlier tool calls) is `llm_request.contents`.

One user turn takes a few calls of the model; each reads the request afresh and
answers with the first step the turn has not taken yet (the tool responses since
the user's message tell which):
  1. the reply's language, by the message's script (`reply_language`); with no
     resume, a one-line notice and nothing else;
  2. [only if the resume holds injection-like text, once per conversation]
     flag_suspicious_text(excerpt=<that line>) -- and it is never followed;
  3. the message is classified (`classify_message`): a request for a plan or
     for a change of it, a question (salary, weak points, interviews, what to
     improve, the current plan, a review), or small talk;
  4. verify_claims(<the 1-2 resume lines the reply will quote: `quotes_for`>);
  5. save_plan(...) ONLY for a request for a plan or a change: the plan is
     built (`build_plan`) from the resume's labelled lines (`ResumeFacts`) and
     every change asked for so far in the conversation (`revision_so_far`);
  6. final text, in the message's language (`compose_reply`): the offline
     banner, a greeting by name, the quoted lines, the answer, and how many of
     the reply's claims the resume supports, counted by `verify_reply`, the
     very check the service runs on the reply, so the two never disagree.

Everything the coach says beyond the quoted lines is advice (numbered steps,
headings, imperatives, notices in brackets), never a new fact about the
person, so `verify_reply` finds nothing unsupported in an offline reply.

This module is the ADK side: reading the request, choosing the step, building
the response. The rules live in these modules, each importing only those above it:
  offline_texts.py    every text the model writes, English and Traditional Chinese;
  offline_intents.py  reply_language, classify_message and its Intent;
  resume_lines.py     label_resume_lines, ResumeFacts, role_title;
  offline_plans.py    the changes asked for (Revision), build_plan, plan_changes;
  offline_replies.py  the final text: Turn, quotes_for, compose_reply.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from .offline_intents import classify_message, reply_language
from .offline_plans import build_plan, plan_changes, revision_so_far
from .offline_replies import Turn, compose_reply, quotes_for
from .offline_texts import TEXTS
from .prompt import PLAN_BEGIN, PLAN_END, extract_flagged_lines, extract_resume
from .resume_lines import ResumeFacts

# --- the turn --------------------------------------------------------------------------


class OfflineResumeModel(BaseLlm):
    """Answers every request by the fixed rules above: one step of the turn per call."""

    model: str = "offline-resume-model"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        yield self._next_step(llm_request)

    def _next_step(self, llm_request: LlmRequest) -> LlmResponse:
        """The turn's next step, given the tool responses so far: a tool call or the final text."""
        contents = list(llm_request.contents or [])
        system = _system_text(llm_request)
        resume = extract_resume(system)
        message, answered = _current_turn(contents)
        lang = reply_language(message, resume)
        if not resume.strip():
            return _text(f"{TEXTS[lang]['banner']}\n{TEXTS[lang]['no_resume']}")

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
            return _call("save_plan", plan=build_plan(facts, revision_so_far(history, facts), lang))

        turn = Turn(facts, resume, intent, lang, quotes=_supported(answered), plan_version=version, plan=plan)
        if intent.saves_plan:
            _add_saved_plan(turn, contents, answered, history)
        return _text(compose_reply(turn))


def _add_saved_plan(turn: Turn, contents: list[types.Content], answered: dict[str, dict], history: list[str]) -> None:
    """The plan this turn saved, its version, and for a revision what changed."""
    turn.plan_version = int(answered["save_plan"].get("version") or turn.plan_version)
    turn.plan = str(_calls(contents, "save_plan")[-1].get("plan", ""))
    if turn.intent.kind == "revise":
        before = revision_so_far(history[:-1], turn.facts)
        turn.changes = plan_changes(before, revision_so_far(history, turn.facts), turn.lang)


# --- reading the request ---------------------------------------------------------------

_PLAN_COUNT_RE = re.compile(r"^Saved plan versions so far: \d+ \(latest is v(\d+)\)", re.MULTILINE)
_PLAN_BLOCK_RE = re.compile(rf"^{re.escape(PLAN_BEGIN)}\n(.*?)\n^{re.escape(PLAN_END)}$", re.MULTILINE | re.DOTALL)


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
