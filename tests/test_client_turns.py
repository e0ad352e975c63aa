"""Turns in flight per client (issue 39, finding 10): a client (an IPv4 address or IPv6 /64, and its
/24, /56 and /48) has at most its bound of turns running at once, across processes; one more is a
429 `turns_in_flight` with Retry-After before anything runs, while other clients' turns go through;
every way a turn ends gives its count back, and a count nobody gives back is gone within two
lifetimes. tests/test_turns_in_flight.py holds 26 addresses' turns at a real server's model."""

import asyncio
import os
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import time_machine
from asgiref.sync import sync_to_async
from django.db import connections
from rest_framework.test import APIClient

from sessions_app.infra.cache_counters import HeldCounts
from tests.support.asgi_client import ASGIClient, run
from tests.support.scripted_llm import text_response
from tests.support.session_client import say
from tests.support.waiting import let_go_together, wait_until, wait_until_async

ROOT = Path(__file__).resolve().parent.parent
REFUSED_EN = "Too many messages from your network are being answered at once. Please send it again in a few seconds."
STREAM = {"HTTP_ACCEPT": "text/event-stream"}
REFUSED_ZH = "你的網路同時有太多則訊息正在等待回覆，請過幾秒再傳送一次。"


def _stream(session, address: str):
    """A streamed turn through Django's ASGI handler (the one stream path), read to its end."""
    return say(ASGIClient(address), *session, "Plan please", **STREAM)


def _say(session, address: str, language: str = "en", **extra):
    """A turn of `session` (session_id, token) from a client at `address`."""
    return say(APIClient(), *session, "Plan please", REMOTE_ADDR=address, HTTP_ACCEPT_LANGUAGE=language, **extra)


@pytest.fixture
def bounds(settings):
    """bounds(client=1, ipv4_24=0, ...): the per-client bounds for one test (0: off)."""

    def set_bounds(client=0, ipv4_24=0, ipv6_56=0, ipv6_48=0):
        settings.AGENT_MAX_TURNS_PER_CLIENT, settings.AGENT_MAX_TURNS_PER_IPV4_24 = client, ipv4_24
        settings.AGENT_MAX_TURNS_PER_IPV6_56, settings.AGENT_MAX_TURNS_PER_IPV6_48 = ipv6_56, ipv6_48

    return set_bounds


@pytest.fixture
def held_model(scripted_model):
    """The API's model holds each call until `release` is set; `arrived` counts the calls held."""
    model = scripted_model()
    release, arrived, lock = threading.Event(), [], threading.Lock()

    async def held_generate(llm_request, stream=False):
        with lock:
            arrived.append(llm_request)
        await asyncio.get_running_loop().run_in_executor(None, release.wait, 30)
        yield text_response("Here is a plan for 林語晴.")

    object.__setattr__(model, "generate_content_async", held_generate)
    return release, arrived


@pytest.fixture
def sessions(new_session, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {}}
    return lambda count: [new_session() for _ in range(count)]


# --- through the API -------------------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_a_client_holding_its_bound_is_refused_and_another_client_gets_through(bounds, held_model, sessions):
    release, arrived = held_model
    bounds(client=2)
    mine, theirs = sessions(4), sessions(1)
    with ThreadPoolExecutor(max_workers=3) as pool:
        held = [pool.submit(_say, session, "203.0.113.10") for session in mine[:2]]
        assert wait_until(lambda: len(arrived) == 2, timeout=20, interval=0.01), "timed out"
        refused = _say(mine[2], "203.0.113.10")
        in_chinese = _say(mine[3], "203.0.113.10", language="zh-Hant")
        other = pool.submit(_say, theirs[0], "203.0.113.11")
        assert wait_until(lambda: len(arrived) == 3, timeout=20, interval=0.01), (
            "timed out"
        )  # another address's turn reached the model meanwhile
        release.set()
        answered = [future.result(timeout=30).status_code for future in [*held, other]]
    connections.close_all()
    assert (refused.status_code, refused["Retry-After"]) == (429, "5")
    assert refused.json() == {"detail": REFUSED_EN, "code": "turns_in_flight"}
    assert in_chinese.json() == {"detail": REFUSED_ZH, "code": "turns_in_flight"}
    assert answered == [200, 200, 200]
    # Nothing of the refused turn ran or stayed: its session takes its turn now.
    assert _say(mine[2], "203.0.113.10").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_the_networks_of_a_client_are_bounded_too(bounds, held_model, sessions):
    release, arrived = held_model
    bounds(client=5, ipv4_24=2, ipv6_56=1, ipv6_48=2)
    mine = sessions(7)
    held_addresses = ["198.51.100.1", "198.51.100.2", "2001:db8:1:100::1", "2001:db8:1:200::1"]
    with ThreadPoolExecutor(max_workers=4) as pool:
        held = [pool.submit(_say, session, address) for session, address in zip(mine, held_addresses, strict=False)]
        assert wait_until(lambda: len(arrived) == 4, timeout=20, interval=0.01), "timed out"
        beyond = [
            _say(mine[4], "198.51.100.3"),  # a third address of one /24
            _say(mine[5], "2001:db8:1:1ff::1"),  # another /64 of a /56 that holds its one
            _say(mine[6], "2001:db8:1:300::1"),  # a third /56 of a /48 that holds its two
        ]
        release.set()
        answered = [future.result(timeout=30).status_code for future in held]
    connections.close_all()
    assert [response.status_code for response in beyond] == [429] * 3 and answered == [200] * 4


@pytest.mark.django_db(transaction=True)
def test_junk_forwarded_by_a_proxy_is_no_fresh_turn_budget(bounds, held_model, sessions, settings):
    """Behind a proxy count, junk in X-Forwarded-For counts as the proxy's address (finding 9)."""
    release, arrived = held_model
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    bounds(client=1)
    first, second, third = sessions(3)
    with ThreadPoolExecutor(max_workers=2) as pool:
        held = pool.submit(_say, first, "10.0.0.1", HTTP_X_FORWARDED_FOR="junk-1")
        assert wait_until(lambda: len(arrived) == 1, timeout=20, interval=0.01), "timed out"
        refused = _say(second, "10.0.0.1", HTTP_X_FORWARDED_FOR="junk-2")
        other = pool.submit(_say, third, "10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.12:5555")
        assert wait_until(lambda: len(arrived) == 2, timeout=20, interval=0.01), "timed out"
        release.set()
        answered = [held.result(timeout=30).status_code, other.result(timeout=30).status_code]
    connections.close_all()
    assert refused.status_code == 429 and answered == [200, 200]


@pytest.mark.django_db
def test_every_way_a_turn_ends_gives_its_count_back(bounds, scripted_model, sessions, settings):
    """With a bound of one turn, each next turn from the address goes through only if the last one,
    however it ended, gave its count back."""
    bounds(client=1)
    session = sessions(1)[0]
    model = scripted_model(
        text_response("Plan ready."),  # a kept turn
        RuntimeError("the model broke"),  # a model failure: nothing kept
        text_response("Streamed plan."),  # a streamed turn, read to its end
        text_response("Another plan."),  # after the session-limit refusal
    )
    assert _say(session, "203.0.113.20").status_code == 200
    assert _say(session, "203.0.113.20").status_code >= 500
    streamed = _stream(session, "203.0.113.20")
    assert b"event: reply" in b"".join(streamed.streaming_content)
    settings.AGENT_SESSION_MAX_TURNS = 0  # refused after the count is taken, before the model
    assert _say(session, "203.0.113.20").status_code == 409
    settings.AGENT_SESSION_MAX_TURNS = 50
    assert _say(session, "203.0.113.20").status_code == 200
    assert not model.steps


@pytest.mark.django_db(transaction=True)
def test_a_client_gone_mid_stream_gives_its_count_back(bounds, held_model, sessions):
    release, arrived = held_model
    bounds(client=1)
    session, other = sessions(2)

    async def steps():
        session_id, token = session
        url, client = f"/agent/sessions/{session_id}/messages", ASGIClient("203.0.113.30")
        streamed = await client.request("post", url, {"message": "Plan please"}, HTTP_X_SESSION_TOKEN=token, **STREAM)
        assert (await anext(aiter(streamed.streaming_content))).startswith(b"event: progress")
        assert await wait_until_async(lambda: len(arrived) == 1, timeout=20), "timed out"
        assert (
            await sync_to_async(_say)(other, "203.0.113.30")
        ).status_code == 429  # the streamed turn holds the count
        await sync_to_async(streamed.close)()  # the client hangs up: the turn is stopped

    run(steps)
    release.set()
    connections.close_all()
    assert _say(other, "203.0.113.30").status_code == 200


@pytest.mark.django_db
def test_requests_with_no_address_are_bounded_by_the_process_only(bounds, scripted_model, sessions):
    bounds(client=1)
    scripted_model(text_response("One."), text_response("Two."))
    session = sessions(1)[0]
    assert [_say(session, "").status_code, _say(session, "").status_code] == [200, 200]


# --- the counts ---------------------------------------------------------------------------------
def test_a_count_holds_its_bound_and_is_given_back():
    counts = HeldCounts("test", lifetime=90)
    taken = [counts.take("client", 3) for _ in range(4)]
    assert all(taken[:3]) and taken[3] is None
    counts.release(taken[0])
    assert counts.take("client", 3) is not None and counts.take("client", 3) is None
    assert counts.take("another-client", 3) is not None


def test_a_count_nobody_gives_back_is_gone_within_two_lifetimes():
    """A worker killed mid-turn never releases: its count holds for a lifetime, then goes."""
    counts = HeldCounts("test", lifetime=90)
    with time_machine.travel(1_900_000_000 - 1_900_000_000 % 90 + 89, tick=False) as traveller:  # a window's end
        stuck = counts.take("client", 1)
        assert stuck is not None
        traveller.shift(89)  # a lifetime later, in the next window: still counted
        assert counts.take("client", 1) is None
        traveller.shift(2)  # two windows on: forgotten
        fresh = counts.take("client", 1)
        assert fresh is not None
        counts.release(stuck)  # the late release of the forgotten one changes nothing
        assert counts.take("client", 1) is None


@pytest.mark.django_db(transaction=True)
def test_concurrent_takes_get_exactly_the_bound():
    start = threading.Barrier(30)

    def one(_):
        start.wait()
        return HeldCounts("test", lifetime=90).take("client", 12) is not None

    with ThreadPoolExecutor(max_workers=30) as pool:
        assert sum(pool.map(one, range(30))) == 12


_PROCESS_SCRIPT = """
import sys, threading
import django
django.setup()
from sessions_app.infra.cache_counters import HeldCounts
go, taken = threading.Event(), []
def one():
    go.wait()
    taken.append(HeldCounts("turns_in_flight", 90).take(sys.argv[1], 10) is not None)
workers = [threading.Thread(target=one) for _ in range(8)]
[w.start() for w in workers]
print("ready", flush=True)
sys.stdin.readline()
go.set()
[w.join() for w in workers]
print(sum(taken))
"""


@pytest.mark.slow
def test_processes_sharing_the_cache_hold_one_bound(tmp_path):
    """4 processes x 8 threads take at once for one client, bound 10: the 4 gunicorn workers of
    `make run` share one count (the cache file), so the bound is the client's, not each worker's."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "PYTEST"))},
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_DEBUG": "1",
        "DJANGO_CACHE_DIR": str(tmp_path / "cache"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'unused.db'}",
        "PYTHONPATH": str(ROOT),
    }
    client = f"test-client-{uuid.uuid4()}"  # a Redis (CACHE_URL) outlives the test
    assert sum(let_go_together(_PROCESS_SCRIPT, client, env, ROOT)) == 10
