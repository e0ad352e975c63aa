"""One conversation turn: the ADK Runner on our session store, made safe to call from a view.

A turn is all or nothing. Two turns on one session never run at once (the
second gets `TurnInProgress`, a 409), and a turn that fails part way (the
model errs or times out after the user's message was stored) is rolled back:
its events are deleted and the session state restored, so the history never
holds half a turn and the next turn starts clean.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import logging
import time
from dataclasses import dataclass, field

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables
from google.adk.agents.run_config import RunConfig
from google.adk.runners import Runner
from google.adk.telemetry import ContentCapturingMode, TelemetryConfig
from google.genai import errors as genai_errors
from google.genai import types

from agent import APP_NAME, build_agent, model_label
from agent.verification import verify_reply

from .crypto import DecryptionFailed, KeyUnavailable
from .models import AgentSession, SessionEvent
from .selectors import session_state
from .store import DjangoSessionService

logger = logging.getLogger(__name__)


class TurnInProgress(Exception):
    """Another turn on this session is running."""


class ModelFailure(Exception):
    """The model could not produce this turn; `status` is the HTTP status to answer."""

    def __init__(self, status: int, reason: str, retry_after: int | None = None):
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.retry_after = retry_after


@dataclass
class TurnResult:
    reply: str
    tool_calls: list[dict] = field(default_factory=list)
    verification: list[dict] = field(default_factory=list)
    llm_calls: int = 0
    total_tokens: int = 0
    latency_ms: int = 0
    model: str = ""


@functools.lru_cache(maxsize=1)
def get_runner() -> Runner:
    """One Runner per process; it holds no per-session state."""
    return Runner(app_name=APP_NAME, agent=build_agent(), session_service=DjangoSessionService())


@sensitive_variables()
def run_turn(session: AgentSession, message: str) -> TurnResult:
    """Runs one turn of `session` with the user's `message` (a sync entry point for views)."""
    # Encryption at rest: the state opens with the caller's token before the
    # turn starts (a value that does not open is "not found", see below).
    resume_text = session_state(session).get("resume_text", "")
    _acquire_turn(session)
    try:
        last_event_pk = session.events.aggregate(last=Max("pk"))["last"] or 0
        state_before = session.state  # the sealed bytes, put back as they were
        started = time.monotonic()
        try:
            events = async_to_sync(_run_agent)(session.user_id, session.session_id, message)
        except (DecryptionFailed, KeyUnavailable):
            # Encryption at rest: a stored value that does not open is a session
            # the caller cannot have (the API's 404), not a model failure.
            _roll_back_turn(session, last_event_pk, state_before)
            raise
        except Exception as exc:
            _roll_back_turn(session, last_event_pk, state_before)
            raise _as_model_failure(exc) from None
        result = _summarise(events, resume_text)
        result.latency_ms = round((time.monotonic() - started) * 1000)
        return result
    finally:
        _release_turn(session)


@sensitive_variables()
async def _run_agent(user_id: str, session_id: str, message: str) -> list:
    runner = get_runner()
    content = types.Content(role="user", parts=[types.Part(text=message)])
    # Tracing may record that a turn happened, never what was said.
    run_config = RunConfig(telemetry=TelemetryConfig(capture_message_content=ContentCapturingMode.NO_CONTENT))

    async def collect() -> list:
        return [
            event
            async for event in runner.run_async(
                user_id=user_id, session_id=session_id, new_message=content, run_config=run_config
            )
        ]

    return await asyncio.wait_for(collect(), timeout=settings.AGENT_TURN_TIMEOUT_SECONDS)


@sensitive_variables()
def _summarise(events: list, resume_text: str) -> TurnResult:
    reply_parts, tool_calls, llm_calls, total_tokens = [], [], 0, 0
    for event in events:
        if event.content is None or event.content.role != "model":
            continue
        llm_calls += 1
        if event.usage_metadata and event.usage_metadata.total_token_count:
            total_tokens += event.usage_metadata.total_token_count
        tool_calls += [{"name": call.name, "args": dict(call.args or {})} for call in event.get_function_calls()]
        if event.is_final_response():
            reply_parts += [part.text for part in event.content.parts or [] if part.text and not part.thought]
    reply = "\n".join(reply_parts).strip()
    # Verification does not depend on the model choosing to call verify_claims:
    # every reply is checked against the resume before it is returned.
    return TurnResult(
        reply=reply,
        tool_calls=tool_calls,
        verification=verify_reply(reply, resume_text),
        llm_calls=llm_calls,
        total_tokens=total_tokens,
        model=model_label(get_runner().agent.model),
    )


def _stale_lock_cutoff() -> dt.datetime:
    # A turn cannot outlive its timeout; a lock older than that was left by a
    # crashed worker and may be taken over.
    return timezone.now() - dt.timedelta(seconds=settings.AGENT_TURN_TIMEOUT_SECONDS + 30)


def _acquire_turn(session: AgentSession) -> None:
    taken = AgentSession.objects.filter(pk=session.pk).filter(
        Q(turn_started_at__isnull=True) | Q(turn_started_at__lt=_stale_lock_cutoff())
    ).update(turn_started_at=timezone.now())
    if not taken:
        raise TurnInProgress


def _release_turn(session: AgentSession) -> None:
    AgentSession.objects.filter(pk=session.pk).update(turn_started_at=None)


def _roll_back_turn(session: AgentSession, last_event_pk: int, state_before: bytes) -> None:
    with transaction.atomic():
        SessionEvent.objects.filter(session=session, pk__gt=last_event_pk).delete()
        AgentSession.objects.filter(pk=session.pk).update(
            state=state_before, revision=session.revision, updated_at=session.updated_at
        )


def _as_model_failure(exc: Exception) -> ModelFailure:
    # Only the exception's type and status code are logged: its message may
    # quote the prompt or the model's output.
    logger.warning("model turn failed: %s %s", type(exc).__name__, getattr(exc, "code", ""))
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return ModelFailure(504, "timeout")
    if isinstance(exc, genai_errors.APIError):
        if exc.code == 429:
            return ModelFailure(503, "quota", retry_after=30)
        if exc.code in (500, 502, 503, 504):
            return ModelFailure(503 if exc.code == 503 else 502, "upstream", retry_after=10)
    return ModelFailure(502, "bad_response")
