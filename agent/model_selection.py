"""Chooses the model: real Gemini when credentials exist, else the offline model.

With credentials, ADK's Gemini class retrying as agent.model_retries says
(google-genai reads GOOGLE_API_KEY or the Vertex AI settings itself). Nothing
here reads or stores the key's value beyond "is it set".
"""

from __future__ import annotations

import os

import httpx
from google.adk.models.base_llm import BaseLlm
from google.genai import types

from agent.environment import OFFLINE, model_service
from agent.model_retries import RetryingGemini
from agent.offline import OfflineResumeModel

DEFAULT_MODEL = "gemini-2.5-flash"
# A server process runs at most AGENT_MAX_TURNS_IN_FLIGHT turns at once (config/settings.py), each
# waiting on one model call at a time: the model client keeps as many connections, so no turn
# waits for a connection another holds (httpx's default is 100).
DEFAULT_TURNS_IN_FLIGHT = 256


def _connection_pool() -> types.HttpOptions:
    size = int(os.environ.get("AGENT_MAX_TURNS_IN_FLIGHT", "").strip() or DEFAULT_TURNS_IN_FLIGHT)
    limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
    return types.HttpOptions(async_client_args={"limits": limits})


def select_model() -> BaseLlm:
    """With credentials, Gemini (AGENT_MODEL, default gemini-2.5-flash) retrying a failed call
    (agent.model_retries): AGENT_MODEL_ATTEMPTS attempts in all (default 3; 1: none), waiting what
    the model asks, else AGENT_MODEL_RETRY_DELAY_SECONDS (default 1) doubled each time, at most 8 s,
    with jitter, within the turn's deadline. Else OfflineResumeModel()."""
    if model_service() != OFFLINE:
        name = os.environ.get("AGENT_MODEL", "").strip() or DEFAULT_MODEL
        attempts = int(os.environ.get("AGENT_MODEL_ATTEMPTS", "").strip() or 3)
        delay = float(os.environ.get("AGENT_MODEL_RETRY_DELAY_SECONDS", "").strip() or 1)
        return RetryingGemini(
            model=name,
            attempts=max(attempts, 1),
            initial_delay=delay,
            client_kwargs={"http_options": _connection_pool()},
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
