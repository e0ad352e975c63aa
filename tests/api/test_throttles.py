"""Rate limits hold under concurrency: exactly the limit passes, across threads and processes."""

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import time_machine
from django.db import connections
from rest_framework.test import APIClient

from sessions_app.api.throttles import SessionCreateThrottle
from sessions_app.deletion_log.formats.lookup import owner_id_for, receipt_lookup
from sessions_app.infra.client_address import address, client_network
from tests.support.privacy import fixture_resume
from tests.support.session_client import say
from tests.support.waiting import let_go_together

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def rates(settings):
    """Sets throttle rates for one test: rates(session_create="30/hour", ...)."""

    def set_rates(**scopes):
        settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": scopes}

    return set_rates


def _create(address: str = "127.0.0.1") -> int:
    client = APIClient()
    return client.post("/agent/sessions", {"resume_text": "Lin Mei"}, format="json", REMOTE_ADDR=address).status_code


def _concurrently(calls: int, work) -> list:
    start = threading.Barrier(calls)

    def one(_):
        start.wait()
        try:
            return work()
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=calls) as pool:
        return list(pool.map(one, range(calls)))


# --- client addresses ------------------------------------------------------------
def _network(text: str, *prefixes) -> str:
    return client_network(address(text), *prefixes)


def test_client_network_is_the_ipv4_address_or_the_ipv6_slash_64():
    assert _network("203.0.113.7") == "203.0.113.7"
    assert _network("2001:db8:1:2:aaaa::1") == _network("2001:db8:1:2:ffff:1:2:3") == "2001:db8:1:2::/64"
    assert _network("2001:db8:1:3::1") != _network("2001:db8:1:2::1")
    assert _network("::ffff:203.0.113.7") == "203.0.113.7"
    assert _network("fe80::1%eth0") == _network("fe80::1%eth0%1") == "fe80::/64"
    assert _network("not an address") == _network("") == "unknown"


# --- session creation ------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_concurrent_creates_from_one_address_get_exactly_the_limit(rates):
    rates(session_create="30/hour")
    statuses = _concurrently(60, _create)
    assert sorted(statuses) == [201] * 30 + [429] * 30


@pytest.mark.django_db
def test_addresses_in_one_ipv6_slash_64_share_one_counter(rates):
    rates(session_create="30/hour")
    statuses = [_create(f"2001:db8:5:6::{index + 1:x}") for index in range(40)]
    assert statuses == [201] * 30 + [429] * 10
    # Another /64 (the next network up) has its own budget.
    assert _create("2001:db8:5:7::1") == 201


@pytest.mark.django_db
def test_an_ipv6_slash_56_and_slash_48_each_share_one_coarser_budget(rates):
    """A holder of a /56 has 256 /64s, of a /48 65,536: each /64 has its own budget, and the
    network around them one more (issue 27: a /48 got 65,536 budgets and nothing else)."""
    rates(session_create="2/hour", session_create_ipv6_56="4/hour", session_create_ipv6_48="6/hour")
    # /64s of one /56 (2001:db8:7:100::/56): two each, four in all.
    assert [_create(f"2001:db8:7:1{index:02x}::1") for index in range(3)] == [201, 201, 201]
    assert _create("2001:db8:7:103::1") == 201
    assert _create("2001:db8:7:104::1") == 429  # a fresh /64, but the /56 has spent its four
    # Another /56 of the same /48: its sixth request (a refused one counts too), then no more.
    assert [_create(f"2001:db8:7:2{index:02x}::1") for index in range(2)] == [201, 429]
    assert _create("2001:db8:8:100::1") == 201  # another /48
    # IPv4 clients (and IPv4-mapped addresses) are counted per address only.
    assert [_create("198.51.100.40"), _create("198.51.100.40"), _create("::ffff:198.51.100.41")] == [201] * 3


@pytest.mark.django_db
def test_messages_from_one_ipv6_slash_56_share_a_budget(api, new_session, rates):
    rates(session_create="100/hour", client_message="2/min", client_message_ipv6_56="3/min")
    sessions = [new_session() for _ in range(4)]
    sent = [_send(api, *session, address=f"2001:db8:9:2{index:02x}::1") for index, session in enumerate(sessions)]
    assert [response.status_code for response in sent] == [200, 200, 200, 429]


def test_client_network_takes_a_coarser_prefix():
    assert _network("2001:db8:1:2ff::1", 56) == _network("2001:db8:1:200::9", 56) == "2001:db8:1:200::/56"
    assert _network("2001:db8:1:ffff::1", 48) == "2001:db8:1::/48"
    assert _network("203.0.113.7", 48) == "203.0.113.7"
    assert _network("203.0.113.7", 48, 24) == "203.0.113.0/24"


@pytest.mark.django_db
def test_throttled_answer_is_json_with_retry_after_and_the_window_resets(rates):
    rates(session_create="2/hour")
    with time_machine.travel("2030-01-01 10:59:00+00:00", tick=False):
        assert [_create(), _create()] == [201, 201]
        refused = APIClient().post("/agent/sessions", {"resume_text": "Lin"}, format="json")
        assert refused.status_code == 429
        assert refused["Content-Type"] == "application/json" and refused.json()["detail"]
        assert int(refused["Retry-After"]) == 60  # the seconds left in this hour's window
    with time_machine.travel("2030-01-01 11:00:01+00:00", tick=False):
        assert _create() == 201


# --- several processes, one counter ----------------------------------------------------
_PROCESS_SCRIPT = """
import sys, threading
import django
django.setup()
from rest_framework.test import APIRequestFactory
from sessions_app.api.throttles import SessionCreateThrottle
threads = int(sys.argv[1])
go = threading.Event()
allowed = []
def one():
    request = APIRequestFactory().post("/agent/sessions", REMOTE_ADDR="198.51.100.9")
    go.wait()
    allowed.append(SessionCreateThrottle().allow_request(request, None))
workers = [threading.Thread(target=one) for _ in range(threads)]
[w.start() for w in workers]
print("ready", flush=True)
sys.stdin.readline()  # the test's go, once every process is ready
go.set()
[w.join() for w in workers]
print(sum(allowed))
"""


@pytest.mark.slow
def test_processes_sharing_the_cache_let_exactly_the_limit_through(tmp_path):
    """4 processes x 15 threads, one client address, limit 30: the counter is atomic across processes."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "PYTEST"))},
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_DEBUG": "1",
        "DJANGO_CACHE_DIR": str(tmp_path / "cache"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'unused.db'}",
        "AGENT_SESSION_CREATE_RATE": "30/hour",
        "PYTHONPATH": str(ROOT),
    }
    # All 60 requests at once: each process reports ready, then all are let go together.
    assert sum(let_go_together(_PROCESS_SCRIPT, "15", env, ROOT)) == 30


# --- messages ----------------------------------------------------------------------------
def _send(api, session_id, token, address="127.0.0.1"):
    return say(api, session_id, token, "Plan please", REMOTE_ADDR=address)


@pytest.mark.django_db
def test_messages_are_throttled_per_session_token(api, new_session, rates):
    rates(session_create="100/hour", session_message="2/min", client_message="100/min")
    first, second = new_session(), new_session()
    assert [_send(api, *first).status_code for _ in range(2)] == [200, 200]
    refused = _send(api, *first)
    assert refused.status_code == 429 and refused.json()["detail"] and int(refused["Retry-After"]) > 0
    # Another session (another token) from the same address still has its budget,
    # and reading the conversation is not counted.
    assert _send(api, *second).status_code == 200
    session_id, token = first
    assert api.get(f"/agent/sessions/{session_id}/messages", HTTP_X_SESSION_TOKEN=token).status_code == 200


@pytest.mark.django_db
def test_messages_are_throttled_per_client_address(api, new_session, rates):
    rates(session_create="100/hour", session_message="100/min", client_message="3/min")
    sessions = [new_session() for _ in range(3)]
    # The clock held still, so the four sends share one minute's window (a slow machine's run once
    # crossed a minute's end between them).
    with time_machine.travel(time.time(), tick=False):
        assert [_send(api, *session, address="2001:db8:9:9::1").status_code for session in sessions] == [200] * 3
        # A fourth message from the same /64, to yet another session: refused.
        assert _send(api, *sessions[0], address="2001:db8:9:9::2").status_code == 429
        assert _send(api, *sessions[0], address="2001:db8:9:10::1").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_concurrent_messages_on_many_sessions_from_one_address_get_exactly_the_limit(rates):
    rates(session_create="100/hour", session_message="100/min", client_message="5/min")
    client = APIClient()
    sessions = []
    for _ in range(12):
        body = client.post("/agent/sessions", {"resume_text": fixture_resume()}, format="json").json()
        sessions.append((body["session_id"], body["token"]))
    pending = list(sessions)
    lock = threading.Lock()

    def send():
        with lock:
            session_id, token = pending.pop()
        return _send(APIClient(), session_id, token).status_code

    statuses = _concurrently(12, send)
    assert statuses.count(429) == 7 and statuses.count(200) == 5


# --- the counters themselves --------------------------------------------------------------
@pytest.mark.django_db
def test_a_scope_without_a_rate_is_not_throttled(rates):
    rates(session_message="30/min")  # no rate for session creation at all
    assert [_create("198.51.100.77") for _ in range(3)] == [201, 201, 201]


@pytest.mark.django_db
def test_a_changed_rate_holds_from_the_next_request(rates):
    """DRF makes each request's throttles afresh, and SimpleRateThrottle's own __init__ asks
    `get_rate()`, which reads the settings as they are now (not DRF's copy from import time)."""
    with time_machine.travel("2030-01-01 10:30:00+00:00", tick=False):
        rates(session_create="1/hour")
        assert [_create("198.51.100.78"), _create("198.51.100.78")] == [201, 429]
        rates(session_create="3/hour")
        assert _create("198.51.100.78") == 201
        rates()
        assert _create("198.51.100.78") == 201  # no rate: no limit


def test_a_counter_expires_one_second_after_its_window(rates, settings):
    """The counter lives for the rest of its window plus a second, then the cache drops it: a
    counter kept longer (or forever) would hold client addresses for nothing."""
    from django.core.cache import cache
    from rest_framework.test import APIRequestFactory

    rates(session_create="5/min")
    request = APIRequestFactory().post("/agent/sessions", REMOTE_ADDR="198.51.100.78")
    with time_machine.travel(1_900_000_010.25, tick=False) as traveller:
        throttle = SessionCreateThrottle()
        assert throttle.allow_request(request, None)
        key = f"{throttle.get_cache_key(request, None)}:{int(1_900_000_010.25 // 60)}"
        assert cache.get(key) == 1 and throttle.seconds_left == pytest.approx(9.75, abs=0.01)
        location = settings.CACHES["default"]["LOCATION"]
        if location.startswith("redis://"):  # Redis counts the time itself, in whole seconds
            import redis

            ttl = redis.Redis.from_url(location).pttl(cache.make_key(key)) / 1000
            assert 9 < ttl <= 10, ttl  # int(9.75 + 1)
            return
        traveller.shift(9.75 + 0.5)
        assert cache.get(key) == 1  # within the extra second
        traveller.shift(1.0)
        assert cache.get(key) is None


@pytest.mark.django_db
@pytest.mark.parametrize(
    "rate, at, language, said, retry_after",
    [
        ("1/hour", "10:59:00", "en", "Too many requests. Try again in 60 seconds.", "60"),
        ("1/hour", "10:59:59", "en", "Too many requests. Try again in 1 second.", "1"),
        ("1/hour", "10:59:00", "zh-Hant", "請求太多次，請在 60 秒後再試。", "60"),
        # In words, rounded up: 2,800 seconds are "about 47 minutes" (issue 44 found "2797 seconds").
        ("1/hour", "10:13:20", "en", "Too many requests. Try again in about 47 minutes.", "2800"),
        ("1/hour", "10:13:20", "zh-Hant", "請求太多次，請在約 47 分鐘後再試。", "2800"),
        ("1/hour", "10:58:00", "en", "Too many requests. Try again in about 2 minutes.", "120"),
        ("1/day", "20:30:00", "en", "Too many requests. Try again in about 4 hours.", "12600"),
        ("1/day", "20:30:00", "zh-Hant", "請求太多次，請在約 4 小時後再試。", "12600"),
    ],
)
def test_a_throttled_answer_says_when_to_try_again_in_the_clients_language(
    rates, rate, at, language, said, retry_after
):
    rates(session_create=rate)
    with time_machine.travel(f"2030-01-01 {at}+00:00", tick=False):
        assert _create() == 201
        refused = APIClient().post(
            "/agent/sessions", {"resume_text": "Lin"}, format="json", HTTP_ACCEPT_LANGUAGE=language
        )
    assert refused.status_code == 429
    assert refused.json() == {"detail": said}
    assert refused["Retry-After"] == retry_after  # the exact seconds, as before


def test_a_throttled_answer_with_no_wait_known_says_one_second():
    """DRF raises Throttled without a wait when no throttle can tell one: the answer still
    says when to come back, and Retry-After agrees."""
    from django.utils import translation
    from rest_framework import exceptions

    from sessions_app.api.errors import api_exception_handler

    with translation.override("en"):
        answer = api_exception_handler(exceptions.Throttled(), {})
    assert (answer.status_code, answer.data, answer["Retry-After"]) == (
        429,
        {"detail": "Too many requests. Try again in 1 second."},
        "1",
    )


# --- deletes, exports and the schema (issue 39, findings 6 and 11) ----------------------------
def _delete(api, session_id, token, address="127.0.0.1"):
    return api.delete(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token, REMOTE_ADDR=address)


def _export(api, session_id, token, address="127.0.0.1"):
    return api.get(f"/agent/sessions/{session_id}/export", HTTP_X_SESSION_TOKEN=token, REMOTE_ADDR=address)


@pytest.mark.django_db
def test_deletes_are_throttled_per_client_address_and_a_refused_one_changes_nothing(api, new_session, rates):
    rates(session_create="100/hour", session_delete="3/min")
    with time_machine.travel("2030-01-01 10:30:10+00:00", tick=False):
        session_id, token = new_session()
        # A stranger at the same address spends the budget on sessions that do not exist.
        assert [_delete(api, f"missing-{index}", "wrong").status_code for index in range(3)] == [404] * 3
        refused = _delete(api, session_id, token)
        assert refused.status_code == 429 and refused.json()["detail"] and refused["Retry-After"] == "50"
        assert "Deletion-Receipt" not in refused
        # Nothing of the session went: it reads, exports and takes turns as before, and has no receipt.
        assert api.get(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).status_code == 200
        assert _export(api, session_id, token, address="198.51.100.60").json()["resume_text"]
        assert _send(api, session_id, token).status_code == 200
        receipt = f"/deletions/{receipt_lookup(owner_id_for(token), session_id)}"
        assert api.get(receipt).status_code == 404
        # Reading the session is not counted; from another address the owner deletes at once.
        assert _delete(api, session_id, token, address="198.51.100.61").status_code == 204
        assert api.get(receipt).status_code == 200


@pytest.mark.django_db
def test_the_owner_deletes_once_the_window_is_over(api, new_session, rates):
    rates(session_create="100/hour", session_delete="1/min")
    with time_machine.travel("2030-01-01 10:30:59+00:00", tick=False):
        session_id, token = new_session()
        assert _delete(api, "missing", "wrong").status_code == 404
        assert _delete(api, session_id, token).status_code == 429
    with time_machine.travel("2030-01-01 10:31:00+00:00", tick=False):
        assert _delete(api, session_id, token).status_code == 204


@pytest.mark.django_db
def test_deletes_from_one_ipv6_slash_56_share_a_budget(api, new_session, rates):
    rates(session_create="100/hour", session_delete="10/min", session_delete_ipv6_56="2/min")
    addresses = [f"2001:db8:9:3{index:02x}::1" for index in range(3)]  # three /64s of one /56
    assert [_delete(api, "missing", "wrong", address=address).status_code for address in addresses] == [404, 404, 429]
    assert _delete(api, "missing", "wrong", address="2001:db8:a:300::1").status_code == 404  # another /48


@pytest.mark.django_db
def test_exports_are_throttled_per_client_address(api, new_session, rates):
    rates(session_create="100/hour", session_export="2/hour", session_export_ipv6_48="3/hour")
    session_id, token = new_session()
    assert [_export(api, session_id, token).status_code for _ in range(2)] == [200, 200]
    refused = _export(api, session_id, token)
    assert refused.status_code == 429 and refused["Content-Type"] == "application/json"
    assert int(refused["Retry-After"]) > 0 and "Content-Disposition" not in refused
    assert _export(api, session_id, token, address="198.51.100.62").status_code == 200
    # A /48's /64s share the /48's budget.
    in_one_48 = [_export(api, session_id, token, address=f"2001:db8:b:{index}::1").status_code for index in range(4)]
    assert in_one_48 == [200, 200, 200, 429]


@pytest.mark.django_db
def test_the_schema_is_throttled_per_client_address_and_refused_as_json(api, rates):
    rates(schema="2/min")
    assert [api.get("/api/schema/").status_code for _ in range(2)] == [200, 200]
    refused = api.get("/api/schema/")  # asked as YAML, the schema's default: the error is JSON
    assert refused.status_code == 429 and refused["Content-Type"] == "application/json"
    assert refused.json()["detail"] and int(refused["Retry-After"]) > 0
    assert api.get("/api/schema/", REMOTE_ADDR="198.51.100.63").status_code == 200
    # The docs pages themselves are not counted (the light one is built once per language and kept).
    assert api.get("/api/docs/").status_code == api.get("/api/docs/try/").status_code == 200
