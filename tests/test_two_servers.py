"""Two web servers on one PostgreSQL and one Redis, as docs/OPERATIONS.md ("several servers")
starts them: each gunicorn with a var/ of its own, so all they share is the database and the
cache. What one server stores or deletes, the other sees at once; a rate limit counts requests
to both; two turns of one session sent to both at once give one 200 and one 409; a server
killed mid-turn leaves its session free for the other; purges in one or two django-q2
clusters run while both serve. (Runs in the PostgreSQL + Redis leg of `make test`.) Deletions
sent to both at once get one order and one tree in the deletion log, with receipts that verify
offline: on both legs (on SQLite the two servers share the test's database file).

The servers' model is "Gemini" on a local double of its REST API (tests/support/gemini_double.py),
which can hold a model call: that is how a turn is caught mid-way, with no timing guesses.
"""

import datetime as dt
import os
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest
from django.conf import settings
from django.utils import timezone
from django_q.models import Task
from django_q.tasks import async_task

from sessions_app.deletion_log import key as log_key
from sessions_app.deletion_log import store as deletion_log
from sessions_app.deletion_log.formats.checkpoint import open_checkpoint
from sessions_app.deletion_log.formats.lookup import receipt_lookup
from sessions_app.deletion_log.formats.note import Verifier
from sessions_app.deletion_log.formats.verify import WhoseSession, verify_log_grew, verify_receipt
from sessions_app.infra.supervisor import gunicorn_command
from sessions_app.models import AgentSession, DeletionAudit, DeletionLogEntry
from sessions_app.retention import PURGE_TASK
from sessions_app.security.tokens import owner_id_for
from tests.support.factories import make_session
from tests.support.privacy import fixture_resume
from tests.support.servers import ROOT, free_port, launch, service_env, wait_until_serving
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
# The scale-out tests (a shared Redis, django-q2's ORM broker, the row turn lock); the deletion
# log's test runs on both legs.
postgres_only = pytest.mark.postgres_only
CREATES_ALLOWED = 3
MESSAGE = {"message": "Please draft my plan"}
SECOND_CLUSTER = "resume-agent-second"


@pytest.fixture
def scale_out_env(tmp_path, gemini_double):
    """The environment of every process of the deployment; `name` gives each its own var/."""

    # One Redis for every server where the leg has one; on SQLite each server counts its own rates.
    redis = settings.CACHES["default"]["BACKEND"].endswith("RedisCache")
    shared_cache = {"CACHE_URL": settings.CACHES["default"]["LOCATION"]} if redis else {}

    def env(name: str) -> dict:
        return service_env(
            tmp_path / name,
            **shared_cache,
            # One log, one signing key: each server has a var/ of its own, where it would make its own.
            DELETION_LOG_SIGNING_KEY=log_key.signer().skey,
            DELETION_LOG_RATE="1000/min",
            **gemini_double.environment(),
            AGENT_SESSION_CREATE_RATE=f"{CREATES_ALLOWED}/hour",
            PURGE_BATCH_SIZE="10",
            PURGE_BATCH_PAUSE_SECONDS="0.05",
            AGENT_SESSION_MESSAGE_RATE="1000/min",
            CLIENT_MESSAGE_RATE="1000/min",
        )

    return env


@pytest.fixture
def two_servers(tmp_path, scale_out_env):
    launched = []
    for name in ("a", "b"):  # started together, then waited for
        port = free_port()
        command = gunicorn_command(sys.executable, f"127.0.0.1:{port}", workers=1)
        launched.append((launch(command, scale_out_env(name), tmp_path / f"{name}.log"), command, port, name))
    servers = [
        wait_until_serving(process, command, tmp_path / f"{name}.log", port)
        for process, command, port, name in launched
    ]
    yield servers
    running = [process for process, _ in servers if process.poll() is None]
    for process in running:
        process.terminate()
    for process in running:
        process.wait(timeout=30)


@pytest.fixture
def clusters(tmp_path, scale_out_env):
    """A function that starts a django-q2 cluster (`manage.py qcluster`) of the deployment."""
    started = []

    def start(name: str, **env: str) -> subprocess.Popen:
        with open(tmp_path / f"{name}.log", "wb") as log:
            process = subprocess.Popen(
                [sys.executable, "manage.py", "qcluster"],
                cwd=ROOT,
                env={**scale_out_env(name), **env},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        started.append(process)

        def running() -> bool:
            assert process.poll() is None, f"{name} did not start"
            return b"running." in (tmp_path / f"{name}.log").read_bytes()

        assert wait_until(running, timeout=30, interval=0.1), f"{name} did not start"
        return process

    yield start
    for process in started:
        process.send_signal(signal.SIGINT)  # how qcluster stops cleanly (sessions_app/.../serve.py)
    for process in started:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture
def two_clients(two_servers):
    """A client of each server, closed before the servers stop (gunicorn waits out open keep-alives)."""
    clients = [httpx.Client(base_url=base, timeout=60) for _, base in two_servers]
    yield clients
    for client in clients:
        client.close()


def _new_session(client: httpx.Client) -> tuple[str, dict]:
    created = client.post("/agent/sessions", json={"resume_text": fixture_resume()})
    assert created.status_code == 201
    return f"/agent/sessions/{created.json()['session_id']}", {"X-Session-Token": created.json()["token"]}


def _in_thread(call) -> tuple[threading.Thread, dict]:
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("value", _call_or_error(call)), daemon=True)
    thread.start()
    return thread, outcome


def _call_or_error(call):
    try:
        return call()
    except httpx.HTTPError as exc:
        return exc


@postgres_only
def test_a_session_made_on_one_server_is_used_and_deleted_through_the_other(two_clients):
    a, b = two_clients
    url, headers = _new_session(a)

    turn = b.post(f"{url}/messages", json=MESSAGE, headers=headers)
    assert turn.status_code == 200
    assert "gemini" in turn.json()["model"]  # the real model path, on the local double
    described = a.get(url, headers=headers)
    assert (described.status_code, described.json()["turns"]) == (200, 1)

    assert a.delete(url, headers=headers).status_code == 204
    gone_on_b = b.get(url, headers=headers)
    assert gone_on_b.status_code == 404
    assert gone_on_b.content == a.get(url, headers=headers).content  # the one uniform 404


@postgres_only
def test_the_create_limit_counts_requests_to_both_servers(two_clients):
    a, b = two_clients
    body = {"resume_text": "Chen Mei-Ling\nData Analyst"}
    statuses = [(a if i % 2 else b).post("/agent/sessions", json=body).status_code for i in range(CREATES_ALLOWED)]
    assert statuses == [201] * CREATES_ALLOWED
    refused = [client.post("/agent/sessions", json=body) for client in (a, b)]
    assert [r.status_code for r in refused] == [429, 429]
    assert all(r.headers.get("Retry-After") for r in refused)


@postgres_only
def test_two_turns_sent_to_both_servers_at_once_give_one_200_and_one_409(two_clients, gemini_double):
    a, b = two_clients
    url, headers = _new_session(a)
    with gemini_double.hold() as held:
        thread, first = _in_thread(lambda: a.post(f"{url}/messages", json=MESSAGE, headers=headers))
        assert held.arrived.wait(30)  # A's turn is in its model call, holding the turn lock
        second = b.post(f"{url}/messages", json={"message": "And my cover letter?"}, headers=headers)
        held.release()
        thread.join(60)
    assert (first["value"].status_code, second.status_code) == (200, 409)
    conversation = a.get(f"{url}/messages", headers=headers).json()
    # The whole first turn and nothing of the refused one.
    assert [m["role"] for m in conversation["messages"]] == ["user", "agent"]
    assert conversation["messages"][0]["text"] == MESSAGE["message"]


@postgres_only
def test_a_server_killed_mid_turn_loses_nothing_and_the_other_serves_the_next_turn_at_once(
    two_clients, two_servers, gemini_double
):
    (server_a, _), _ = two_servers
    a, b = two_clients
    url, headers = _new_session(b)
    assert b.post(f"{url}/messages", json=MESSAGE, headers=headers).status_code == 200  # stored by B
    with gemini_double.hold() as held:
        _in_thread(lambda: a.post(f"{url}/messages", json={"message": "Killed mid-way"}, headers=headers))
        assert held.arrived.wait(30)
        os.killpg(server_a.pid, signal.SIGKILL)  # gunicorn's master and its worker, mid-turn
        server_a.wait()
    started, statuses = time.monotonic(), []
    while time.monotonic() - started < 5 and statuses[-1:] != [200]:
        statuses.append(b.post(f"{url}/messages", json={"message": "Next turn"}, headers=headers).status_code)
    # At once: the dead server's turn lock ended with its database connection (no 90 s wait).
    assert statuses[-1] == 200 and set(statuses) <= {200, 409}
    texts = [m["text"] for m in b.get(f"{url}/messages", headers=headers).json()["messages"] if m["role"] == "user"]
    assert texts == [MESSAGE["message"], "Next turn"]  # B's turns kept, nothing of the killed one


def _expired_sessions(count: int) -> list[int]:
    long_ago = timezone.now() - dt.timedelta(days=30)
    return [make_session(f"anon-{i:016x}", last_activity=long_ago, events=14).pk for i in range(count)]


def _wait_for_purges(count: int, timeout: float = 120) -> list[Task]:
    def finished() -> list[Task]:
        done = list(Task.objects.filter(func=PURGE_TASK))
        return done if len(done) >= count else []

    if done := wait_until(finished, timeout=timeout, interval=0.2):
        return done
    pytest.fail(f"{count} purge task(s) did not finish in {timeout} s")


@postgres_only
def test_a_purge_in_the_cluster_while_both_servers_serve_gives_no_error(two_clients, clusters):
    a, b = two_clients
    url, headers = _new_session(a)
    expired = _expired_sessions(150)
    clusters("cluster")
    async_task(PURGE_TASK, sync=False)  # into the ORM broker, as the schedule enqueues it
    statuses = []
    while not Task.objects.filter(func=PURGE_TASK).exists() and len(statuses) < 80:
        for client in (a, b):
            statuses.append(client.get(url, headers=headers).status_code)
            statuses.append(client.post(f"{url}/messages", json=MESSAGE, headers=headers).status_code)
    [task] = _wait_for_purges(1)
    assert task.success
    assert set(statuses) == {200}
    assert not AgentSession.objects.filter(pk__in=expired).exists()
    assert a.get(url, headers=headers).status_code == 200  # the live session stays


@postgres_only
def test_two_clusters_purge_at_once_without_errors_or_double_counting(clusters):
    expired = _expired_sessions(200)
    # The second cluster has a queue of its own, so each cluster surely runs one of the two purges.
    clusters("cluster-1"), clusters("cluster-2", Q_CLUSTER_NAME=SECOND_CLUSTER)
    async_task(PURGE_TASK, sync=False)
    async_task(PURGE_TASK, sync=False, cluster=SECOND_CLUSTER)
    tasks = _wait_for_purges(2)
    assert [task.success for task in tasks] == [True, True]
    assert {task.cluster for task in tasks} == {settings.Q_CLUSTER["name"], SECOND_CLUSTER}
    assert not AgentSession.objects.filter(pk__in=expired).exists()
    audits = DeletionAudit.objects.filter(trigger=DeletionAudit.Trigger.TTL)
    assert [audit.sessions_deleted > 0 for audit in audits] == [True, True]  # they ran at once, sharing the work
    assert sum(audit.sessions_deleted for audit in audits) == len(expired)
    assert sum(audit.events_deleted for audit in audits) == 14 * len(expired)


# --- The deletion log under two servers (issue 31) --------------------------------------------

DELETIONS = 30
THREADS_PER_SERVER = 3
KEY_PATH = "/.well-known/deletion-log-key"


def _sessions_to_delete(count: int) -> list[tuple[str, str]]:
    """(session id, token) of `count` sessions, made in the database the servers use."""
    tokens = [f"fictional-two-servers-token-{number:04d}" for number in range(count)]
    return [(make_session(owner_id_for(token), events=2).session_id, token) for token in tokens]


def test_deletions_through_both_servers_at_once_get_one_order_one_tree_and_verifiable_receipts(two_servers):
    """Owners' DELETEs sent to both servers at once, several at a time to each: every one is a 204
    whose receipt verifies offline with the one public key; the entries have one order (indexes
    0..n-1, one per session) and one tree (every receipt fetched mid-way is consistent with the
    last checkpoint); the log's size is the number of deletions."""
    sessions = _sessions_to_delete(DELETIONS)
    bases = [base for _, base in two_servers]
    keys = {httpx.get(f"{base}{KEY_PATH}").text.strip() for base in bases}
    assert len(keys) == 1  # one log, one key
    verifier = Verifier.from_vkey(keys.pop())
    workers = len(bases) * THREADS_PER_SERVER
    start = threading.Barrier(workers)
    outcomes, errors = {}, []

    def delete(base: str, share: list[tuple[str, str]]) -> None:
        try:
            with httpx.Client(base_url=base, timeout=60) as client:
                start.wait(30)
                for session_id, token in share:
                    answer = client.delete(f"/agent/sessions/{session_id}", headers={"X-Session-Token": token})
                    where = answer.headers.get("Deletion-Receipt")
                    # Fetched at once: proved against the checkpoint of that moment, kept to check later.
                    outcomes[session_id] = (answer.status_code, where, where and client.get(where))
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=delete, args=(bases[worker % len(bases)], sessions[worker::workers]))
        for worker in range(workers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    assert sorted(status for status, _, _ in outcomes.values()) == [204] * DELETIONS
    assert not AgentSession.objects.exists()

    with httpx.Client(base_url=bases[0], timeout=60) as a, httpx.Client(base_url=bases[1], timeout=60) as b:
        latest = a.get("/deletions/checkpoint")
        assert latest.status_code == 200 and b.get("/deletions/checkpoint").content == latest.content
        assert open_checkpoint(latest.text, verifier).size == DELETIONS
        indexes = []
        for number, (session_id, token) in enumerate(sessions):
            status, where, at_once = outcomes[session_id]
            assert where == f"/deletions/{receipt_lookup(owner_id_for(token), session_id)}"
            assert at_once.status_code == 200
            whose = WhoseSession.from_session_key(f"{session_id}.{token}")
            mid_way = verify_receipt(at_once.content, verifier, whose=whose)
            # The log only grew from the checkpoint this receipt was proved against to the last one.
            proof = (a, b)[number % 2].get("/deletions/consistency", params={"from": mid_way.checkpoint.size})
            assert proof.status_code == 200
            verify_log_grew(at_once.content, latest.content, proof.content, verifier)
            final = verify_receipt((b, a)[number % 2].get(where).content, verifier, whose=whose)
            assert (final.index, final.checkpoint.size) == (mid_way.index, DELETIONS)
            assert final.entry.trigger == "owner"
            indexes.append(final.index)
    assert sorted(indexes) == list(range(DELETIONS))  # one order: each session its own place
    # The stored log, from the test's side: one tree whose every checkpoint verifies, one entry
    # per deletion, as the audit counts them.
    assert deletion_log.verify_whole_log(verifier) == DeletionLogEntry.objects.count() == DELETIONS
    assert sum(DeletionAudit.objects.values_list("sessions_deleted", flat=True)) == DELETIONS
