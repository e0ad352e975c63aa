"""Places a resume could go that this project keeps closed (docs/DATA_INVENTORY.md)."""

import pytest
from django.apps import apps
from django.conf import settings

from sessions_app.turns.runner import process_runner

pytestmark = pytest.mark.backend_independent


def test_runner_has_no_memory_or_artifact_service():
    # ADK's memory services keep conversations and have no delete; artifacts
    # would be another copy. The Runner gets neither.
    runner = process_runner()
    assert runner.memory_service is None
    assert runner.artifact_service is None


def test_no_history_or_audit_library_copies_session_rows():
    # django-simple-history, django-auditlog, django-reversion and the like
    # copy whole rows on delete; none may be installed.
    copying_apps = {"simple_history", "auditlog", "reversion", "pghistory", "easyaudit"}
    assert copying_apps.isdisjoint({config.name for config in apps.get_app_configs()})


def test_task_history_is_small_and_failures_are_not_retried_forever():
    assert 0 < settings.Q_CLUSTER["save_limit"] <= 100
    assert settings.Q_CLUSTER["max_attempts"] == 1
