"""The service's processes as tests start them: their environment (on the test's database, or a
fresh migrated SQLite one), a free port, and waiting until a server answers."""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parent.parent.parent
BIN = Path(sys.executable).parent


def server_commands(workers: int) -> dict[str, Callable[[int], list[str]]]:
    """The ASGI servers a test runs the service under, by name: a function of the port each.
    gunicorn as `make run` starts it (its ASGI worker), with `workers` processes, and uvicorn."""
    from sessions_app.infra.supervisor import gunicorn_command

    uvicorn = [str(BIN / "uvicorn"), "config.asgi:application", "--workers", "1", "--host", "127.0.0.1", "--port"]
    return {
        "make-run-gunicorn-asgi": lambda port: gunicorn_command(sys.executable, f"127.0.0.1:{port}", workers=workers),
        "uvicorn-asgi": lambda port: [*uvicorn, str(port)],
    }


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
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


@functools.cache
def collected_static() -> str:
    """DJANGO_STATIC_ROOT of the servers tests start: the static files collected once per test process,
    as `make run` collects them (hashed names, their manifest, gzip copies); removed at exit."""
    root, var = tempfile.mkdtemp(prefix="collected-static-"), tempfile.mkdtemp(prefix="collectstatic-var-")
    for directory in (root, var):
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_"))},
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_SECRET_KEY": "collectstatic",
        "DJANGO_VAR_DIR": var,
        "DJANGO_STATIC_ROOT": root,
    }
    command = [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"]
    subprocess.run(command, cwd=ROOT, env=env, check=True)
    return root


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
        "DJANGO_STATIC_ROOT": collected_static(),
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


def answering(url: str, process: subprocess.Popen | None = None, log_path: Path | None = None) -> Callable[[], bool]:
    """A condition for `wait_until`: `url` answers HTTP, whatever its status. With `process`, one
    that has exited meanwhile fails the test at once, with `log_path`'s text."""

    def answers() -> bool:
        try:
            httpx.get(url, timeout=1)
            return True
        except httpx.TransportError:
            if process is not None:
                assert process.poll() is None, log_path.read_text() if log_path else process.args
            return False

    return answers


def wait_until_serving(process: subprocess.Popen, command: list[str], log_path: Path, port: int):
    """`process` (started with `command`, its output in `log_path`) once it answers HTTP on `port`,
    with its base URL; killed, and the test failed with its log, when it does not within 30 s."""
    base = f"http://127.0.0.1:{port}"
    if wait_until(answering(f"{base}/api/schema/"), timeout=30, interval=0.2):
        return process, base
    process.kill()
    process.wait()
    pytest.fail(f"{command[0]} did not start:\n{log_path.read_text()}")


PROCESS_OWN = ("GOOGLE_", "PYTEST", "PROMETHEUS_MULTIPROC_DIR", "RESUME_AGENT_SERVE_METRICS_READY")


def migrated_env(tmp_path: Path, database: Path | None = None, **settings: str) -> dict:
    """The environment of a server process of the service on a fresh SQLite database
    (`database`, by default server.db under `tmp_path`), migrated, offline model, creations
    unthrottled; `settings` added on top."""
    env = {
        # Not the test run's model key, nor a metrics directory or the serve command's restart marker
        # (each server sets its own).
        **{k: v for k, v in os.environ.items() if not k.startswith(PROCESS_OWN)},
        "DATABASE_URL": f"sqlite:///{database or tmp_path / 'server.db'}",
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_SECRET_KEY": "server-test-key",
        "PYTHONPATH": str(ROOT),
        "DJANGO_CACHE_DIR": str(tmp_path / "cache"),
        "DJANGO_STATIC_ROOT": collected_static(),
        "AGENT_SESSION_CREATE_RATE": "10000/hour",
        **settings,
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    return env


@contextlib.contextmanager
def made_run_server(tmp_path: Path):
    """The service as `make run` serves it (gunicorn's ASGI worker, one process, static files
    collected) on a fresh migrated database under `tmp_path`; yields its URL, stopped after."""
    env = migrated_env(tmp_path)
    port = free_port()
    process, base = start_server(
        server_commands(workers=1)["make-run-gunicorn-asgi"](port), env, tmp_path / "log", port
    )
    try:
        yield base
    finally:
        process.terminate()
        process.wait(timeout=15)


def children_of(pid: int) -> list[int]:
    """The processes `pid` started that still run (or are not yet reaped)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def stop_serve(process: subprocess.Popen, children: list[int]) -> None:
    """However the test ended, leaves no `manage.py serve` behind: Ctrl-C for it, then its
    `children` (children_of, taken while it ran) killed if any is left: they run in their own
    sessions, so killing `serve` alone would orphan them."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for child in children:
        if alive(child):
            os.kill(child, signal.SIGKILL)
