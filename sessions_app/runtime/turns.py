"""One conversation turn: the ADK Runner on a session read beforehand, made safe to call from a view.

A turn is all or nothing. Two turns on one session never run at once (the
second gets `TurnInProgress`, a 409), and a turn that fails part way (the
model errs or times out) leaves nothing behind, so the history never holds
half a turn and the next turn starts clean.

How: the session is read in the request's thread, under the turn lock; the
Runner the caller passes (the process's, `runtime/runner.py`) then runs, as a
copy, on the process's event loop against a `TurnBuffer`, which
serves that session from memory and keeps its events (the user's message,
each model call, each tool result), applied to the in-memory session exactly
as every ADK session service does. Only when the model has finished are they
written, all in ONE transaction, and the turn lock is freed as it commits
(sessions_app.storage.turn_lock). So a failed turn writes nothing (there is
nothing to roll back), the loop never touches the database, and a turn takes
SQLite's write lock once (the turn lock is not a row there) instead of once per
event (benchmarks/results/sqlite_choices.md). The write lock is never held while
the model runs, however slow the model is.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connections
from django.views.decorators.debug import sensitive_variables
from google.adk.agents import LlmAgent
from google.adk.agents.invocation_context import LlmCallsLimitExceededError
from google.adk.agents.run_config import RunConfig
from google.adk.events.event import Event
from google.adk.plugins import BasePlugin
from google.adk.runners import Runner
from google.adk.sessions import BaseSessionService, Session
from google.adk.sessions.base_session_service import ListSessionsResponse
from google.adk.telemetry import ContentCapturingMode, TelemetryConfig
from google.genai import errors as genai_errors
from google.genai import types

from agent import model_label
from agent.events import tool_call_outcomes, visible_texts
from agent.model_retries import requested_wait, turn_deadline, whole_seconds
from agent.plans import plan_count
from agent.tools import MAX_CLAIMS
from agent.verification import verify_reply
from sessions_app import model_provider
from sessions_app.exceptions import ModelFailure, SessionLimitReached, SessionMissing, TurnInProgress, TurnsBusy
from sessions_app.infra import disk_space
from sessions_app.infra.client_address import IP
from sessions_app.models import AgentSession
from sessions_app.runtime import client_turns, event_loop
from sessions_app.selectors import session_usage
from sessions_app.storage import repository, turn_lock
from sessions_app.storage.adk_service import event_deltas, read_session, writer_view
from sessions_app.storage.failure_counts import record_unknown_tool_calls

logger = logging.getLogger(__name__)


@dataclass
class TurnResult:
    reply: str
    tool_calls: list[dict] = field(default_factory=list)
    verification: list[dict] = field(default_factory=list)
    llm_calls: int = 0
    total_tokens: int = 0
    latency_ms: int = 0
    model: str = ""


class TurnBuffer(BaseSessionService):
    """The session service one turn's Runner sees, in memory only: the session read before the
    turn (in the request's thread), and the turn's events, kept for `store_pending`.

    It never reaches the database: the Runner runs on the process's event loop, which has no
    connection of its own (tests/test_turn_threads.py). `append_event` does what every ADK
    service does to the in-memory session (temp state applied then trimmed, state delta applied,
    event appended) and keeps the event in `pending` instead of writing it.
    """

    def __init__(self, session: Session):
        super().__init__()
        self.session = session
        self.pending: list[Event] = []
        self._first_read = writer_view(session)

    async def get_session(self, *, app_name, user_id, session_id, config=None) -> Session | None:
        if (app_name, user_id, session_id) != (self.session.app_name, self.session.user_id, self.session.id):
            return None  # a turn's Runner asks for its own session only
        if config is None:
            return self.session
        events = self.session.events  # as ADK's in-memory service filters them
        if config.num_recent_events is not None:
            events = events[-config.num_recent_events :] if config.num_recent_events else []
        if config.after_timestamp is not None:
            events = [event for event in events if event.timestamp >= config.after_timestamp]
        return self.session.model_copy(update={"events": list(events)})

    async def create_session(self, *, app_name, user_id, state=None, session_id=None) -> Session:
        raise NotImplementedError("a turn's Runner creates no session")

    async def list_sessions(self, *, app_name, user_id=None) -> ListSessionsResponse:
        raise NotImplementedError("a turn's Runner lists no sessions")

    async def delete_session(self, *, app_name, user_id, session_id) -> None:
        raise NotImplementedError("a turn's Runner deletes no session")

    @sensitive_variables()
    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        event = await super().append_event(session, event)
        self.pending.append(event)
        return event

    @sensitive_variables()
    def store_pending(self, app_name: str, user_id: str, session_id: str) -> None:
        """Writes the kept events, in order, in one repository call (call inside a transaction).

        Checked against the revision the turn read: SessionMissing when the
        session went while the model ran, TurnInProgress when another writer
        appended meanwhile (a turn lock taken over as stale).
        """
        events = [(event, event_deltas(event)) for event in self.pending]
        try:
            repository.append_events(app_name, user_id, session_id, events, self._first_read)
        except repository.StaleWriter:
            raise TurnInProgress from None


class ModelErrors(BasePlugin):
    """Remembers the exceptions the model itself raised in one turn, so that a turn tells a
    model failure (502/503) from a bug in a tool, the repository or the agent (a logged 500)."""

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


def _turn_runner(base: Runner, buffer: TurnBuffer, plugins: list[BasePlugin]) -> Runner:
    """The Runner the turn was given (agent, plugins, services) with this turn's buffer as its
    session service and this turn's plugins (its model-error recorder, its progress) added."""
    return Runner(
        app=base.app.model_copy(update={"plugins": [*base.app.plugins, *plugins]}),
        app_name=base.app_name,
        session_service=buffer,
        artifact_service=base.artifact_service,
        memory_service=base.memory_service,
        credential_service=base.credential_service,
    )


class TurnProgress(BasePlugin):
    """Reports what a running turn is doing, for a streamed turn to show: each model call, the
    claims the model checks (`checking_claims`, with their count), the plan version it saves
    (`saving_plan`). Stages and counts only, never text: nothing unverified leaves the turn."""

    def __init__(self, report: Callable[[dict], None]):
        super().__init__(name="resume_agent_turn_progress")
        self.report = report
        self.model_calls = 0

    async def before_model_callback(self, *, callback_context, llm_request):
        self.model_calls += 1
        self.report({"stage": "thinking", "model_call": self.model_calls})
        return None

    async def before_tool_callback(self, *, tool, tool_args, tool_context):
        if tool.name == "verify_claims":
            claims = tool_args.get("claims")
            count = min(len(claims), MAX_CLAIMS) if isinstance(claims, list) else 0
            self.report({"stage": "checking_claims", "count": count})
        elif tool.name == "save_plan":
            self.report({"stage": "saving_plan", "version": plan_count(tool_context.state) + 1})
        return None


class StartedTurn:
    """A turn whose lock is held, whose session is read and whose Runner (a copy of `runner` on
    the turn's buffer) runs on the process's event loop. `answer()` waits for the model and
    verifies its reply, `keep()` stores the turn; `close()` stops a turn that was not kept (a
    client gone mid-turn) and frees the lock: nothing of it is stored. Build it with `start_turn`."""

    def __init__(
        self,
        runner: Runner,
        session: AgentSession,
        message: str,
        report: Callable[[dict], None] | None,
        place: TurnPlace,
    ):
        self.runner, self.session, self.place = runner, session, place
        self.started = time.monotonic()
        self._released = False
        self._release_lock = threading.Lock()  # keep() and close() may meet: a hang-up at the end
        try:
            # Checked under the turn lock, so no turn of this session runs between
            # the check and the model.
            _check_session_limits(session)
            # Read once, under the lock, with the caller's token (encryption at rest: a
            # value that does not open fails here, and the API answers "not found").
            stored = read_session(runner.app_name, session.owner_id, session.session_id)
            if stored is None:
                raise SessionMissing(session.session_id)
            self.resume_text = stored.state.get("resume_text", "")
            self.buffer, self.model_errors = TurnBuffer(stored), ModelErrors()
            plugins = [self.model_errors] if report is None else [self.model_errors, TurnProgress(report)]
            turn_runner = _turn_runner(runner, self.buffer, plugins)
            self.running = event_loop.submit(_run_agent(turn_runner, session.owner_id, session.session_id, message))
        except BaseException:
            self.close()
            raise

    @sensitive_variables()
    def answer(self) -> TurnResult:
        """Waits for the model and verifies its reply; stores nothing (that is `keep()`)."""
        try:
            events = self.running.result()
        except Exception as exc:
            # Nothing was written: nothing to undo. Anything the model did not
            # cause (a tool's or the repository's bug, a session that does not
            # open) goes on as it is.
            failure = _as_model_failure(exc, self.model_errors)
            if failure is None:
                raise
            raise failure from None
        unanswered = _without_answer(events)
        if unanswered is not None:
            raise unanswered
        return _summarise(events, self.resume_text, self.runner.agent)

    @sensitive_variables()
    def keep(self, result: TurnResult) -> TurnResult:
        """Stores the whole turn in one transaction; the lock is freed as it commits."""
        session = self.session
        with turn_lock.storing_then_releasing(session.pk):
            self.buffer.store_pending(self.runner.app_name, session.owner_id, session.session_id)
        if self._mark_released():
            self.place.release()
        unknown = sum(call["outcome"] == "unknown" for call in result.tool_calls)
        if unknown:
            record_unknown_tool_calls(unknown)
        result.latency_ms = round((time.monotonic() - self.started) * 1000)
        return result

    def close(self) -> None:
        """Stops the model if it still runs and frees the lock, unless the turn was stored. Called
        again, or from another thread meanwhile, it does nothing."""
        if not self._mark_released():
            return
        running = getattr(self, "running", None)
        if running is not None and not running.done():
            running.cancel()
        try:
            turn_lock.release_turn(self.session.pk)
        finally:
            self.place.release()

    def _mark_released(self) -> bool:
        """True the first time only: the lock and the turn's place are freed once."""
        with self._release_lock:
            first, self._released = not self._released, True
            return first


class TurnsInFlight:
    """How many turns this process runs at once, at most AGENT_MAX_TURNS_IN_FLIGHT: beyond it a
    turn is refused at once (TurnsBusy, a 503) rather than queued without limit. A client (its
    address, its network) is bounded too, across processes (ClientTurnsBusy, a 429: the client's
    doing, not the server's; runtime/client_turns.py)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.count = 0

    def take(self, client: IP | None = None) -> TurnPlace:
        counters = client_turns.take(client)
        with self._lock:
            if self.count >= settings.AGENT_MAX_TURNS_IN_FLIGHT:
                client_turns.release(counters)
                raise TurnsBusy
            self.count += 1
        return TurnPlace(counters)

    def release(self) -> None:
        with self._lock:
            self.count -= 1


turns_in_flight = TurnsInFlight()


class TurnPlace:
    """What a started turn holds besides its lock: one of the process's places and its client's
    counts, given back together and once, on whichever path the turn ends."""

    def __init__(self, counters: list[str]):
        self.counters = counters
        self._lock, self._held = threading.Lock(), True

    def release(self) -> None:
        with self._lock:
            held, self._held = self._held, False
        if held:
            try:
                turns_in_flight.release()
            finally:
                client_turns.release(self.counters)


def start_turn(
    runner: Runner,
    session: AgentSession,
    message: str,
    report: Callable[[dict], None] | None = None,
    client: IP | None = None,
) -> StartedTurn:
    """Starts one turn of `session` with the user's `message` on `runner` (the process's is
    `runtime.runner.process_runner()`) for the client at `client`: ClientTurnsBusy when that client
    has as many turns in flight as it may, TurnsBusy when the process runs as many turns as it may,
    TurnInProgress while another runs on this session, SessionLimitReached on a full session,
    disk_space's refusal under the storage headroom. Each stage of the turn is given to `report`
    (a streamed turn's) as it happens, on the turn's event loop."""
    # Before the turn lock and the model: under the headroom, nothing is written.
    disk_space.ensure_headroom()
    place = turns_in_flight.take(client)
    try:
        locked = turn_lock.lock_turn(session.pk, settings.AGENT_TURN_TIMEOUT_SECONDS)
    except BaseException:
        place.release()
        raise
    if not locked:
        place.release()
        raise TurnInProgress
    # Who this turn sends the session's content to, noted before the model is called, so that a
    # turn that fails or a server killed mid-turn still leaves it said. A write only the first
    # time a session's turn goes to that provider.
    provider = model_provider.configured().id
    if provider not in session.model_provider_ids:
        try:
            repository.note_model_provider(session.pk, provider)
        except BaseException:
            turn_lock.release_turn(session.pk)
            place.release()
            raise
    turn = StartedTurn(runner, session, message, report, place)
    _give_back_database_connections()
    return turn


def _give_back_database_connections() -> None:
    """The model thinks for seconds: meanwhile the turn holds no database connection (keeping
    one, a server's turns in flight were bounded by PostgreSQL's max_connections: 500s at 100
    turns). Its lock is the process's, not the connection's (storage/turn_lock.py). Not inside
    a transaction (a test's)."""
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close()


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

    # A model call's retries wait only as long as the turn has left (agent.model_retries).
    turn_deadline.set(asyncio.get_running_loop().time() + settings.AGENT_TURN_TIMEOUT_SECONDS)
    return await asyncio.wait_for(collect(), timeout=settings.AGENT_TURN_TIMEOUT_SECONDS)


@sensitive_variables()
def _summarise(events: list, resume_text: str, agent: LlmAgent) -> TurnResult:
    reply_parts, llm_calls, total_tokens = [], 0, 0
    for event in events:
        if event.content is None or event.content.role != "model":
            continue
        llm_calls += 1
        if event.usage_metadata and event.usage_metadata.total_token_count:
            total_tokens += event.usage_metadata.total_token_count
        if event.is_final_response():
            reply_parts += visible_texts(event)
    reply = "\n".join(reply_parts).strip()
    calls = tool_call_outcomes(events, {getattr(tool, "name", None) or tool.__name__ for tool in agent.tools})
    # Verification does not depend on the model choosing to call verify_claims:
    # every reply is checked against the resume before it is returned.
    return TurnResult(
        reply=reply,
        tool_calls=calls,
        verification=verify_reply(reply, resume_text),
        llm_calls=llm_calls,
        total_tokens=total_tokens,
        model=model_label(agent.model),
    )


def _check_session_limits(session: AgentSession) -> None:
    """Refuses a turn on a session that already has SESSION_MAX_TURNS turns or SESSION_MAX_BYTES stored.

    Counted without a key (event authors and sealed sizes are in clear). A
    turn that starts under the limit may end over it by one turn's size.
    """
    usage = session_usage(session)
    if usage is None:
        raise SessionMissing(session.session_id)  # deleted (or purged) since the view found it
    if usage.turns >= settings.SESSION_MAX_TURNS:
        raise SessionLimitReached("turns")
    if usage.size_bytes >= settings.SESSION_MAX_BYTES:
        raise SessionLimitReached("bytes")


# The error code ADK gives a model response without an answer (Gemini's finish or block reason,
# or ADK's own for no content), and what the turn's failure is then; any other code is a bad
# response (a malformed function call, say).
_NO_ANSWER = {
    **dict.fromkeys(
        ("SAFETY", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "RECITATION", "IMAGE_SAFETY", "LANGUAGE", "OTHER"),
        "blocked",
    ),
    "MAX_TOKENS": "truncated",
    "MODEL_RETURNED_NO_CONTENT": "empty",
}


def _without_answer(events: list) -> ModelFailure | None:
    """Whether the model ended the turn with nothing to show: its safety filters refused the
    prompt or the answer (blocked), it ran out of output tokens before any text (truncated), or
    it answered with no text (empty). Such a turn fails like a model error and is not kept:
    nothing of it is stored, and the person may send the message again, rephrased. Never an
    empty 200."""
    final = next((event for event in reversed(events) if event.author != "user"), None)
    if final is not None and final.error_code:
        code = str(getattr(final.error_code, "value", final.error_code))
        failure = ModelFailure(_NO_ANSWER.get(code, "bad_response"))
    elif final is None or not "".join(visible_texts(final)).strip():
        code, failure = "no text", ModelFailure("empty")
    else:
        return None
    # The model's reason only (e.g. SAFETY): its message may quote the prompt.
    logger.warning("model turn ended without an answer: %s", code)
    return failure


def _as_model_failure(exc: Exception, model_errors: ModelErrors) -> ModelFailure | None:
    """The model failure `exc` is, or None when the model did not cause it."""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        failure = ModelFailure("timeout")
    elif isinstance(exc, LlmCallsLimitExceededError):
        failure = ModelFailure("llm_calls_limit")
    elif not model_errors.came_from_the_model(exc):
        return None
    elif isinstance(exc, genai_errors.APIError) and exc.code == 429:
        failure = ModelFailure("quota", retry_after=_upstream_retry_after(exc, 30))
    elif isinstance(exc, genai_errors.APIError) and exc.code == 503:
        failure = ModelFailure("unavailable", retry_after=_upstream_retry_after(exc, 10))
    elif isinstance(exc, genai_errors.APIError) and exc.code in (500, 502, 504):
        failure = ModelFailure("upstream", retry_after=_upstream_retry_after(exc, 10))
    else:
        failure = ModelFailure("bad_response")
    # Only the exception's type and status code are logged: its message may
    # quote the prompt or the model's output.
    logger.warning("model turn failed: %s %s", type(exc).__name__, getattr(exc, "code", ""))
    return failure


def _upstream_retry_after(exc: genai_errors.APIError, default: int) -> int:
    """Seconds the model asked us to wait (agent.model_retries.requested_wait), so the answer's
    Retry-After says what the model said; `default` when it said nothing readable."""
    wait = requested_wait(exc)
    return default if wait is None else min(whole_seconds(wait), MAX_RETRY_AFTER_SECONDS)


MAX_RETRY_AFTER_SECONDS = 3600
