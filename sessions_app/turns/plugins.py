"""What a turn adds to the Runner it was given: its own session buffer and its plugins (the
model-error recorder, turns/failures.py; the progress and the text a streamed turn shows)."""

from __future__ import annotations

from collections.abc import Callable

from google.adk.plugins import BasePlugin
from google.adk.runners import Runner
from google.adk.sessions import BaseSessionService

from agent.drafts import Draft
from agent.guards import taint_of
from agent.plans import plan_count
from agent.tools import MAX_CLAIMS
from sessions_app.turns.stages import Stage


class TurnProgress(BasePlugin):
    """Reports what a running turn is doing, for a streamed turn to show: each model call, the
    claims the model checks (with their count), the plan version it saves. Stages and counts
    only, never text (the reply's text as it is written: TurnText)."""

    def __init__(self, report: Callable[[dict], None]):
        super().__init__(name="resume_agent_turn_progress")
        self.report = report
        self.model_calls = 0

    async def before_model_callback(self, *, callback_context, llm_request):
        self.model_calls += 1
        self.report({"stage": Stage.THINKING, "model_call": self.model_calls})
        return None

    async def before_tool_callback(self, *, tool, tool_args, tool_context):
        if tool.name == "verify_claims":
            claims = tool_args.get("claims")
            count = min(len(claims), MAX_CLAIMS) if isinstance(claims, list) else 0
            self.report({"stage": Stage.CHECKING_CLAIMS, "count": count})
        elif tool.name == "save_plan":
            self.report({"stage": Stage.SAVING_PLAN, "version": plan_count(tool_context.state) + 1})
        return None


class TurnText(BasePlugin):
    """Reports the reply's text as the model writes it, for a streamed turn to show (ADK's SSE
    streaming mode gives each model call's text in pieces, `partial` responses): only what passes
    the guards' check (agent/drafts.py), each model call's draft on its own (`model_call`). It
    reads the model's pieces before the agent's own callbacks (plugins run first) and changes
    nothing: the turn's answer is still the whole, guarded and verified reply."""

    def __init__(self, report: Callable[[dict], None]):
        super().__init__(name="resume_agent_turn_text")
        self.report = report
        self.model_calls = 0
        self.draft: Draft | None = None

    async def before_model_callback(self, *, callback_context, llm_request):
        self.model_calls += 1
        self.draft = Draft(taint_of(callback_context))
        return None

    async def after_model_callback(self, *, callback_context, llm_response):
        content = llm_response.content
        if not llm_response.partial or self.draft is None or content is None:
            return None  # the whole response: the guards and the verification take it from here
        chunk = "".join(part.text for part in content.parts or [] if part.text and not part.thought)
        shown = self.draft.add(chunk)
        if shown:
            self.report({"text": shown, "model_call": self.model_calls})
        return None


def turn_runner(base: Runner, buffer: BaseSessionService, plugins: list[BasePlugin]) -> Runner:
    """The Runner the turn was given (agent, plugins, services) with this turn's buffer as its
    session service and this turn's plugins added."""
    return Runner(
        app=base.app.model_copy(update={"plugins": [*base.app.plugins, *plugins]}),
        app_name=base.app_name,
        session_service=buffer,
        artifact_service=base.artifact_service,
        memory_service=base.memory_service,
        credential_service=base.credential_service,
    )
