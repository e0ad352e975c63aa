"""Chooses the model: real Gemini when credentials exist, else the offline model.

A model *name* string is handed to LlmAgent, which resolves it to ADK's
Gemini class (google-genai reads GOOGLE_API_KEY or the Vertex AI settings
itself). Nothing here reads or stores the key's value beyond "is it set".
"""

from __future__ import annotations

import os

from google.adk.models.base_llm import BaseLlm

from .environment import is_truthy
from .offline_model import OfflineResumeModel

DEFAULT_MODEL = "gemini-2.5-flash"


def _has_credentials() -> bool:
    if os.environ.get("GOOGLE_API_KEY", "").strip():
        return True
    vertex = is_truthy(os.environ.get("GOOGLE_GENAI_USE_VERTEXAI", ""))
    return vertex and bool(os.environ.get("GOOGLE_CLOUD_PROJECT", "").strip())


def select_model() -> str | BaseLlm:
    """AGENT_MODEL (default gemini-2.5-flash) with credentials, else OfflineResumeModel()."""
    if _has_credentials():
        return os.environ.get("AGENT_MODEL", "").strip() or DEFAULT_MODEL
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
