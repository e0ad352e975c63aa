"""The Runner is handed to each turn: built once per process, replaced only inside `using_runner`."""

import sys

import pytest

from sessions_app.turns.runner import build_runner, process_runner, using_runner
from tests.scripted_llm import ScriptedLlm, text_response

pytestmark = pytest.mark.backend_independent


def test_the_process_builds_one_runner():
    assert process_runner() is process_runner()


def test_using_runner_puts_the_runner_back_afterwards():
    before = process_runner()
    mine, inner = build_runner(ScriptedLlm(steps=[])), build_runner(ScriptedLlm(steps=[]))
    with using_runner(mine):
        assert process_runner() is mine
        with using_runner(inner):
            assert process_runner() is inner
        assert process_runner() is mine
    assert process_runner() is before


@pytest.mark.django_db
def test_a_turn_runs_on_the_runner_it_was_given(api, new_session, install_runner):
    """The view hands the process's Runner to the turn (`turns.service.turn_slot`): a test's model answers."""
    model = ScriptedLlm(steps=[text_response("Hello from the test's own model.")])
    install_runner(build_runner(model))
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
def test_a_turn_does_not_retry_adks_optional_a2a_import(api, new_session, install_runner, monkeypatch):
    """Without the `a2a` package ADK's import of its remote agent fails each time it builds a node,
    and a failed import runs again in full (5 % of a loaded server's CPU); agent/agent.py makes it
    fail at once. Seen failing with that line removed (the import looked for on every turn)."""
    install_runner(build_runner(ScriptedLlm(steps=[text_response("One."), text_response("Two.")])))
    session_id, token = new_session()
    seen = _ImportsSeen()
    monkeypatch.setattr(sys, "meta_path", [seen, *sys.meta_path])
    for message in ("hi", "again"):
        response = api.post(
            f"/agent/sessions/{session_id}/messages", {"message": message}, format="json", HTTP_X_SESSION_TOKEN=token
        )
        assert response.status_code == 200
    assert "google.adk.agents.remote_a2a_agent" not in seen.names
