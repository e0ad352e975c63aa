"""The process's ADK Runner: the agent, on the model the settings choose (`agent.model_selection.select_model`).

It holds no per-session state, so a process needs one. It is built on first use, not at
start-up: the processes that never run a turn (the `serve` supervisor, the django-q2 cluster,
management commands) never import ADK. The view hands it to each turn
(`turns.service.turn_slot(process_runner(), ...)`); a turn runs a copy of it on its own session buffer,
and keeps the Runner it started with until it ends.

A test runs turns on a model of its own inside `using_runner(build_runner(model))`
(tests/conftest.py, `install_runner`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from google.adk.models import BaseLlm
from google.adk.runners import Runner

from agent import APP_NAME
from agent.agent import build_agent
from sessions_app.adk.service import DjangoSessionService

_lock = threading.Lock()
_runner: Runner | None = None


def build_runner(model: str | BaseLlm | None = None) -> Runner:
    """A Runner of the resume agent on `model` (None: the one the settings choose). No memory and
    no artifact service: ADK's keep conversations and have no delete (docs/DATA_INVENTORY.md)."""
    return Runner(app_name=APP_NAME, agent=build_agent(model), session_service=DjangoSessionService())


def process_runner() -> Runner:
    """This process's Runner, built the first time it is asked for."""
    global _runner
    with _lock:
        if _runner is None:
            _runner = build_runner()
        return _runner


@contextmanager
def using_runner(runner: Runner) -> Iterator[Runner]:
    """`process_runner()` is `runner` inside the block, and what it was before after it."""
    global _runner
    with _lock:
        previous, _runner = _runner, runner
    try:
        yield runner
    finally:
        with _lock:
            _runner = previous
