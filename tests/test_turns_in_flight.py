"""Many turns at once while the model thinks (issue 28): `make run`'s server awaits the model on its
event loop, so one process holds AGENT_MAX_TURNS_IN_FLIGHT turns, and answers 503 beyond them.

Deterministic, no timing: the Gemini double holds every model call until released, so the test
knows that all turns are waiting on the model at once when the double has received them all.
"""

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

import httpx
import pytest
from django.db import connection

from sessions_app.infra.supervisor import WEB_POOL_SIZE, gunicorn_command
from tests.support.gemini_double import GeminiDouble
from tests.support.privacy import fixture_resume
from tests.support.servers import free_port, launch, service_env, wait_until_serving
from tests.support.waiting import wait_until_async

pytestmark = pytest.mark.slow
TURNS = 100


def _serve(tmp_path, **env):
    """`make run`'s web server, one worker process, on this test's database, its model the double."""
    double = GeminiDouble().start()
    env = service_env(
        tmp_path,
        DATABASE_POOL_SIZE=WEB_POOL_SIZE,
        **double.environment(),
        AGENT_MODEL_ATTEMPTS="1",
        CLIENT_MESSAGE_RATE="100000/min",
        AGENT_SESSION_MESSAGE_RATE="100000/min",
        AGENT_SESSION_CREATE_RATE="100000/hour",
        **env,
    )
    port, log_path = free_port(), tmp_path / "server.log"
    command = gunicorn_command(sys.executable, f"127.0.0.1:{port}", workers=1)
    process, base = wait_until_serving(launch(command, env, log_path), command, log_path, port)
    return base, double, log_path, process


def _stop(double, process) -> None:
    double.stop()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)


@pytest.fixture
def one_process(tmp_path, transactional_db):
    """One process (PostgreSQL's default max_connections is 100: as many as the turns), at most
    TURNS turns, no bound per client."""
    base, double, log_path, process = _serve(
        tmp_path, AGENT_MAX_TURNS_IN_FLIGHT=str(TURNS), AGENT_MAX_TURNS_PER_CLIENT="0", AGENT_MAX_TURNS_PER_IPV4_24="0"
    )
    yield base, double, log_path, process.pid
    _stop(double, process)


def _create(client: httpx.Client) -> tuple[str, dict]:
    body = client.post("/agent/sessions", json={"resume_text": fixture_resume()}).json()
    return f"/agent/sessions/{body['session_id']}/messages", {"X-Session-Token": body["token"]}


def _database_connections(server_pid: int) -> int:
    """Open connections to this test's database: on PostgreSQL all but the test's own, on SQLite
    the database file's descriptors in the server's processes."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            return cursor.fetchone()[0]
    database, count = os.path.realpath(connection.settings_dict["NAME"]), 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):  # a process that ended meanwhile
            parent = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1]
            if str(server_pid) in (pid, parent):  # gunicorn's master or a worker
                links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
                count += links.count(database)
    return count


def test_a_hundred_turns_wait_on_the_model_at_once_and_the_next_is_told_to_come_back(one_process):
    """...holding no database connection while they wait (PostgreSQL allows 100 by default)."""
    base, double, log_path, server_pid = one_process
    with httpx.Client(base_url=base, timeout=30) as client:
        sessions = [_create(client) for _ in range(TURNS + 1)]

    async def run() -> tuple[list[int], httpx.Response, httpx.Response]:
        limits = httpx.Limits(max_connections=TURNS + 10)
        async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
            with double.hold() as hold:
                turns = [
                    asyncio.ensure_future(client.post(url, json={"message": "Plan please"}, headers=headers))
                    for url, headers in sessions[:TURNS]
                ]

                def every_first_model_call_arrived() -> bool:
                    assert not any(turn.done() for turn in turns), [t.result().status_code for t in turns if t.done()]
                    return len(double.requests) >= TURNS

                arrived = await wait_until_async(every_first_model_call_arrived, timeout=60, interval=0.01)
                assert arrived, (len(double.requests), log_path.read_text())
                connections_held = await asyncio.to_thread(_database_connections, server_pid)
                page = await client.get("/", timeout=10)  # while all of them wait
                url, headers = sessions[TURNS]
                beyond = await client.post(url, json={"message": "Plan please"}, headers=headers, timeout=10)
                hold.release()
                answered = await asyncio.gather(*turns)
        return [response.status_code for response in answered], page, beyond, connections_held

    statuses, page, beyond, connections_held = asyncio.run(run())
    # The pool's, the process's presence (storage/turn_lock.py) and the test's other thread's.
    assert connections_held <= int(WEB_POOL_SIZE) + 2
    assert len(double.requests) >= TURNS and page.status_code == 200
    assert beyond.status_code == 503 and beyond.headers["Retry-After"] == "1"
    assert beyond.json()["code"] == "busy"
    assert statuses == [200] * TURNS
    with httpx.Client(base_url=base, timeout=30) as client:  # the bound is free again
        url, headers = sessions[TURNS]
        assert client.post(url, json={"message": "Plan please"}, headers=headers).status_code == 200


def test_every_middleware_lets_an_awaited_turn_through_on_the_event_loop(settings):
    """Under ASGI Django runs a sync-only middleware in a thread, which then waits for everything
    inside it: each turn would hold a thread for as long as the model thinks (WhiteNoise 6.12's
    middleware, and two of ours, were sync-only before issue 28)."""
    from django.utils.module_loading import import_string

    sync_only = [path for path in settings.MIDDLEWARE if not getattr(import_string(path), "async_capable", False)]
    assert sync_only == []


def test_serve_sees_a_port_in_use_that_reuse_port_would_share():
    """make run's gunicorn binds with SO_REUSEPORT; a second `make run` must not share the port."""
    import socket

    from sessions_app.infra.supervisor import address_taken

    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        bind = f"127.0.0.1:{listener.getsockname()[1]}"
        assert address_taken(bind)
    assert not address_taken(bind)


# --- a few strangers cannot hold every place (issue 39, finding 10) ---------------------------
STRANGERS, POOL, PER_CLIENT = 26, 64, 2  # `make run` scaled down: 1,024 places, 16 a client


def test_twenty_six_addresses_no_longer_hold_every_place(tmp_path, transactional_db):
    """With a slow model 26 IPv4 addresses held all 1,024 turns of `make run`, and everyone else got
    the 503. Scaled down (64 places, 2 a client): each of 26 addresses sends 3 turns, more than the
    places (78); each holds its 2 at the model, its third is the 429, and a newcomer's turn still
    reaches the model. Behind a proxy (NUM_PROXIES 1): the addresses are X-Forwarded-For's."""
    base, double, log_path, process = _serve(
        tmp_path, NUM_PROXIES="1", AGENT_MAX_TURNS_IN_FLIGHT=str(POOL), AGENT_MAX_TURNS_PER_CLIENT=str(PER_CLIENT)
    )
    try:
        with httpx.Client(base_url=base, timeout=30) as client:
            sessions = [_create(client) for _ in range(STRANGERS * 3 + 2)]

        async def run():
            limits = httpx.Limits(max_connections=len(sessions) + 10)
            async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:

                def send(index: int, address: str):
                    url, headers = sessions[index]
                    headers = {**headers, "X-Forwarded-For": address}
                    return asyncio.ensure_future(client.post(url, json={"message": "Plan please"}, headers=headers))

                with double.hold() as hold:
                    turns = [send(index, f"198.51.{index % STRANGERS}.7") for index in range(STRANGERS * 3)]

                    def every_turn_held_or_refused() -> bool:
                        return len(double.requests) + sum(turn.done() for turn in turns) >= len(turns)

                    settled = await wait_until_async(every_turn_held_or_refused, timeout=60, interval=0.01)
                    assert settled, (len(double.requests), log_path.read_text())
                    refused = [turn.result() for turn in turns if turn.done()]
                    held = [turn for turn in turns if not turn.done()]
                    newcomer = send(len(turns), "203.0.113.99")
                    reached = await wait_until_async(lambda: len(double.requests) > len(turns) - len(refused), 20, 0.01)
                    one_more = await send(len(turns) + 1, "198.51.0.7")  # a stranger holding its two
                    hold.release()
                    answered = await asyncio.gather(*held, newcomer)
            return refused, reached, one_more, answered

        refused, reached, one_more, answered = asyncio.run(run())
        newcomer_status = answered[-1].status_code
    finally:
        _stop(double, process)
    assert reached, ("the newcomer's turn did not reach the model", newcomer_status)
    assert [response.status_code for response in refused] == [429] * STRANGERS
    assert {response.json()["code"] for response in refused} == {"turns_in_flight"}
    assert {response.headers["Retry-After"] for response in refused} == {"5"}
    assert one_more.status_code == 429 and one_more.json()["code"] == "turns_in_flight"
    assert [response.status_code for response in answered] == [200] * (STRANGERS * PER_CLIENT + 1)
