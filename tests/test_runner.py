"""The Runner is handed to each turn: built once per process, replaced only inside `using_runner`."""

import pytest

from sessions_app.runtime.runner import build_runner, process_runner, using_runner
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
    """The view hands the process's Runner to the turn (`turns.start_turn`): a test's model answers."""
    model = ScriptedLlm(steps=[text_response("Hello from the test's own model.")])
    install_runner(build_runner(model))
    session_id, token = new_session()
    response = api.post(
        f"/agent/sessions/{session_id}/messages", {"message": "hi"}, format="json", HTTP_X_SESSION_TOKEN=token
    )
    assert response.status_code == 200
    assert response.json()["reply"] == "Hello from the test's own model."
