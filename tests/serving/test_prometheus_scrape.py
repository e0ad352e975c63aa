"""A real Prometheus (Debian's `prometheus`) scrapes `make run`'s server (issue 42, point 4).

The service runs as `make run` starts it (`manage.py serve`: four web workers and the scheduler,
one multiprocess metrics directory), on this test's database (either leg: SQLite, or PostgreSQL
with the leg's Redis as its cache), its model "Gemini" on a local double of its REST API.
Prometheus scrapes it every second with the bearer token from a file, and loads the alert rules
(config/prometheus/alerts.yml). A scripted flow: an expired session the start-up purge erases,
creates, a stored turn, a model failure (the double unavailable twice: one retry), 503s busy
(AGENT_MAX_TURNS_IN_FLIGHT=1: five turns at once while the double holds them, on four workers), a
delete, and the scheduled purge's task, run by the scheduler's cluster. Then Prometheus's HTTP API
must show what the flow did, the counters of erased sessions must equal the deletion audit's, by
trigger, every rule must evaluate without error, and every query of the Grafana dashboard must be
one Prometheus accepts.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.conf import settings
from django.db.models import Sum
from django.utils import timezone
from django_q.tasks import async_task

from sessions_app.choices import ErasureTrigger
from sessions_app.models import AgentSession, DeletionAudit
from sessions_app.retention import PURGE_TASK
from tests.infra.test_alert_rules import RULES, dashboard_exprs
from tests.infra.test_metrics import UNAVAILABLE
from tests.support.factories import make_purge_schedule, make_session
from tests.support.gemini_double import text_answer
from tests.support.privacy import fixture_resume
from tests.support.servers import ROOT, children_of, free_port, launch, service_env, stop_serve, wait_until_serving
from tests.support.system_tools import debian_program
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

TOKEN = "prometheus-scrape-test-token-0123456789"
JOB = "resume-agent"
BOUND = 1  # turns one process runs at once
AT_ONCE = 5  # turns sent together: more than the four workers can run
SCRAPE_CONFIG = """
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - {rules}
scrape_configs:
  - job_name: {job}
    metrics_path: /metrics
    authorization:
      credentials_file: {token_file}
    static_configs:
      - targets: ["127.0.0.1:{port}"]
"""


@pytest.fixture
def served(tmp_path, gemini_double):
    """`manage.py serve` on the test's database, as `make run` starts it; (base URL, its log)."""
    # The leg's Redis where it has one (the readiness' cache check then asks it).
    redis = settings.CACHES["default"]["BACKEND"].endswith("RedisCache")
    shared_cache = {"CACHE_URL": settings.CACHES["default"]["LOCATION"]} if redis else {}
    env = service_env(
        tmp_path / "app",
        **shared_cache,
        **gemini_double.environment(),
        METRICS_TOKEN=TOKEN,
        # Two attempts per model call, the second soon: the double unavailable twice is a failure.
        AGENT_MODEL_ATTEMPTS="2",
        AGENT_MODEL_RETRY_DELAY_SECONDS="0.01",
        AGENT_SESSION_CREATE_RATE="1000/hour",
        AGENT_SESSION_MESSAGE_RATE="1000/min",
        CLIENT_MESSAGE_RATE="1000/min",
        AGENT_MAX_TURNS_IN_FLIGHT=str(BOUND),
    )
    # The schedule (transactional tests flush migration 0002's row: /readyz wants one), not due in the test.
    make_purge_schedule(timezone.now() + dt.timedelta(hours=1))
    # Already expired when the service starts: the start-up purge's to erase.
    long_ago = timezone.now() - dt.timedelta(days=30)
    make_session("anon-expired-before-start", last_activity=long_ago, created=long_ago)
    port, log_path = free_port(), tmp_path / "serve.log"
    command = [sys.executable, "manage.py", "serve", "--bind", f"127.0.0.1:{port}"]
    process, base = wait_until_serving(launch(command, env, log_path), command, log_path, port)
    children = children_of(process.pid)
    yield base, port, log_path
    stop_serve(process, children)


@pytest.fixture
def prometheus(tmp_path, served):
    """Debian's Prometheus scraping `served` every second; its API's base URL."""
    binary = debian_program("prometheus", "/usr/bin/prometheus", "prometheus")
    _, app_port, _ = served
    token_file = tmp_path / "metrics-token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o600)
    config = tmp_path / "prometheus.yml"
    config.write_text(SCRAPE_CONFIG.format(rules=RULES, job=JOB, token_file=token_file, port=app_port))
    port, log_path = free_port(), tmp_path / "prometheus.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [
                str(binary),
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'prometheus-data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        assert process.poll() is None, log_path.read_text()
        try:
            return httpx.get(f"{base}/-/ready", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    try:
        assert wait_until(ready, timeout=30, interval=0.1), log_path.read_text()
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def query(base: str, expr: str) -> dict[tuple, float]:
    """An instant query's vector: {(sorted labels but the job's and instance's): value}."""
    answer = httpx.get(f"{base}/api/v1/query", params={"query": expr}, timeout=5).json()
    assert answer["status"] == "success", (expr, answer)
    return {
        tuple(sorted((k, v) for k, v in item["metric"].items() if k not in ("job", "instance", "__name__"))): float(
            item["value"][1]
        )
        for item in answer["data"]["result"]
    }


def scalar(base: str, expr: str) -> float | None:
    result = query(base, expr)
    return next(iter(result.values())) if result else None


def test_prometheus_scrapes_the_flow_and_its_counters_agree_with_the_database(served, prometheus, gemini_double):
    app, _, serve_log = served
    client = httpx.Client(base_url=app, timeout=30)

    # Prometheus has scraped the server at least once, its checks all holding.
    assert wait_until(lambda: scalar(prometheus, f'up{{job="{JOB}"}}') == 1, timeout=30, interval=0.2)
    assert scalar(prometheus, 'sum(resume_agent_readiness_check{state="failing"})') == 0

    sessions = []
    for _ in range(3 + AT_ONCE):
        created = client.post("/agent/sessions", json={"resume_text": fixture_resume()})
        assert created.status_code == 201, created.text
        sessions.append((created.json()["session_id"], created.json()["token"]))
    (first, first_token), (second, _), (third, third_token), *together = sessions

    def say(session_id, token, message):
        return client.post(
            f"/agent/sessions/{session_id}/messages", json={"message": message}, headers={"X-Session-Token": token}
        )

    gemini_double.answer(text_answer("Here is a first plan."))
    assert say(first, first_token, "Please draft my plan").status_code == 200
    gemini_double.answer(UNAVAILABLE, UNAVAILABLE)  # both attempts: a model failure after one retry
    failed = say(third, third_token, "And for remote roles?")
    assert failed.status_code == 503, failed.text

    # Five turns at once while the model holds them: each worker runs one, the others answer busy.
    with gemini_double.hold() as hold, ThreadPoolExecutor(AT_ONCE) as pool:
        calls_before = gemini_double.calls
        sent = [pool.submit(say, session_id, token, "Once more") for session_id, token in together]

        def each_running_or_refused() -> bool:
            refused = sum(1 for turn in sent if turn.done())
            return refused + gemini_double.calls - calls_before == AT_ONCE

        assert wait_until(each_running_or_refused, timeout=30, interval=0.05)
        hold.release()
        answers = [turn.result() for turn in sent]
    busy = [answer for answer in answers if answer.status_code == 503]
    assert all(answer.json()["code"] == "busy" for answer in busy)
    assert len(busy) >= 1 and len(busy) + sum(answer.status_code == 200 for answer in answers) == AT_ONCE

    assert client.delete(f"/agent/sessions/{first}", headers={"X-Session-Token": first_token}).status_code == 204

    # The second session expires, and the scheduled purge's task is queued, as the schedule queues
    # it (the scheduler itself looks at its schedules every 30 s), for the service's cluster.
    long_ago = timezone.now() - dt.timedelta(days=30)
    AgentSession.objects.filter(session_id=second).update(created_at=long_ago, last_activity_at=long_ago)
    async_task(PURGE_TASK, sync=False)

    expected = {
        'sum(resume_agent_sessions_created_total{job="resume-agent"})': 3 + AT_ONCE,
        'sum(resume_agent_turns_total{outcome="stored"})': 1 + AT_ONCE - len(busy),
        'sum(resume_agent_turns_total{outcome="refused",reason="turns_busy"})': len(busy),
        'sum(resume_agent_busy_answers_total{cause="turns"})': len(busy),
        'sum(resume_agent_turns_total{outcome="model_failure",reason="unavailable"})': 1,
        'sum(resume_agent_model_retries_total{status="503"})': 1,
        'sum(resume_agent_sessions_erased_total{trigger="api"})': 1,
        'sum(resume_agent_sessions_erased_total{trigger="startup"})': 1,
        'sum(resume_agent_sessions_erased_total{trigger="ttl"})': 1,
        'sum(resume_agent_purge_runs_total{trigger="startup",outcome="ok"})': 1,
        'sum(resume_agent_purge_runs_total{trigger="ttl",outcome="ok"})': 1,
        'sum(resume_agent_http_answers_total{route="agent/sessions",method="POST",status="201"})': 3 + AT_ONCE,
        'sum(resume_agent_turn_duration_seconds_count{outcome="stored"})': 1 + AT_ONCE - len(busy),
        "sum(resume_agent_turns_in_flight)": 0,
        "sum(resume_agent_sessions_expired_stored)": 0,
        "sum(resume_agent_deletion_log_entries)": 3,
        'sum(resume_agent_readiness_check{state="failing"})': 0,
    }

    def seen() -> dict:
        return {expr: scalar(prometheus, expr) for expr in expected}

    assert wait_until(lambda: seen() == expected, timeout=60, interval=0.5), (seen(), serve_log.read_text()[-3000:])
    assert scalar(prometheus, "resume_agent_turns_in_flight_limit") == BOUND
    assert scalar(prometheus, "resume_agent_purge_interval_seconds") == 15 * 60
    assert scalar(prometheus, "time() - max(resume_agent_purge_last_success_timestamp_seconds)") < 120
    assert 0 <= scalar(prometheus, "max(resume_agent_deletion_log_checkpoint_age_seconds)") < 120

    # Sessions erased by trigger, as Prometheus counts them, are the deletion audit's.
    counted = {
        dict(labels)["trigger"]: total
        for labels, total in query(prometheus, "sum by (trigger) (resume_agent_sessions_erased_total)").items()
        if total
    }
    audited = {
        row["trigger"]: row["total"]
        for row in DeletionAudit.objects.values("trigger").annotate(total=Sum("sessions_deleted"))
        if row["total"]
    }
    assert counted == audited == {ErasureTrigger.API: 1, ErasureTrigger.STARTUP: 1, ErasureTrigger.TTL: 1}

    # Every alert rule evaluates on the real series without error.
    def rules_evaluated() -> list[dict]:
        groups = httpx.get(f"{prometheus}/api/v1/rules", timeout=5).json()["data"]["groups"]
        rules = [rule for group in groups for rule in group["rules"]]
        return rules if rules and all(rule["health"] != "unknown" for rule in rules) else []

    rules = wait_until(rules_evaluated, timeout=30, interval=0.5)
    assert len(rules) == 8
    assert [(rule["name"], rule["health"], rule.get("lastError", "")) for rule in rules if rule["health"] != "ok"] == []

    # Every query of the dashboard is one Prometheus accepts.
    for expr in dashboard_exprs():
        if expr.startswith("label_values("):  # Grafana's, not PromQL
            continue
        query(prometheus, expr.replace("$job", JOB).replace("$__rate_interval", "1m"))
    dashboard = json.loads((ROOT / "config" / "grafana" / "resume-agent.json").read_text())
    assert dashboard["uid"] == "resume-agent"
