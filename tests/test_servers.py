"""The service under real servers: gunicorn as `make run` starts it (its ASGI worker,
sessions_app/infra/supervisor.gunicorn_command) and uvicorn, another ASGI server.

This drives a whole flow through both, the turn awaited on the server's event loop.
"""

import httpx
import pytest

from tests.support.privacy import find_in_text, fixture_markers, fixture_resume
from tests.support.servers import free_port, migrated_env, server_commands, start_server

pytestmark = pytest.mark.slow
SERVERS = server_commands(workers=2)


@pytest.fixture(params=sorted(SERVERS))
def server(request, tmp_path):
    env = migrated_env(tmp_path, DJANGO_LOG_LEVEL="DEBUG")
    port = free_port()
    command = SERVERS[request.param](port)
    log_path = tmp_path / "server.log"
    process, base = start_server(command, env, log_path, port)
    try:
        yield base, log_path
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_whole_flow_under_a_real_server(server):
    base, log_path = server
    with httpx.Client(base_url=base, timeout=30) as client:
        created = client.post("/agent/sessions", json={"resume_text": fixture_resume()})
        assert created.status_code == 201
        session_id, token = created.json()["session_id"], created.json()["token"]
        headers = {"X-Session-Token": token}
        for message in ("請幫我規劃求職", "Focus on remote roles"):
            turn = client.post(f"/agent/sessions/{session_id}/messages", json={"message": message}, headers=headers)
            assert turn.status_code == 200, turn.text
            assert "林語晴" in turn.json()["reply"]
        assert client.get(f"/agent/sessions/{session_id}", headers=headers).json()["plan_versions"] == 2
        assert client.delete(f"/agent/sessions/{session_id}", headers=headers).status_code == 204
        assert client.get(f"/agent/sessions/{session_id}", headers=headers).status_code == 404
    log = log_path.read_text(encoding="utf-8", errors="replace")
    assert "offline" in log and "agent model:" in log
    # Even at DEBUG, the server's log holds no resume text and no token.
    assert find_in_text(log, fixture_markers() + [token]) == []
