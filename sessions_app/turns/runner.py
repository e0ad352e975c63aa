"""The process's ADK Runner: the agent, on the model the settings choose (`agent.model_selection.select_model`).

It holds no per-session state, so a process needs one. It is built on first use, not at
start-up: the processes that never run a turn (the `serve` supervisor, the django-q2 cluster,
management commands) never import ADK. The view hands it to each turn
(`turns.service.turn_slot(process_runner(), ...)`); a turn runs a copy of it on its own session buffer,
and keeps the Runner it started with until it ends.

What builds it is the setting `AGENT_RUNNER_FACTORY`: a callable taking no argument, or its
dotted path (by default this module's `build_runner`). When that setting changes (Django's
`override_settings`, pytest-django's `settings`), the Runner built is dropped and the next turn
builds one with the new factory: a test runs turns on a model of its own with
`settings.AGENT_RUNNER_FACTORY = lambda: build_runner(model)`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string
from google.adk.models import BaseLlm
from google.adk.runners import Runner

from agent import APP_NAME, model_retries
from agent.agent import build_agent
from sessions_app.adk.service import DjangoSessionService
from sessions_app.infra import metrics

_lock = threading.Lock()


def _count_retry(status: int) -> None:
    metrics.MODEL_RETRIES.labels(str(status)).inc()


for _status in sorted(model_retries.RETRIED_STATUSES):
    metrics.MODEL_RETRIES.labels(str(_status))
model_retries.retry_listeners.append(_count_retry)
_runner: Runner | None = None


def build_runner(model: str | BaseLlm | None = None) -> Runner:
    """A Runner of the resume agent on `model` (None: the one the settings choose). No memory and
    no artifact service: ADK's keep conversations and have no delete (docs/DATA_INVENTORY.md)."""
    return Runner(app_name=APP_NAME, agent=build_agent(model), session_service=DjangoSessionService())


def runner_factory() -> Callable[[], Runner]:
    """What `AGENT_RUNNER_FACTORY` names: the callable itself, or the one at its dotted path."""
    factory = settings.AGENT_RUNNER_FACTORY
    return import_string(factory) if isinstance(factory, str) else factory


def process_runner() -> Runner:
    """This process's Runner, built the first time it is asked for (after the factory changed,
    the first time since)."""
    global _runner
    with _lock:
        if _runner is None:
            _runner = runner_factory()()
        return _runner


@receiver(setting_changed)
def _drop_the_runner(*, setting: str, **kwargs) -> None:
    """A new `AGENT_RUNNER_FACTORY`: the Runner the old one built is not this process's any more."""
    global _runner
    if setting == "AGENT_RUNNER_FACTORY":
        with _lock:
            _runner = None
