"""Resume-analysis agent on Google ADK. Entry point: build_agent()."""

from .agent import APP_NAME, build_agent
from .model_selection import is_offline, model_label, select_model

__all__ = ["APP_NAME", "build_agent", "is_offline", "model_label", "select_model"]
