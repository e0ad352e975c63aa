"""The agent's settings, read from the environment here and nowhere else in the agent (which
knows no Django): `AgentConfig.from_env()`, read when a model is chosen or plans are saved, so
a changed variable counts from the next turn. The service's settings take
AGENT_MAX_TURNS_IN_FLIGHT from here too (config/env.py). Each variable: docs/OPERATIONS.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

DEFAULT_MODEL = "gemini-2.5-flash"


def _read(environ: Mapping[str, str], name: str, parse: Callable[[str], object], kind: str, default):
    """`name`'s value parsed, `default` when it is unset or blank; a ValueError naming it when it does not parse."""
    value = environ.get(name, "").strip()
    if not value:
        return default
    try:
        return parse(value)
    except ValueError:
        raise ValueError(f"The environment variable {name} must be {kind}") from None


@dataclass(frozen=True)
class AgentConfig:
    # AGENT_MODEL: the Gemini model, when credentials choose Gemini.
    model: str = DEFAULT_MODEL
    # AGENT_MODEL_ATTEMPTS: tries of one model call in all (1: no retry); at least 1.
    model_attempts: int = 3
    # AGENT_MODEL_RETRY_DELAY_SECONDS: the first wait before a retry, doubled each time.
    model_retry_delay_seconds: float = 1.0
    # AGENT_MAX_TURNS_IN_FLIGHT: turns one server process runs at once; the model client keeps as
    # many connections, so no turn waits for one another holds (httpx's default is 100).
    max_turns_in_flight: int = 256
    # PLAN_MAX_VERSIONS: saved plan versions kept in a session's state; at least 1.
    plan_max_versions: int = 20

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> AgentConfig:
        return cls(
            model=environ.get("AGENT_MODEL", "").strip() or DEFAULT_MODEL,
            model_attempts=max(1, _read(environ, "AGENT_MODEL_ATTEMPTS", int, "an integer", cls.model_attempts)),
            model_retry_delay_seconds=_read(
                environ, "AGENT_MODEL_RETRY_DELAY_SECONDS", float, "a number", cls.model_retry_delay_seconds
            ),
            max_turns_in_flight=_read(environ, "AGENT_MAX_TURNS_IN_FLIGHT", int, "an integer", cls.max_turns_in_flight),
            plan_max_versions=max(1, _read(environ, "PLAN_MAX_VERSIONS", int, "an integer", cls.plan_max_versions)),
        )
