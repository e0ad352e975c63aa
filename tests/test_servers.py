"""The service under real servers: gunicorn as `make run` starts it (its ASGI worker,
sessions_app/infra/supervisor.gunicorn_command) and uvicorn, another ASGI server.

This drives a whole flow through both, the turn awaited on the server's event loop.
"""

import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from sessions_app.infra.supervisor import gunicorn_command
from tests.support.privacy import find_in_text, fixture_markers, fixture_resume
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SERVERS = {
    "make-run-gunicorn-asgi": lambda port: gunicorn_command(sys.executable, f"127.0.0.1:{port}", workers=2),
    "uvicorn-asgi": lambda port: [
        str(BIN / "uvicorn"), "config.asgi:application", "--workers", "1", "--host", "127.0.0.1", "--port", str(port)
    ],
}  # fmt: skip


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def database_url() -> str:
    """The URL of the database this test uses, for a process of the service started by it."""
    from django.db import connection

    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def service_env(tmp_path: Path, **extra: str) -> dict:
    """The environment of a service process started by a test: on this test's database, with a
    var/ of its own under `tmp_path`, no model key and nothing of pytest's."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "PYTEST", "DJANGO_"))}
    return {
        **inherited,
        "DATABASE_URL": database_url(),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        # The test's own key: what the test signs (django-q2's queued tasks) the service reads.
        "DJANGO_SECRET_KEY": settings.SECRET_KEY,
        "DJANGO_VAR_DIR": str(tmp_path / "var"),
        "PYTHONPATH": str(ROOT),
        **extra,
    }


def start_server(command: list[str], env: dict, log_path: Path, port: int) -> tuple[subprocess.Popen, str]:
    """Starts `command` and waits until it answers HTTP on `port`; fails the test if it doesn't."""
    return wait_until_serving(launch(command, env, log_path), command, log_path, port)


def launch(command: list[str], env: dict, log_path: Path) -> subprocess.Popen:
    with open(log_path, "wb") as log:
        # A process group of its own, so a test can kill the server with its workers.
        return subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )


def wait_until_serving(process: subprocess.Popen, command: list[str], log_path: Path, port: int):
    base = f"http://127.0.0.1:{port}"

    def answering() -> bool:
        try:
            httpx.get(f"{base}/api/schema/", timeout=1)
            return True
        except httpx.TransportError:
            return False

    if wait_until(answering, timeout=30, interval=0.2):
        return process, base
    process.kill()
    process.wait()
    pytest.fail(f"{command[0]} did not start:\n{log_path.read_text()}")


def migrated_env(tmp_path: Path, **settings: str) -> dict:
    """The environment of a server process of the service on a fresh SQLite database under
    `tmp_path`, migrated, offline model, creations unthrottled; `settings` added on top."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "PYTEST"))},
        "DATABASE_URL": f"sqlite:///{tmp_path / 'server.db'}",
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_SECRET_KEY": "server-test-key",
        "PYTHONPATH": str(ROOT),
        "DJANGO_CACHE_DIR": str(tmp_path / "cache"),
        "AGENT_SESSION_CREATE_RATE": "10000/hour",
        **settings,
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    return env


@pytest.fixture(params=sorted(SERVERS))
def server(request, tmp_path):
    env = migrated_env(tmp_path, DJANGO_LOG_LEVEL="DEBUG")
    port = _free_port()
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
