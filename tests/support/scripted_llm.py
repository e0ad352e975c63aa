"""A scripted stand-in for a real LLM, so tests never touch the network.

Each call to the model consumes the next "step": an LlmResponse is yielded (a list of them, one
after the other: a streamed answer), an Exception instance is raised. Every LlmRequest is recorded in `requests`
so tests can inspect exactly what ADK sent (system instruction, contents).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from pydantic import Field


def _usage(prompt_tokens: int | None, output_tokens: int | None):
    # Token counts are optional; without them ADK logs a harmless
    # "Skipping missing token usage metadata" warning per model call.
    if prompt_tokens is None and output_tokens is None:
        return None
    prompt, output = prompt_tokens or 0, output_tokens or 0
    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=prompt, candidates_token_count=output, total_token_count=prompt + output
    )


def text_response(text: str, *, prompt_tokens: int | None = None, output_tokens: int | None = None) -> LlmResponse:
    """A final model turn carrying plain text."""
    return LlmResponse(
        content=types.Content(role="model", parts=[types.Part(text=text)]),
        usage_metadata=_usage(prompt_tokens, output_tokens),
    )


def streamed_text_response(*chunks: str) -> list[LlmResponse]:
    """A final model turn whose text comes in `chunks` (partial responses), then whole, as a model
    streams it in ADK's SSE mode. (To a turn that does not stream, the same: ADK passes partial
    responses on only when streaming, and the whole one comes last.)"""
    pieces = [
        LlmResponse(content=types.Content(role="model", parts=[types.Part(text=chunk)]), partial=True)
        for chunk in chunks
    ]
    return [*pieces, text_response("".join(chunks))]


def call_response(
    name: str, args: dict[str, Any], *, prompt_tokens: int | None = None, output_tokens: int | None = None
) -> LlmResponse:
    """A model turn that asks ADK to run tool `name` with `args`."""
    part = types.Part(function_call=types.FunctionCall(name=name, args=args))
    return LlmResponse(
        content=types.Content(role="model", parts=[part]), usage_metadata=_usage(prompt_tokens, output_tokens)
    )


class ScriptedLlm(BaseLlm):
    model: str = "scripted"
    steps: list = Field(default_factory=list)
    # A plain field rather than a PrivateAttr so tests can read it directly;
    # ADK never serialises the model object.
    requests: list = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request)
        if not self.steps:
            raise AssertionError("ScriptedLlm ran out of steps")
        step = self.steps.pop(0)
        if isinstance(step, BaseException):
            raise step
        for response in step if isinstance(step, list) else [step]:
            yield response


USER_ID = "test-user"


class Harness:
    """A real ADK Runner over an in-memory session, for one conversation."""

    def __init__(self, agent, app_name: str = "resume_agent"):
        self.app_name = app_name
        self.service = InMemorySessionService()
        self.runner = Runner(app_name=app_name, agent=agent, session_service=self.service)
        self.session_id = ""

    async def start(self, state: dict) -> Harness:
        session = await self.service.create_session(app_name=self.app_name, user_id=USER_ID, state=state)
        self.session_id = session.id
        return self

    async def turn(self, text: str) -> list:
        return await run_turn(self.runner, USER_ID, self.session_id, text)

    async def state(self) -> dict:
        session = await self.service.get_session(app_name=self.app_name, user_id=USER_ID, session_id=self.session_id)
        return dict(session.state)


async def run_turn(runner, user_id: str, session_id: str, text: str) -> list:
    """Sends one user message through a real ADK Runner and returns its events."""
    message = types.Content(role="user", parts=[types.Part(text=text)])
    return [event async for event in runner.run_async(user_id=user_id, session_id=session_id, new_message=message)]


def function_calls(events: list) -> list[types.FunctionCall]:
    """Every function call the model made in `events`, in order."""
    return [p.function_call for e in events if e.content for p in (e.content.parts or []) if p.function_call]


def final_text(events: list) -> str:
    """Text of the last event that carries text (the agent's reply)."""
    for event in reversed(events):
        parts = (event.content.parts if event.content else None) or []
        texts = [p.text for p in parts if p.text]
        if texts:
            return "".join(texts)
    return ""
