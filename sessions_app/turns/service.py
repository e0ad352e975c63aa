"""One conversation turn: the ADK Runner on a session read beforehand, made safe to call from a view.

A turn is all or nothing. Two turns on one session never run at once (the
second gets `TurnInProgress`, a 409), and a turn that fails part way (the
model errs or times out) leaves nothing behind, so the history never holds
half a turn and the next turn starts clean.

How: the session is read in the request's thread, under the turn lock (`TurnSlot.take`); the
Runner the caller passes (the process's, `turns/runner.py`) then runs, as a
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
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.db import connections
from django.views.decorators.debug import sensitive_variables
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.runners import Runner
from google.genai import types

from agent.events import REPLY_RECORD, reply_event, tool_call_outcomes, visible_texts
from agent.guards import FLAG_TOOL
from agent.model_retries import turn_deadline
from agent.model_selection import model_label
from agent.screening import MODEL_FLAG_KIND
from agent.verification import verify_reply
from sessions_app import exceptions, model_provider
from sessions_app.adk.buffer import TurnBuffer
from sessions_app.adk.service import read_session
from sessions_app.exceptions import ModelFailure, SessionMissing, TurnInProgress
from sessions_app.infra import disk_space, metrics, traces
from sessions_app.infra.client_address import IP
from sessions_app.models import AgentSession
from sessions_app.storage import sessions, turn_lock
from sessions_app.storage.failure_counts import record_unknown_tool_calls
from sessions_app.turns import loop as event_loop
from sessions_app.turns.failures import ModelErrors, as_model_failure, without_answer
from sessions_app.turns.limits import check_session_limits, turns_in_flight
from sessions_app.turns.plugins import TurnProgress, TurnText, turn_runner
from sessions_app.turns.stages import Stage

# Why a turn was refused before its model ran: the `reason` of its count (outcome "refused").
REFUSALS = {
    exceptions.TurnsBusy: "turns_busy",
    exceptions.ClientTurnsBusy: "client_turns_busy",
    TurnInProgress: "turn_in_progress",
    exceptions.SessionLimitReached: "session_full",
    SessionMissing: "session_missing",
    disk_space.InsufficientStorage: "storage_low",
}
# Every outcome and reason a turn is counted by, from the start (a series is there before its
# first turn): "stored", "model_failure" (a ModelFailureReason), "refused" (a REFUSALS value),
# "error" (a bug of ours, a storage failure) and "abandoned" (the client went away).
for _reason in exceptions.ModelFailureReason:
    metrics.TURNS.labels("model_failure", _reason.value)
for _reason in REFUSALS.values():
    metrics.TURNS.labels("refused", _reason)
for _outcome in ("stored", "error", "abandoned"):
    metrics.TURNS.labels(_outcome, "")


@dataclass
class TurnResult:
    reply: str
    tool_calls: list[dict] = field(default_factory=list)
    verification: list[dict] = field(default_factory=list)
    llm_calls: int = 0
    total_tokens: int = 0
    latency_ms: int = 0
    model: str = ""


class TurnSlot:
    """One turn's hold on its session. Taken (`take`, or `async with`), it holds the storage
    headroom's check, a place among the turns in flight, the turn lock and the session read;
    everything it holds is freed by its one exit stack (`aclose`, the end of `async with`), once,
    whichever way the turn ends: stored, failed, or its client gone. Build it with `turn_slot`."""

    def __init__(self, runner: Runner, session: AgentSession, client: IP | None):
        self.runner, self.session, self.client = runner, session, client
        self.started = time.monotonic()
        self.stored = False
        self.outcome: tuple[str, str] | None = None  # (outcome, reason) once decided; none: abandoned
        # Sync frees, run together in one hand-off to the request's thread when the slot closes.
        self._frees = contextlib.ExitStack()
        self._lock = threading.Lock()  # the stream's end and the server's close() may meet
        self._taken = self._closed = False

    async def __aenter__(self) -> TurnSlot:
        return await self.take()

    async def __aexit__(self, *exc_info) -> None:
        await self.aclose()

    async def take(self) -> TurnSlot:
        """Takes what the turn holds (again: nothing more). TurnsBusy, ClientTurnsBusy,
        TurnInProgress, SessionLimitReached, SessionMissing or disk_space's refusal, with
        nothing held, when the turn may not run."""
        if not self._taken:
            self._taken = True
            try:
                await sync_to_async(self._take)()
            except BaseException as exc:
                if isinstance(exc, Exception):  # not a cancellation: the client that went away abandoned it
                    refused = next((reason for kind, reason in REFUSALS.items() if isinstance(exc, kind)), None)
                    self.outcome = ("refused", refused) if refused else ("error", "")
                await self.aclose()
                raise
        return self

    def _take(self) -> None:
        """In the request's thread: each resource taken is given its free at once."""
        session = self.session
        disk_space.ensure_headroom()  # before the lock and the model: under the headroom, nothing is written
        place = turns_in_flight.take(self.client)
        self.when_closed(place.release)
        if not turn_lock.lock_turn(session.pk, settings.AGENT_TURN_TIMEOUT_SECONDS):
            raise TurnInProgress
        self.when_closed(self._release_lock)
        # Who this turn sends the session's content to, noted before the model is called, so that a
        # turn that fails or a server killed mid-turn still leaves it said.
        provider = model_provider.configured().id
        if provider not in session.model_provider_ids:
            sessions.note_model_provider(session.pk, provider)
        # Checked under the turn lock, so no turn of this session runs between the check and the model.
        check_session_limits(session)
        # Read once, under the lock, with the caller's token (encryption at rest: a value that
        # does not open fails here, and the API answers "not found").
        stored = read_session(self.runner.app_name, session.owner_id, session.session_id)
        if stored is None:
            raise SessionMissing(session.session_id)
        # The Runner knows the session by another name: ADK writes it on every span (infra/traces.py).
        traced = stored.model_copy(update={"id": traces.traced_session_id(stored.id)})
        self.resume_text, self.buffer = stored.state.get("resume_text", ""), TurnBuffer(traced)
        _give_back_database_connections()

    def when_closed(self, free: Callable[[], None]) -> None:
        """`free()` (sync; run in the request's thread) when the slot is closed, before what was
        taken earlier."""
        self._frees.callback(free)

    def _release_lock(self) -> None:
        if not self.stored:  # a stored turn's lock was freed as it committed
            turn_lock.release_turn(self.session.pk)

    async def aclose(self) -> None:
        """Frees what the slot holds; again, or from another thread meanwhile, it does nothing."""
        with self._lock:
            closed, self._closed = self._closed, True
        if not closed:
            await sync_to_async(self._frees.close)()
            self._count()

    def _count(self) -> None:
        """The turn's one count, and its duration when it ran (metrics)."""
        outcome, reason = self.outcome or ("abandoned", "")
        metrics.TURNS.labels(outcome, reason).inc()
        if outcome != "refused":
            metrics.TURN_SECONDS.labels(outcome).observe(time.monotonic() - self.started)

    def close(self) -> None:
        """`aclose` from sync code (a server closing a streamed answer it never read): awaited
        from a thread, or started as a task when called on an event loop."""
        if self._closed:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            async_to_sync(self.aclose)()
        else:
            self._closing = loop.create_task(self.aclose())  # kept: a task nobody holds may be collected

    @sensitive_variables()
    def answer(self, running: event_loop.Running, model_errors: ModelErrors) -> TurnResult:
        """The model's finished turn, verified; stores nothing (that is `keep()`)."""
        try:
            events = running.result()
        except Exception as exc:
            # Nothing was written: nothing to undo. Anything the model did not cause (a tool's or
            # the storage's bug, a session that does not open) goes on as it is.
            failure = as_model_failure(exc, model_errors)
            if failure is None:
                raise
            raise failure from None
        unanswered = without_answer(events)
        if unanswered is not None:
            raise unanswered
        return _summarise(events, self.resume_text, self.runner.agent)

    @sensitive_variables()
    def keep(self, result: TurnResult) -> TurnResult:
        """Stores the whole turn in one transaction; the lock is freed as it commits."""
        session = self.session
        _record_reply(self.buffer.pending, result)
        with turn_lock.storing_then_releasing(session.pk):
            self.buffer.store_pending(self.runner.app_name, session.owner_id, session.session_id)
        self.stored = True
        self.outcome = ("stored", "")
        unknown = sum(call["outcome"] == "unknown" for call in result.tool_calls)
        if unknown:
            record_unknown_tool_calls(unknown)
        flagged = sum(call["name"] == FLAG_TOOL and call["outcome"] == "ran" for call in result.tool_calls)
        if flagged:
            metrics.SCREEN_FLAGS.labels(MODEL_FLAG_KIND).inc(flagged)
        result.latency_ms = round((time.monotonic() - self.started) * 1000)
        return result


@sensitive_variables()
def _record_reply(events: list, result: TurnResult) -> None:
    """Keeps what the turn shows with its reply (claim checks, tool calls, model) in the reply
    event, sealed with it: the conversation read back shows each reply as it was shown live."""
    event = reply_event(events)
    if event is not None:
        record = {"verification": result.verification, "tool_calls": result.tool_calls, "model": result.model}
        event.custom_metadata = {**(event.custom_metadata or {}), REPLY_RECORD: record}


def turn_slot(runner: Runner, session: AgentSession, client: IP | None = None) -> TurnSlot:
    """A turn of `session` on `runner` (the process's is `turns.runner.process_runner()`) for the
    client at `client`, to take with `async with` (or `take()`) and then `run`."""
    return TurnSlot(runner, session, client)


@sensitive_variables()
async def run(slot: TurnSlot, message: str, report: Callable[[dict], None] | None = None) -> TurnResult:
    """Runs the user's `message` as the taken `slot`'s turn, on the process's event loop, without
    holding a thread while the model thinks; verifies the reply and stores the turn. Each stage
    is given to `report` (a streamed turn's) as it happens: on the turn's event loop while the
    model runs, then on the caller's."""
    try:
        return await _run(slot, message, report)
    except ModelFailure as failure:
        slot.outcome = ("model_failure", failure.reason.value)
        raise
    except Exception:
        slot.outcome = ("error", "")
        raise


@sensitive_variables()
async def _run(slot: TurnSlot, message: str, report: Callable[[dict], None] | None) -> TurnResult:
    model_errors = ModelErrors()
    if report is not None:
        report = _timing_first_progress(report, slot.started)
    plugins = [model_errors] if report is None else [model_errors, TurnProgress(report), TurnText(report)]
    session = slot.session
    runner = turn_runner(slot.runner, slot.buffer, plugins)
    began = time.monotonic()
    streamed = report is not None  # the model's text is shown as it comes (TurnText)
    running = event_loop.submit(_run_agent(runner, session.owner_id, slot.buffer.session.id, message, streamed))
    slot.when_closed(running.cancel)  # a turn not kept stops its model
    await running.finished()
    metrics.TURN_MODEL_SECONDS.observe(time.monotonic() - began)
    if report is None:  # nobody to tell between the two steps: one hand-off to the request's thread
        return await sync_to_async(_answer_and_keep)(slot, running, model_errors)
    report({"stage": Stage.CHECKING_REPLY})
    result = await sync_to_async(slot.answer)(running, model_errors)
    report({"stage": Stage.SAVING})
    return await sync_to_async(slot.keep)(result)


@sensitive_variables()
def _answer_and_keep(slot: TurnSlot, running: event_loop.Running, model_errors: ModelErrors) -> TurnResult:
    return slot.keep(slot.answer(running, model_errors))


def _timing_first_progress(report: Callable[[dict], None], started: float) -> Callable[[dict], None]:
    """`report`, which also times the first stage the turn reports, from its request (metrics)."""
    unreported = [True]

    def reporting(stage: dict) -> None:
        if unreported and unreported.pop():
            metrics.TURN_FIRST_PROGRESS_SECONDS.observe(time.monotonic() - started)
        report(stage)

    return reporting


def _give_back_database_connections() -> None:
    """The model thinks for seconds: meanwhile the turn holds no database connection (keeping
    one, a server's turns in flight were bounded by PostgreSQL's max_connections: 500s at 100
    turns). Its lock is the process's, not the connection's (storage/turn_lock.py). Not inside
    a transaction (a test's)."""
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close()


@sensitive_variables()
async def _run_agent(runner: Runner, user_id: str, session_id: str, message: str, streamed: bool = False) -> list:
    """The turn's events; `streamed`: in ADK's SSE streaming mode, where the model's text also comes
    in pieces (partial events, shown by a streamed turn's TurnText and never stored: left out here)."""
    content = types.Content(role="user", parts=[types.Part(text=message)])
    run_config = RunConfig(
        streaming_mode=StreamingMode.SSE if streamed else StreamingMode.NONE,
        # Tracing may record that a turn happened, never what was said (infra/traces.py).
        telemetry=traces.run_telemetry(),
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
            if not event.partial
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
