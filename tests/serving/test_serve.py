"""`make run`'s process: web server and scheduler up together, down together on Ctrl-C,
and no "database is locked" while both write to the same SQLite file."""

import datetime as dt
import os
import signal
import sqlite3
import sys
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from sessions_app.infra.log_lines import short_form
from tests.support.privacy import encodings, fixture_resume
from tests.support.servers import alive, children_of, free_port, launch, migrated_env, stop_serve, wait_until_serving
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.sqlite_only, pytest.mark.slow]

SCHEDULE = "purge expired sessions"
METRICS_TOKEN = "serve-test-metrics-token"


@pytest.fixture
def served(tmp_path):
    db = tmp_path / "serve.db"
    env = migrated_env(
        tmp_path,
        db,
        # A var/ of its own: `serve` empties its metrics directory (var/metrics) as it starts.
        DJANGO_VAR_DIR=str(tmp_path / "var"),
        METRICS_TOKEN=METRICS_TOKEN,
        AGENT_SESSION_TTL_HOURS="1",
        AGENT_SESSION_MESSAGE_RATE="10000/min",
        CLIENT_MESSAGE_RATE="10000/min",
        # The loop below deletes as fast as the machine allows: a quick one passes 60 a minute.
        AGENT_SESSION_DELETE_RATE="10000/min",
        # The scheduler's first look at the schedule at start-up, not 30 s later (config/settings/base.py).
        Q_GUARD_CYCLE_SECONDS="30",
        # Its purge of the 300 in 30 batches, 0.1 s apart: seconds of API traffic meet it.
        PURGE_BATCH_SIZE="10",
        PURGE_BATCH_PAUSE_SECONDS="0.1",
    )
    # The scheduler's purge every minute, due only once the 300 below are in (a purge that began
    # during the insert would find part of them, and the next one a minute later).
    _schedule_purge(db, dt.timedelta(days=1))
    # Already expired when the service starts: the start-up purge's to delete.
    _insert_expired_sessions(db, 3, prefix="anon-startup-")
    port = free_port()
    log_path = tmp_path / "serve.log"
    command = [sys.executable, "manage.py", "serve", "--bind", f"127.0.0.1:{port}"]
    process = launch(command, env, log_path)

    def start_up_purge_done() -> bool:
        assert process.poll() is None, log_path.read_text()
        return b"start-up purge:" in log_path.read_bytes()

    # Once the start-up purge is done, the scheduler's: its first look at the schedule comes
    # as it starts. Were it quicker than this insert, the test waits for its next run.
    assert wait_until(start_up_purge_done, timeout=30, interval=0.01), log_path.read_text()
    _insert_expired_sessions(db, 300)
    _schedule_purge(db, dt.timedelta(0))  # due now: the scheduler's next look (Q_GUARD_CYCLE_SECONDS) runs it
    process, base = wait_until_serving(process, command, log_path, port)
    children = children_of(process.pid)
    yield process, base, db, log_path
    stop_serve(process, children)


def _schedule_purge(db: Path, due_in: dt.timedelta) -> None:
    with sqlite3.connect(db, timeout=20) as conn:
        conn.execute(
            "UPDATE django_q_schedule SET minutes=1, next_run=? WHERE name=?",
            ((dt.datetime.now(dt.UTC) + due_in).isoformat(" "), SCHEDULE),
        )


def _insert_expired_sessions(db: Path, count: int, prefix: str = "anon-old-") -> None:
    """Expired sessions for the scheduler's purge to delete while the API is busy.

    Their content is random bytes the size of sealed values: the purge never opens it.
    """
    old = (dt.datetime.now(dt.UTC) - dt.timedelta(days=3)).isoformat(" ")
    with sqlite3.connect(db, timeout=20) as conn:
        for i in range(count):
            cursor = conn.execute(
                "INSERT INTO sessions_app_agentsession (app_name, owner_id, session_id, state, created_at,"
                " last_activity_at, revision) VALUES ('resume_agent', ?, ?, randomblob(3100), ?, ?, 0)",
                (f"{prefix}{i}", f"{prefix}{i}", old, old),
            )
            conn.executemany(
                "INSERT INTO sessions_app_sessionevent (agent_session_id, seq, event_id, invocation_id, author,"
                " timestamp, event_data) VALUES (?, ?, ?, '', 'user', 0, randomblob(1030))",
                [(cursor.lastrowid, j + 1, f"e{j}") for j in range(14)],
            )


def _purge_runs(db: Path) -> int:
    with sqlite3.connect(db, timeout=20) as conn:
        return conn.execute(
            "SELECT COUNT(*) FROM django_q_task WHERE func='sessions_app.tasks.purge_expired_sessions' AND success=1"
        ).fetchone()[0]


def _audits(db: Path) -> list[tuple]:
    with sqlite3.connect(db, timeout=20) as conn:
        return conn.execute("SELECT trigger, sessions_deleted FROM sessions_app_deletionaudit ORDER BY id").fetchall()


def _old_left(db: Path) -> int:
    with sqlite3.connect(db, timeout=20) as conn:
        query = "SELECT COUNT(*) FROM sessions_app_agentsession WHERE owner_id LIKE 'anon-old-%'"
        return conn.execute(query).fetchone()[0]


def test_web_and_scheduler_share_sqlite_and_stop_together(served):
    process, base, db, log_path = served
    children = children_of(process.pid)
    assert len(children) == 2, children  # gunicorn and qcluster
    # The root, once both run, is the bare supervisor (same pid): none of the application's pages
    # (the agent stack's libraries among them) held there too (supervisor.watch_in_bare_process).
    assert "--watch" in Path(f"/proc/{process.pid}/cmdline").read_text()
    assert "pydantic_core" not in Path(f"/proc/{process.pid}/maps").read_text()
    # The start-up purge ran before the servers, audited as itself (not as the scheduler's).
    assert _audits(db)[0] == ("startup", 3)

    # API traffic (create, turn, delete) until the scheduler has purged the 300,
    # both writing to the one SQLite file.
    statuses, left_seen = [], set()
    started = time.monotonic()
    with httpx.Client(base_url=base, timeout=30) as client:
        while time.monotonic() - started < 90 and not (0 in left_seen and time.monotonic() - started > 5):
            left_seen.add(_old_left(db))
            created = client.post("/agent/sessions", json={"resume_text": fixture_resume()})
            statuses.append(created.status_code)
            if created.status_code != 201:
                continue
            body = created.json()
            headers = {"X-Session-Token": body["token"]}
            url = f"/agent/sessions/{body['session_id']}"
            statuses.append(client.post(f"{url}/messages", json={"message": "hi"}, headers=headers).status_code)
            statuses.append(client.delete(url, headers=headers).status_code)
        # A token sent where the API never reads it, the query string: refused, and in no log.
        query_token = client.post("/agent/sessions", json={"resume_text": fixture_resume()}).json()["token"]
        refused = [
            client.get(path, params={"token": query_token, "x": query_token}).status_code
            for path in ("/agent/sessions/anon-x", "/agent/sessions/anon-x/messages")
        ]
        assert refused == [401, 401]
    log = log_path.read_text(errors="replace")
    assert _purge_runs(db) >= 1, log
    assert _old_left(db) == 0
    assert left_seen - {0, 300}, "no request met the purge half done"
    # Audited as the start-up's 3 and the scheduler's 300 (in one run, or two if the first came early).
    audits = _audits(db)
    assert [audit for audit in audits if audit[0] == "startup"] == [("startup", 3)]
    assert sum(deleted for trigger, deleted in audits if trigger == "ttl") == 300
    assert set(statuses) <= {200, 201, 204}, sorted(set(statuses))
    assert "database is locked" not in log and "Traceback" not in log

    process.send_signal(signal.SIGINT)  # what Ctrl-C sends
    assert process.wait(timeout=30) == 0
    wait_until(lambda: not any(alive(child) for child in children), timeout=10, interval=0.2)
    assert not any(alive(child) for child in children)
    everything = log_path.read_bytes()
    assert [form for form, data in encodings(query_token).items() if data in everything] == []
    # The access log is there, path only, the session's id in its short form (infra/log_lines.py).
    assert f"GET /agent/sessions/{short_form('anon-x')} ".encode() in everything


def _scraped(base: str) -> dict:
    """One scrape, on a connection of its own (the kernel hands each to any of the workers)."""
    response = httpx.get(f"{base}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=30)
    assert response.status_code == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def test_make_runs_processes_give_one_view_of_the_metrics(served, tmp_path):
    """What the four web workers, the scheduler's worker and the start-up purge count is one sum,
    whichever worker a scrape reaches."""
    process, base, db, log_path = served
    created = [httpx.post(f"{base}/agent/sessions", json={"resume_text": fixture_resume()}) for _ in range(12)]
    assert [response.status_code for response in created] == [201] * 12
    erased_by_schedule = ("resume_agent_sessions_erased_total", (("trigger", "ttl"),))
    scheduled_run = ("resume_agent_purge_runs_total", (("outcome", "ok"), ("trigger", "ttl")))

    def scheduled_purge_done() -> bool:
        # The erasures are counted batch by batch, the run once the purge returns: wait for both.
        scraped = _scraped(base)
        return scraped.get(erased_by_schedule) == 300 and scraped.get(scheduled_run, 0) >= 1

    assert wait_until(scheduled_purge_done, timeout=90, interval=0.5), log_path
    scrapes = [_scraped(base) for _ in range(12)]
    for scraped in scrapes:
        assert scraped[("resume_agent_sessions_created_total", ())] == 12
        assert scraped[("resume_agent_sessions_erased_total", (("trigger", "startup"),))] == 3
        assert scraped[erased_by_schedule] == 300
        assert scraped[("resume_agent_purge_runs_total", (("outcome", "ok"), ("trigger", "startup")))] == 1
        assert scraped[scheduled_run] >= 1
    # Values from several processes: the start-up purge's, the scheduler's and the web workers'.
    assert len(list((tmp_path / "var" / "metrics").glob("counter_*.db"))) >= 4


def test_make_run_gives_its_web_workers_a_pool_and_its_scheduler_none(monkeypatch):
    """On PostgreSQL each web worker serves hundreds of requests at once: without DATABASE_POOL_SIZE
    a burst opens a connection each, past max_connections. The scheduler forks its workers and must
    not share one. An operator's own size is kept."""
    from sessions_app.infra import supervisor

    environments = {}

    class Child:  # subprocess.Popen's part that supervise() uses, ending at once
        def __init__(self, command, env=None, **kwargs):
            environments["web" if "gunicorn" in command else "scheduler"] = os.environ if env is None else env

        def poll(self):
            return 0

        def wait(self, timeout=None):
            return 0

    monkeypatch.setattr(supervisor.subprocess, "Popen", Child)
    monkeypatch.setattr(supervisor, "address_taken", lambda bind: False)
    monkeypatch.setattr(supervisor.signal, "signal", lambda *args: None)
    monkeypatch.delenv("DATABASE_POOL_SIZE", raising=False)
    supervisor.supervise(sys.executable, "127.0.0.1:1", supervisor.DEFAULT_WORKERS)
    assert environments["web"]["DATABASE_POOL_SIZE"] == supervisor.WEB_POOL_SIZE
    assert "DATABASE_POOL_SIZE" not in environments["scheduler"]
    monkeypatch.setenv("DATABASE_POOL_SIZE", "3")
    supervisor.supervise(sys.executable, "127.0.0.1:1", supervisor.DEFAULT_WORKERS)
    assert environments["web"]["DATABASE_POOL_SIZE"] == "3"


def test_on_sqlite_the_children_fork_from_the_loaded_and_frozen_application(monkeypatch):
    """`make run`'s memory: its web server and scheduler share the application's pages only if the
    root loaded it, and kept it out of the collector's passes, before it forked them."""
    import gc

    from sessions_app.infra import supervisor

    seen = {}

    def start(python, bind, workers):
        seen["loaded"] = "config.asgi" in sys.modules
        seen["frozen"] = gc.get_freeze_count()

        class Ended:  # what supervise() uses of a child, ended at once
            def poll(self):
                return 0

            def wait(self, timeout=None):
                return 0

        return {"web": Ended(), "scheduler": Ended()}

    monkeypatch.delitem(sys.modules, "config.asgi", raising=False)
    monkeypatch.setattr(supervisor, "forks", start)
    monkeypatch.setattr(supervisor, "address_taken", lambda bind: False)
    monkeypatch.setattr(supervisor, "watch_in_bare_process", lambda python, bind, children: 0)
    supervisor.supervise_forks(sys.executable, "127.0.0.1:1", supervisor.DEFAULT_WORKERS)
    assert seen["loaded"] and seen["frozen"] > 0


def test_a_ctrl_c_held_back_during_the_exec_still_stops_both(monkeypatch):
    """The root blocks Ctrl-C before it becomes the bare supervisor (exec keeps a blocked signal
    pending): the new program, once its handler is in, must take it and stop the children, not
    run on with a Ctrl-C swallowed (or die of it before, leaving them running)."""
    from sessions_app.infra import supervisor

    signalled, polls = [], []

    class Running:  # a child that runs until it is signalled
        stopped = False

        def poll(self):
            polls.append(1)
            assert len(polls) < 100, "the held-back Ctrl-C never reached the supervisor"
            return 0 if self.stopped else None

        def send_signal(self, signum):
            self.stopped = True
            signalled.append(signum)

        def wait(self, timeout=None):
            return 0

    previous = signal.getsignal(signal.SIGINT)
    signal.pthread_sigmask(signal.SIG_BLOCK, supervisor.STOPPING)  # as watch_in_bare_process, before exec
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C during the exec: pending
    try:
        assert supervisor.watch("127.0.0.1:1", {"web": Running(), "scheduler": Running()}) == 0
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, supervisor.STOPPING)
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    assert sorted(signalled) == sorted(supervisor.STOP_SIGNALS.values())
