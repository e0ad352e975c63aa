"""A streamed turn under the real servers (gunicorn's ASGI worker as `make run` serves, and uvicorn),
on this test's database, with the model on the local Gemini double: curl sees each event as it
happens, and a client that hangs up mid-turn leaves the session exactly as it was."""

import http.client
import json
import subprocess

import httpx
import pytest

from sessions_app.models import AgentSession, SessionEvent
from sessions_app.storage import turn_lock
from tests.support.gemini_double import call_answer, text_answer
from tests.support.servers import free_port, server_commands, service_env, start_server
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# How long a write that must not come is watched for: a turn here stores its answer well within it.
WRITE_WINDOW_SECONDS = 0.5
SERVERS = server_commands(workers=1)


@pytest.fixture(params=sorted(SERVERS))
def server(request, tmp_path, gemini_double):
    port = free_port()
    env = service_env(
        tmp_path, **gemini_double.environment(), STREAM_HEARTBEAT_SECONDS="0.1", AGENT_SESSION_CREATE_RATE="1000/hour"
    )
    process, base = start_server(SERVERS[request.param](port), env, tmp_path / "server.log", port)
    yield base
    process.terminate()
    process.wait(timeout=30)


def _new_session(base: str) -> tuple[str, str]:
    from tests.support.privacy import fixture_resume

    created = httpx.post(f"{base}/agent/sessions", json={"resume_text": fixture_resume()}, timeout=30).json()
    return created["session_id"], created["token"]


def test_curl_sees_the_progress_then_the_reply(server, gemini_double):
    session_id, token = _new_session(server)
    gemini_double.answer(
        call_answer("save_plan", {"plan": "1. Apply to platform teams."}), text_answer("Hi 林語晴, plan v1 is saved.")
    )
    curl = [
        "curl", "-sSN", "-H", "Accept: text/event-stream", "-H", f"X-Session-Token: {token}",
        "-H", "Content-Type: application/json", "-d", json.dumps({"message": "Please draft my plan"}),
        f"{server}/agent/sessions/{session_id}/messages",
    ]  # fmt: skip
    out = subprocess.run(curl, capture_output=True, text=True, timeout=60, check=True).stdout
    names = [line.removeprefix("event: ") for line in out.splitlines() if line.startswith("event: ")]
    assert names[0] == "progress" and names[-1] == "reply" and names.count("reply") == 1
    assert '"stage": "saving_plan", "version": 1' in out
    reply = json.loads(out.rstrip().splitlines()[-1].removeprefix("data: "))
    assert reply["reply"] == "Hi 林語晴, plan v1 is saved."


def _stored_events() -> list:
    return list(SessionEvent.objects.order_by("pk").values_list("pk", "event_data"))


def test_a_client_that_hangs_up_mid_turn_leaves_the_session_as_it_was(server, gemini_double):
    session_id, token = _new_session(server)
    headers = {"X-Session-Token": token, "Content-Type": "application/json"}
    first = httpx.post(f"{server}/agent/sessions/{session_id}/messages", json={"message": "hello"}, headers=headers)
    assert first.status_code == 200
    stored = _stored_events()
    host, port = server.removeprefix("http://").split(":")
    gemini_double.answer(call_answer("save_plan", {"plan": "1. Apply to platform teams."}), text_answer("Saved v1."))
    with gemini_double.hold() as held:
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        body = json.dumps({"message": "Please draft my plan"})
        connection.request(
            "POST", f"/agent/sessions/{session_id}/messages", body, {**headers, "Accept": "text/event-stream"}
        )
        response = connection.getresponse()
        assert response.status == 200
        assert held.arrived.wait(15)  # the model is working on the turn
        seen = b""
        while b'"stage": "thinking"' not in seen:
            seen += response.read1(4096)
        connection.sock.shutdown(2)  # the client hangs up mid-turn
        connection.close()
        stopped = wait_until(
            lambda: not turn_lock.turn_is_locked(AgentSession.objects.get(session_id=session_id).pk),
            timeout=15,
            interval=0.1,
        )
        assert stopped, "the turn of a client that hung up was never stopped"
    # The model answers now (the hold let go): nothing may be stored from it. Watched for
    # WRITE_WINDOW_SECONDS once its answer is out: a write of the stopped turn's would come within it.
    wait_until(lambda: gemini_double.answered == gemini_double.calls, timeout=15)
    wait_until(lambda: _stored_events() != stored, timeout=WRITE_WINDOW_SECONDS)
    assert list(SessionEvent.objects.order_by("pk").values_list("pk", "event_data")) == stored
    again = httpx.post(f"{server}/agent/sessions/{session_id}/messages", json={"message": "again"}, headers=headers)
    assert again.status_code == 200
    messages = httpx.get(f"{server}/agent/sessions/{session_id}/messages", headers=headers).json()["messages"]
    assert [m["text"] for m in messages if m["role"] == "user"] == ["hello", "again"]
