"""Which failures of a turn are the model's, and which reason (exceptions.ModelFailureReason) each is."""

from __future__ import annotations

import asyncio
import logging

from google.adk.agents.invocation_context import LlmCallsLimitExceededError
from google.adk.plugins import BasePlugin
from google.genai import errors as genai_errors

from agent.events import visible_texts
from agent.model_retries import requested_wait, whole_seconds
from sessions_app.exceptions import ModelFailure, ModelFailureReason

logger = logging.getLogger("sessions_app.turns.service")  # one logger for the turn (log redaction names it)

MAX_RETRY_AFTER_SECONDS = 3600

# The error code ADK gives a model response without an answer (Gemini's finish or block reason,
# or ADK's own for no content), and what the turn's failure is then; any other code is a bad
# response (a malformed function call, say).
NO_ANSWER = {
    **dict.fromkeys(
        ("SAFETY", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "RECITATION", "IMAGE_SAFETY", "LANGUAGE", "OTHER"),
        ModelFailureReason.BLOCKED,
    ),
    "MAX_TOKENS": ModelFailureReason.TRUNCATED,
    "MODEL_RETURNED_NO_CONTENT": ModelFailureReason.EMPTY,
}


class ModelErrors(BasePlugin):
    """Remembers the exceptions the model itself raised in one turn, so that a turn tells a
    model failure (502/503) from a bug in a tool, the storage or the agent (a logged 500)."""

    def __init__(self):
        super().__init__(name="resume_agent_model_errors")
        self.raised: list[BaseException] = []

    async def on_model_error_callback(self, *, callback_context, llm_request, error):
        self.raised.append(error)
        return None  # the error goes on: the turn fails and writes nothing

    def came_from_the_model(self, exc: BaseException) -> bool:
        seen = set()
        while exc is not None and id(exc) not in seen:
            if any(exc is raised for raised in self.raised):
                return True
            seen.add(id(exc))
            exc = exc.__cause__ or exc.__context__
        return False


def without_answer(events: list) -> ModelFailure | None:
    """Whether the model ended the turn with nothing to show: its safety filters refused the
    prompt or the answer (blocked), it ran out of output tokens before any text (truncated), or
    it answered with no text (empty). Such a turn fails like a model error and is not kept:
    nothing of it is stored, and the person may send the message again, rephrased. Never an
    empty 200."""
    final = next((event for event in reversed(events) if event.author != "user"), None)
    if final is not None and final.error_code:
        code = str(getattr(final.error_code, "value", final.error_code))
        failure = ModelFailure(NO_ANSWER.get(code, ModelFailureReason.BAD_RESPONSE))
    elif final is None or not "".join(visible_texts(final)).strip():
        code, failure = "no text", ModelFailure(ModelFailureReason.EMPTY)
    else:
        return None
    # The model's reason only (e.g. SAFETY): its message may quote the prompt.
    logger.warning("model turn ended without an answer: %s", code)
    return failure


def as_model_failure(exc: Exception, model_errors: ModelErrors) -> ModelFailure | None:
    """The model failure `exc` is, or None when the model did not cause it."""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        failure = ModelFailure(ModelFailureReason.TIMEOUT)
    elif isinstance(exc, LlmCallsLimitExceededError):
        failure = ModelFailure(ModelFailureReason.LLM_CALLS_LIMIT)
    elif not model_errors.came_from_the_model(exc):
        return None
    elif isinstance(exc, genai_errors.APIError) and exc.code == 429:
        failure = ModelFailure(ModelFailureReason.QUOTA, retry_after=upstream_retry_after(exc, 30))
    elif isinstance(exc, genai_errors.APIError) and exc.code == 503:
        failure = ModelFailure(ModelFailureReason.UNAVAILABLE, retry_after=upstream_retry_after(exc, 10))
    elif isinstance(exc, genai_errors.APIError) and exc.code in (500, 502, 504):
        failure = ModelFailure(ModelFailureReason.UPSTREAM, retry_after=upstream_retry_after(exc, 10))
    else:
        failure = ModelFailure(ModelFailureReason.BAD_RESPONSE)
    # Only the exception's type and status code are logged: its message may
    # quote the prompt or the model's output.
    logger.warning("model turn failed: %s %s", type(exc).__name__, getattr(exc, "code", ""))
    return failure


def upstream_retry_after(exc: genai_errors.APIError, default: int) -> int:
    """Seconds the model asked us to wait (agent.model_retries.requested_wait), so the answer's
    Retry-After says what the model said; `default` when it said nothing readable."""
    wait = requested_wait(exc)
    return default if wait is None else min(whole_seconds(wait), MAX_RETRY_AFTER_SECONDS)
