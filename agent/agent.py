"""The resume agent: one LlmAgent with three tools and a state-driven instruction."""

from __future__ import annotations

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm

from agent import APP_NAME  # noqa: F401  (the package's, re-exported here as before)
from agent.guards import guard_model_response, guard_tool_call
from agent.model_selection import select_model
from agent.prompt import instruction_provider
from agent.tools import flag_suspicious_text, save_plan, verify_claims


def build_agent(model: str | BaseLlm | None = None) -> LlmAgent:
    """A fresh agent; `model` defaults to select_model() (Gemini or offline)."""
    return LlmAgent(
        name="resume_agent",
        model=model if model is not None else select_model(),
        description="Career coach that analyses one resume and keeps a versioned job-search plan.",
        # A callable, not a template string: ADK would otherwise substitute
        # {braces} found in the resume text (see prompt.py).
        instruction=instruction_provider,
        tools=[verify_claims, save_plan, flag_suspicious_text],
        # The guards (agent/guards.py) hold for every model: flagged resume text never
        # reaches a reply, a tool argument or a saved plan.
        after_model_callback=guard_model_response,
        before_tool_callback=guard_tool_call,
    )
