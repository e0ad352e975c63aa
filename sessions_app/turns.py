"""One conversation turn: the ADK Runner on our session store, made safe to call from a view.

A turn is all or nothing. Two turns on one session never run at once (the
second gets `TurnInProgress`, a 409), and a turn that fails part way (the
model errs or times out) leaves nothing behind, so the history never holds
half a turn and the next turn starts clean.

How: the Runner of a turn reads the session from our store but appends its
events (the user's message, each model call, each tool result) to a
`TurnBuffer`, which applies them to the in-memory session exactly as every
ADK session service does and keeps them. Only when the model has finished
are they written, all in ONE transaction that also releases the turn lock.
So a failed turn writes nothing (there is nothing to roll back), and a turn
takes SQLite's write lock twice (lock, store) instead of once per event:
with the offline model a turn appends 6 events, and 8 write transactions per
turn made concurrent requests queue on the lock (SQLite's busy handler
sleeps up to 100 ms between retries), which is what limited throughput
(benchmarks/results/service.md). The write lock is never held while the
model runs, however slow the model is.
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
from django.db.models import Q
from django.http import Http404
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables
from google.adk.agents.invocation_context import LlmCallsLimitExceededError
from google.adk.agents.run_config import RunConfig
from google.adk.events.event import Event
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from google.adk.telemetry import ContentCapturingMode, TelemetryConfig
from google.genai import errors as genai_errors
from google.genai import types

from agent import APP_NAME, build_agent, model_label
from agent.verification import verify_reply

from .crypto import DecryptionFailed, KeyUnavailable
from .models import AgentSession
from .selectors import session_state, session_usage
from .store import DjangoSessionService

logger = logging.getLogger(__name__)


class TurnInProgress(Exception):
    """Another turn on this session is running."""


class SessionLimitReached(Exception):
    """The session is full (`limit`: "turns" or "bytes"); no turn more runs on it."""

    def __init__(self, limit: str):
        super().__init__(limit)
        self.limit = limit


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


class TurnBuffer(BaseSessionService):
    """The session service one turn's Runner sees: reads from the store, keeps the writes.

    `append_event` does what every ADK service does to the in-memory session
    (temp state applied then trimmed, state delta applied, event appended)
    and keeps the event in `pending` instead of writing it; `store_pending`
    writes them all through the real store in one transaction.
    """

    def __init__(self, store: BaseSessionService):
        super().__init__()
        self.store = store
        self.pending: list[Event] = []
        self._sessions: dict[tuple[str, str, str], Session] = {}

    async def get_session(self, *, app_name, user_id, session_id, config=None) -> Session | None:
        key = (app_name, user_id, session_id)
        if key in self._sessions:  # asked again within the turn: the copy holding its events
            return self._sessions[key]
        session = await self.store.get_session(app_name=app_name, user_id=user_id, session_id=session_id, config=config)
        if session is not None and config is None:
            self._sessions[key] = session
        return session

    async def create_session(self, *, app_name, user_id, state=None, session_id=None) -> Session:
        return await self.store.create_session(app_name=app_name, user_id=user_id, state=state, session_id=session_id)

    async def list_sessions(self, *, app_name, user_id=None) -> ListSessionsResponse:
        return await self.store.list_sessions(app_name=app_name, user_id=user_id)

    async def delete_session(self, *, app_name, user_id, session_id) -> None:
        await self.store.delete_session(app_name=app_name, user_id=user_id, session_id=session_id)

    @sensitive_variables()
    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        event = await super().append_event(session, event)
        self.pending.append(event)
        return event

    @sensitive_variables()
    async def store_pending(self, app_name: str, user_id: str, session_id: str) -> None:
        """Writes the kept events through the store, in order (call inside a transaction)."""
        # No events are loaded: only the stored revision is needed, which the
        # store checks each append against (stale-writer detection still holds).
        session = await self.store.get_session(
            app_name=app_name, user_id=user_id, session_id=session_id, config=GetSessionConfig(num_recent_events=0)
        )
        if session is None:
            raise Http404  # deleted (or expired and purged) while the model ran
        for event in self.pending:
            await self.store.append_event(session, event)


def _turn_runner(base: Runner, buffer: TurnBuffer) -> Runner:
    """The process's Runner (agent, plugins, services) with this turn's buffer as its session service."""
    return Runner(
        app=base.app,
        app_name=base.app_name,
        session_service=buffer,
        artifact_service=base.artifact_service,
        memory_service=base.memory_service,
        credential_service=base.credential_service,
    )


@sensitive_variables()
def run_turn(session: AgentSession, message: str) -> TurnResult:
    """Runs one turn of `session` with the user's `message` (a sync entry point for views)."""
    # Encryption at rest: the state opens with the caller's token before the
    # turn starts (a value that does not open is "not found", see below).
    resume_text = session_state(session).get("resume_text", "")
    _acquire_turn(session)
    released = False
    try:
        # Checked under the turn lock, so no turn of this session runs between
        # the check and the model.
        _check_session_limits(session)
        base = get_runner()
        buffer = TurnBuffer(base.session_service)
        started = time.monotonic()
        try:
            events = async_to_sync(_run_agent)(_turn_runner(base, buffer), session.user_id, session.session_id, message)
        except (DecryptionFailed, KeyUnavailable):
            # Encryption at rest: a stored value that does not open is a session
            # the caller cannot have (the API's 404), not a model failure.
            raise
        except Exception as exc:
            raise _as_model_failure(exc) from None  # nothing was written: nothing to undo
        with transaction.atomic():
            async_to_sync(buffer.store_pending)(base.app_name, session.user_id, session.session_id)
            _release_turn(session)
        released = True
        result = _summarise(events, resume_text)
        result.latency_ms = round((time.monotonic() - started) * 1000)
        return result
    finally:
        if not released:
            _release_turn(session)


@sensitive_variables()
async def _run_agent(runner: Runner, user_id: str, session_id: str, message: str) -> list:
    content = types.Content(role="user", parts=[types.Part(text=message)])
    run_config = RunConfig(
        # Tracing may record that a turn happened, never what was said.
        telemetry=TelemetryConfig(capture_message_content=ContentCapturingMode.NO_CONTENT),
        # A model that keeps calling tools (e.g. steered by a prompt injection)
        # is stopped after this many calls instead of ADK's default 500.
        max_llm_calls=settings.AGENT_MAX_LLM_CALLS,
    )

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


def _check_session_limits(session: AgentSession) -> None:
    """Refuses a turn on a session that already has SESSION_MAX_TURNS turns or SESSION_MAX_BYTES stored.

    Counted without a key (event authors and sealed sizes are in clear). A
    turn that starts under the limit may end over it by one turn's size.
    """
    usage = session_usage(session)
    if usage is None:
        raise Http404  # deleted (or purged) since the view found it
    if usage.turns >= settings.SESSION_MAX_TURNS:
        raise SessionLimitReached("turns")
    if usage.size_bytes >= settings.SESSION_MAX_BYTES:
        raise SessionLimitReached("bytes")


def _stale_lock_cutoff() -> dt.datetime:
    # A turn cannot outlive its timeout; a lock older than that was left by a
    # crashed worker and may be taken over.
    return timezone.now() - dt.timedelta(seconds=settings.AGENT_TURN_TIMEOUT_SECONDS + 30)


# Both in a transaction, so they pass the write gate (sessions_app.sqlite)
# instead of waiting in SQLite's busy handler.
def _acquire_turn(session: AgentSession) -> None:
    with transaction.atomic():
        taken = AgentSession.objects.filter(pk=session.pk).filter(
            Q(turn_started_at__isnull=True) | Q(turn_started_at__lt=_stale_lock_cutoff())
        ).update(turn_started_at=timezone.now())
    if not taken:
        raise TurnInProgress


def _release_turn(session: AgentSession) -> None:
    with transaction.atomic():
        AgentSession.objects.filter(pk=session.pk).update(turn_started_at=None)


def _as_model_failure(exc: Exception) -> ModelFailure:
    # Only the exception's type and status code are logged: its message may
    # quote the prompt or the model's output.
    logger.warning("model turn failed: %s %s", type(exc).__name__, getattr(exc, "code", ""))
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return ModelFailure(504, "timeout")
    if isinstance(exc, LlmCallsLimitExceededError):
        return ModelFailure(502, "llm_calls_limit")
    if isinstance(exc, genai_errors.APIError):
        if exc.code == 429:
            return ModelFailure(503, "quota", retry_after=30)
        if exc.code in (500, 502, 503, 504):
            return ModelFailure(503 if exc.code == 503 else 502, "upstream", retry_after=10)
    return ModelFailure(502, "bad_response")
