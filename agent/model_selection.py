"""Chooses the model: real Gemini when credentials exist, else the offline model.

With credentials, ADK's Gemini class retrying as agent.model_retries says
(google-genai reads GOOGLE_API_KEY or the Vertex AI settings itself). Nothing
here reads or stores the key's value beyond "is it set".
"""

from __future__ import annotations

import httpx
from google.adk.models.base_llm import BaseLlm
from google.genai import types

from agent.config import AgentConfig
from agent.environment import OFFLINE, model_service
from agent.model_retries import RetryingGemini
from agent.offline import OfflineResumeModel


def _connection_pool(size: int) -> types.HttpOptions:
    """As many connections as turns in flight, each waiting on one model call at a time."""
    limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
    return types.HttpOptions(async_client_args={"limits": limits})


def select_model() -> BaseLlm:
    """With credentials, Gemini (AGENT_MODEL, default gemini-2.5-flash) retrying a failed call
    (agent.model_retries): AGENT_MODEL_ATTEMPTS attempts in all (default 3; 1: none), waiting what
    the model asks, else AGENT_MODEL_RETRY_DELAY_SECONDS (default 1) doubled each time, at most 8 s,
    with jitter, within the turn's deadline. Else OfflineResumeModel()."""
    if model_service() != OFFLINE:
        config = AgentConfig.from_env()
        return RetryingGemini(
            model=config.model,
            attempts=config.model_attempts,
            initial_delay=config.model_retry_delay_seconds,
            client_kwargs={"http_options": _connection_pool(config.max_turns_in_flight)},
        )
    return OfflineResumeModel()


def is_offline(model: str | BaseLlm) -> bool:
    return isinstance(model, OfflineResumeModel)


def model_label(model: str | BaseLlm) -> str:
    """Human-readable model name for the UI and logs."""
    if is_offline(model):
        return f"{model.model} (offline: no GOOGLE_API_KEY)"
    return model.model if isinstance(model, BaseLlm) else str(model)


def log_model_choice(logger) -> None:
    """The one start-up line that says which model answers (never the key)."""
    model = select_model()
    if is_offline(model):
        logger.warning(
            "agent model: %s. No GOOGLE_API_KEY (or Vertex AI settings) found: replies come from"
            " the deterministic offline model, not from Gemini.",
            model_label(model),
        )
    else:
        logger.info("agent model: %s (Gemini via google-genai)", model_label(model))
