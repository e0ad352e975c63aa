"""The Runner is handed to each turn: built once per process by the setting AGENT_RUNNER_FACTORY,
and built again only when that setting changes."""

import sys

import pytest
from django.test import override_settings

from sessions_app.turns.runner import build_runner, process_runner
from tests.support.scripted_llm import ScriptedLlm, text_response

pytestmark = pytest.mark.backend_independent


def test_the_process_builds_one_runner():
    assert process_runner() is process_runner()


def test_the_setting_injects_the_runner_and_the_default_comes_back_afterwards():
    before = process_runner()
    mine, inner = build_runner(ScriptedLlm(steps=[])), build_runner(ScriptedLlm(steps=[]))
    with override_settings(AGENT_RUNNER_FACTORY=lambda: mine):
        assert process_runner() is mine
        with override_settings(AGENT_RUNNER_FACTORY=lambda: inner):
            assert process_runner() is inner
        assert process_runner() is mine
    # The default factory's again, built anew (the one before was dropped with the setting's change).
    after = process_runner()
    assert after not in (before, mine, inner) and after is process_runner()


def test_another_settings_change_keeps_the_runner():
    runner = process_runner()
    with override_settings(AGENT_TURN_TIMEOUT_SECONDS=1.0):
        assert process_runner() is runner


def scripted_runner():
    """A factory named by its dotted path, as a settings module names one."""
    return build_runner(ScriptedLlm(steps=[]))


def test_the_setting_may_name_the_factory_by_its_dotted_path():
    with override_settings(AGENT_RUNNER_FACTORY="tests.test_runner.scripted_runner"):
        assert isinstance(process_runner().agent.model, ScriptedLlm)
    assert not isinstance(process_runner().agent.model, ScriptedLlm)


@pytest.mark.django_db
def test_a_turn_runs_on_the_runner_it_was_given(api, new_session, turns_on):
    """The view hands the process's Runner to the turn (`turns.service.turn_slot`): a test's model answers."""
    model = ScriptedLlm(steps=[text_response("Hello from the test's own model.")])
    turns_on(model)
    session_id, token = new_session()
    response = api.post(
        f"/agent/sessions/{session_id}/messages", {"message": "hi"}, format="json", HTTP_X_SESSION_TOKEN=token
    )
    assert response.status_code == 200
    assert response.json()["reply"] == "Hello from the test's own model."


class _ImportsSeen:
    """A finder that answers nothing and notes which modules Python looked for (sys.meta_path)."""

    def __init__(self):
        self.names = []

    def find_spec(self, name, path=None, target=None):
        self.names.append(name)
        return None


@pytest.mark.django_db
def test_a_turn_does_not_retry_adks_optional_a2a_import(api, new_session, turns_on, monkeypatch):
    """Without the `a2a` package ADK's import of its remote agent fails each time it builds a node,
    and a failed import runs again in full (5 % of a loaded server's CPU); agent/agent.py makes it
    fail at once. Seen failing with that line removed (the import looked for on every turn)."""
    turns_on(ScriptedLlm(steps=[text_response("One."), text_response("Two.")]))
    session_id, token = new_session()
    seen = _ImportsSeen()
    monkeypatch.setattr(sys, "meta_path", [seen, *sys.meta_path])
    for message in ("hi", "again"):
        response = api.post(
            f"/agent/sessions/{session_id}/messages", {"message": message}, format="json", HTTP_X_SESSION_TOKEN=token
        )
        assert response.status_code == 200
    assert "google.adk.agents.remote_a2a_agent" not in seen.names
