"""A real ADK Runner turn on DjangoSessionService, with a scripted model (no network).

The agent has one plain-function tool. The model first calls it, then answers
with text; the turn must leave the user's message, the call, the tool's
response and the answer in the database, in that order, along with the state
the tool wrote. The same turn is also run from inside a running event loop
(as under an ASGI server), where any ORM call not wrapped in sync_to_async
would raise SynchronousOnlyOperation.
"""

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.core.exceptions import SynchronousOnlyOperation
from django.db import connections
from google.adk.agents import LlmAgent
from google.adk.events.event import Event
from google.adk.runners import Runner
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from sessions_app.adk.service import DjangoSessionService
from sessions_app.models import AgentSession, SessionEvent, UserState
from sessions_app.security import sealing
from sessions_app.security.crypto import token_context
from tests.support.scripted_llm import ScriptedLlm, call_response, text_response

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("sealed_with_the_modules_token")]

APP = "runner_app"
USER = "runner-user"
TOKEN = "runner-test-token-not-a-real-one"
SKILL = "Python 程式設計"
ANSWER = "已記錄你的技能：Python 程式設計。"


def record_skill(skill: str, tool_context: ToolContext) -> dict:
    """Records a skill the user says they have.

    Args:
      skill: The skill, as the user named it.

    Returns:
      {"recorded": skill, "count": how many skills are recorded now}.
    """
    skills = [*(tool_context.state.get("skills") or []), skill]
    tool_context.state["skills"] = skills
    tool_context.state["user:last_skill"] = skill
    return {"recorded": skill, "count": len(skills)}


def _runner(llm: ScriptedLlm, service: DjangoSessionService) -> Runner:
    agent = LlmAgent(
        name="coach",
        model=llm,
        instruction="Record every skill the user mentions with record_skill, then confirm.",
        tools=[record_skill],
    )
    return Runner(app_name=APP, agent=agent, session_service=service)


async def _turn(runner: Runner, session_id: str, text: str) -> list[Event]:
    message = types.Content(role="user", parts=[types.Part(text=text)])
    return [event async for event in runner.run_async(user_id=USER, session_id=session_id, new_message=message)]


def _stored_events(session_id: str) -> list[Event]:
    """The rows as stored, opened with the session's key."""
    sealer = sealing.session_sealer(APP, USER, session_id)
    rows = SessionEvent.objects.filter(agent_session__session_id=session_id).order_by("pk")
    return [
        Event.model_validate_json(sealing.open_event(sealer, *row))
        for row in rows.values_list("seq", "event_id", "timestamp", "event_data")
    ]


def _stored_state(session_id: str) -> dict:
    row = AgentSession.objects.get(app_name=APP, owner_id=USER, session_id=session_id)
    return sealing.open_state(sealing.session_sealer(APP, USER, session_id), row.state, row.revision)


def _stored_user_state() -> dict:
    sealed = UserState.objects.get(app_name=APP, owner_id=USER).state
    return sealing.open_user_state(sealing.owner_sealer(APP, USER), sealed)


def _tool_turn_llm() -> ScriptedLlm:
    return ScriptedLlm(steps=[call_response("record_skill", {"skill": SKILL}), text_response(ANSWER)])


def _assert_tool_turn_stored(session_id: str, yielded: list[Event]) -> None:
    stored = _stored_events(session_id)
    user, call, response, answer = stored

    assert user.author == "user"
    assert user.content.parts[0].text == f"我會 {SKILL}"

    assert call.author == "coach"
    [function_call] = call.get_function_calls()
    assert (function_call.name, function_call.args) == ("record_skill", {"skill": SKILL})

    [function_response] = response.get_function_responses()
    assert function_response.name == "record_skill"
    assert function_response.id == function_call.id
    assert function_response.response == {"recorded": SKILL, "count": 1}
    assert response.actions.state_delta == {"skills": [SKILL], "user:last_skill": SKILL}

    assert answer.content.parts[0].text == ANSWER
    assert answer.is_final_response()

    # What the Runner yielded is exactly what was stored after the user's message.
    assert [event.id for event in yielded] == [event.id for event in stored[1:]]

    state = _stored_state(session_id)
    assert state["skills"] == [SKILL]
    assert "user:last_skill" not in state  # user: state lives in its own table
    assert _stored_user_state() == {"last_skill": SKILL}
    assert AgentSession.objects.get(session_id=session_id).revision == len(stored)


def test_tool_turn_stores_events_in_order_and_persists_tool_state():
    service = DjangoSessionService()
    session = async_to_sync(service.create_session)(app_name=APP, user_id=USER)
    llm = _tool_turn_llm()

    yielded = async_to_sync(_turn)(_runner(llm, service), session.id, f"我會 {SKILL}")

    _assert_tool_turn_stored(session.id, yielded)
    # The model's second call saw the tool's result.
    assert len(llm.requests) == 2
    last_part = llm.requests[1].contents[-1].parts[0]
    assert last_part.function_response.response == {"recorded": SKILL, "count": 1}

    reloaded = async_to_sync(service.get_session)(app_name=APP, user_id=USER, session_id=session.id)
    assert reloaded.events == _stored_events(session.id)
    assert reloaded.state["skills"] == [SKILL]
    assert reloaded.state["user:last_skill"] == SKILL


def test_second_turn_reloads_the_session_and_sees_the_first():
    """The Runner reloads the session each turn: no stale-session error, full history sent."""
    service = DjangoSessionService()
    session = async_to_sync(service.create_session)(app_name=APP, user_id=USER)
    llm = ScriptedLlm(
        steps=[
            call_response("record_skill", {"skill": SKILL}),
            text_response(ANSWER),
            call_response("record_skill", {"skill": "SQL"}),
            text_response("也記錄了 SQL。"),
        ]
    )
    runner = _runner(llm, service)

    async_to_sync(_turn)(runner, session.id, f"我會 {SKILL}")
    async_to_sync(_turn)(runner, session.id, "還有 SQL")

    stored = _stored_events(session.id)
    assert len(stored) == 8
    assert [e.content.parts[0].text for e in stored if e.author == "user"] == [f"我會 {SKILL}", "還有 SQL"]
    assert _stored_state(session.id)["skills"] == [SKILL, "SQL"]
    # The third model call (first of turn two) was sent the whole first turn.
    third_request_texts = [part.text for content in llm.requests[2].contents for part in content.parts if part.text]
    assert ANSWER in third_request_texts
    assert "還有 SQL" in third_request_texts


def test_turn_inside_a_running_event_loop_raises_no_synchronous_only_error():
    """Runs the whole turn under asyncio.run in a worker thread, as an ASGI server would."""
    outcome: dict = {}

    async def main() -> None:
        try:
            # Control: Django's async-safety guard is armed in this context.
            with pytest.raises(SynchronousOnlyOperation):
                AgentSession.objects.count()
            # A new thread starts with an empty context: the turn enters the
            # token's context itself, as an ASGI request would.
            with token_context(TOKEN):
                service = DjangoSessionService()
                session = await service.create_session(app_name=APP, user_id=USER)
                outcome["session_id"] = session.id
                outcome["yielded"] = await _turn(_runner(_tool_turn_llm(), service), session.id, f"我會 {SKILL}")
                reloaded = await service.get_session(app_name=APP, user_id=USER, session_id=session.id)
                outcome["reloaded_count"] = len(reloaded.events)
                outcome["listed"] = [s.id for s in (await service.list_sessions(app_name=APP)).sessions]
        finally:
            # Close the connections sync_to_async opened in its worker thread.
            await sync_to_async(connections.close_all)()

    def in_thread() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:  # re-raised on the test's thread below
            outcome["error"] = exc

    worker = threading.Thread(target=in_thread)
    worker.start()
    # A turn takes well under a second; a hung one fails here, not at a time limit (and under
    # mutmut, where a mutant of the write gate hangs it, this wait is what such a kill costs).
    worker.join(timeout=8)

    assert not worker.is_alive(), "the turn did not finish"
    if "error" in outcome:
        raise outcome["error"]
    _assert_tool_turn_stored(outcome["session_id"], outcome["yielded"])
    assert outcome["reloaded_count"] == 4
    assert outcome["listed"] == [outcome["session_id"]]
