"""The resume agent: one LlmAgent with three tools and a state-driven instruction."""

from __future__ import annotations

import importlib.util
import sys

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm

from agent import APP_NAME  # noqa: F401  (the package's, re-exported here as before)
from agent.guards import guard_model_response, guard_tool_call
from agent.model_selection import select_model
from agent.prompt import instruction_provider
from agent.tools import flag_suspicious_text, save_plan, verify_claims

# ADK tries `google.adk.agents.remote_a2a_agent` (an optional extra, google-adk[a2a]) each time
# it builds a node, several times a turn; without the `a2a` package that import fails every
# time, and a failed import is attempted again in full: 5 % of a server's CPU at 128 clients
# (py-spy, docs/SERVING.md). Where `a2a` is absent, None in sys.modules makes the import fail
# at once, as Python's import system documents. This agent has no remote agents.
_OPTIONAL_A2A = "google.adk.agents.remote_a2a_agent"
if importlib.util.find_spec("a2a") is None:
    sys.modules.setdefault(_OPTIONAL_A2A, None)


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
