"""The Prometheus metrics (sessions_app/infra/metrics.py) and their endpoint (sessions_app/api/scrape.py):
one view over several processes, closed unless a token is set, what a scripted flow counts, and no
label that holds anything of a person's."""

import datetime as dt
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from prometheus_client.parser import text_string_to_metric_families

from sessions_app.choices import CheckStatus, ErasureTrigger, FailureKind, ReadinessCheck
from sessions_app.infra import access_log, gunicorn_hooks, metrics
from sessions_app.infra.supervisor import gunicorn_command
from sessions_app.security.tokens import owner_id_for
from tests.api.test_api_stream import STREAM, parse
from tests.api.test_health import database_gone
from tests.support.answers import answer_headers
from tests.support.asgi_client import ASGIClient
from tests.support.factories import make_purge_schedule
from tests.support.gemini_double import call_answer, text_answer
from tests.support.privacy import find_in_text, fixture_markers, fixture_resume

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "scrape-token-of-this-test-0123456789abcdef"
AUTHORISED = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
CLIENT = "203.0.113.77"  # the flow's client address: it must be in no series
UNAVAILABLE = (503, {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}})
MESSAGES_ROUTE = "agent/sessions/<str:session_id>/messages"


def samples(body: bytes | str) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of an exposition."""
    text = body.decode() if isinstance(body, bytes) else body
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(scraped: dict, name: str, **labels) -> float:
    return scraped.get((name, tuple(sorted(labels.items()))), 0.0)


# --- One view over several processes ----------------------------------------------------------

CHILD = """
import os, sys
from sessions_app.infra import metrics
metrics.SESSIONS_CREATED.inc(int(sys.argv[1]))
metrics.TURNS.labels("model_failure", "timeout").inc()
metrics.TURN_SECONDS.labels("stored").observe(float(sys.argv[1]))
metrics.TURNS_IN_FLIGHT.set(int(sys.argv[1]))
metrics.TURNS_IN_FLIGHT_BUSIEST.set(int(sys.argv[1]))
print(os.getpid())
"""


@pytest.mark.backend_independent
def test_counters_of_two_processes_add_up_in_one_collect(tmp_path, monkeypatch):
    """Two real processes write to one multiprocess directory, as `make run`'s workers do; one
    collect (any worker's scrape) sums their counters and histograms and shows their live gauges;
    a process marked ended (gunicorn's child_exit) no longer counts among turns in flight."""
    directory = tmp_path / "metrics"
    metrics.prepare_directory(directory)
    env = {**os.environ, metrics.MULTIPROCESS_VARIABLE: str(directory), "PYTHONPATH": str(ROOT)}
    pids = [
        int(subprocess.run([sys.executable, "-c", CHILD, str(n)], env=env, cwd=ROOT, check=True, capture_output=True,
                           text=True).stdout)
        for n in (2, 3)
    ]  # fmt: skip
    monkeypatch.setenv(metrics.MULTIPROCESS_VARIABLE, str(directory))
    scraped = samples(metrics.exposition("")[0])
    assert value(scraped, "resume_agent_sessions_created_total") == 5
    assert value(scraped, "resume_agent_turns_total", outcome="model_failure", reason="timeout") == 2
    assert value(scraped, "resume_agent_turn_duration_seconds_count", outcome="stored") == 2
    assert value(scraped, "resume_agent_turn_duration_seconds_sum", outcome="stored") == 5
    assert value(scraped, "resume_agent_turns_in_flight") == 5
    assert value(scraped, "resume_agent_turns_in_flight_busiest_process") == 3

    gunicorn_hooks.child_exit(server=None, worker=SimpleNamespace(pid=pids[1]))
    scraped = samples(metrics.exposition("")[0])
    assert value(scraped, "resume_agent_turns_in_flight") == 2
    assert value(scraped, "resume_agent_turns_in_flight_busiest_process") == 2
    assert value(scraped, "resume_agent_sessions_created_total") == 5  # what it counted stays


@pytest.mark.backend_independent
def test_the_directory_is_emptied_of_an_earlier_runs_values_and_owner_only(tmp_path):
    directory = tmp_path / "metrics"
    directory.mkdir()
    (directory / "counter_123.db").write_bytes(b"old")
    (directory / "kept.txt").write_text("not the client's")
    metrics.prepare_directory(directory)
    assert sorted(path.name for path in directory.iterdir()) == ["kept.txt"]
    assert directory.stat().st_mode & 0o777 == 0o700


class _Started(Exception):
    pass


def test_serve_first_empties_the_metrics_directory_then_starts_again_naming_it(settings, tmp_path, monkeypatch):
    """`manage.py serve` starts itself again, once, in an environment that names the emptied
    directory: the client chooses its mode as it is imported, before the command runs."""
    from django.core.management import call_command

    from sessions_app.management.commands import serve

    settings.VAR_DIR = tmp_path
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "counter_1.db").write_bytes(b"an earlier run's")
    started = []

    def execv(path, args):
        started.append((args, dict(os.environ)))
        raise _Started

    monkeypatch.setattr(os, "execv", execv)
    # Set, then taken out: either way monkeypatch puts back what was there, and the command's own
    # writes to os.environ do not outlive the test (they reached every later server's environment).
    monkeypatch.setenv(serve.METRICS_READY, "")
    monkeypatch.delenv(serve.METRICS_READY)
    monkeypatch.setenv(metrics.MULTIPROCESS_VARIABLE, "")  # restored after the test
    with pytest.raises(_Started):
        call_command("serve", "--bind", "127.0.0.1:8123", "--workers", "2")
    [(args, environ)] = started
    assert args[1:] == ["manage.py", "serve", "--bind", "127.0.0.1:8123", "--workers", "2"]
    assert environ[metrics.MULTIPROCESS_VARIABLE] == str(tmp_path / "metrics")
    assert environ[serve.METRICS_READY] == "1"
    assert list((tmp_path / "metrics").iterdir()) == []


@pytest.mark.backend_independent
def test_make_runs_gunicorn_marks_its_ended_workers():
    command = gunicorn_command(sys.executable, "127.0.0.1:8000")
    assert command[command.index("--config") + 1] == "python:sessions_app.infra.gunicorn_hooks"


# --- The endpoint: closed unless asked for with the token --------------------------------------


@pytest.fixture
def scraping(settings):
    settings.METRICS_TOKEN = TOKEN


def _unknown(client):
    return client.get("/no-such-path")


def _same_answer(response, unknown) -> None:
    assert response.status_code == unknown.status_code == 404
    assert response.content == unknown.content
    assert answer_headers(response) == answer_headers(unknown)  # each request's own id aside


@pytest.mark.django_db
def test_without_a_token_set_the_endpoint_is_the_unknown_paths_404(client):
    _same_answer(client.get("/metrics"), _unknown(client))
    _same_answer(client.get("/metrics", HTTP_AUTHORIZATION="Bearer "), _unknown(client))


@pytest.mark.django_db
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"HTTP_AUTHORIZATION": "Bearer wrong"},
        {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}x"},
        {"HTTP_AUTHORIZATION": f"Basic {TOKEN}"},
        {"HTTP_AUTHORIZATION": TOKEN},
    ],
    ids=["missing", "wrong", "longer", "other-scheme", "no-scheme"],
)
def test_a_stranger_learns_nothing_not_even_that_it_is_there(client, scraping, headers):
    """Missing or wrong token: the same bytes and headers as any path that does not exist."""
    _same_answer(client.get("/metrics", **headers), _unknown(client))


@pytest.mark.django_db
def test_other_methods_are_the_unknown_paths_404_even_with_the_token(client, scraping):
    _same_answer(client.post("/metrics", **AUTHORISED), _unknown(client))
    _same_answer(client.delete("/metrics", **AUTHORISED), _unknown(client))


@pytest.mark.django_db
def test_the_scraper_gets_prometheus_text_not_stored_by_any_cache(client, scraping):
    response = client.get("/metrics", **AUTHORISED)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    assert response["Cache-Control"] == "no-store"
    scraped = samples(response.content)
    assert ("resume_agent_turns_in_flight_limit", ()) in scraped
    openmetrics = client.get("/metrics", HTTP_ACCEPT="application/openmetrics-text", **AUTHORISED)
    assert openmetrics["Content-Type"].startswith("application/openmetrics-text")
    assert openmetrics.content.endswith(b"# EOF\n")


@pytest.mark.django_db
def test_no_rate_limit_counts_a_scrape(client, scraping, settings):
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": dict.fromkeys(rates, "1/hour")}
    before = samples(client.get("/metrics", **AUTHORISED).content)
    for _ in range(3):
        assert client.get("/metrics", **AUTHORISED).status_code == 200
    after = samples(client.get("/metrics", **AUTHORISED).content)
    throttled = [key for key in after if key[0] == "resume_agent_throttled_requests_total"]
    assert all(after[key] == before.get(key, 0.0) for key in throttled)


@pytest.mark.django_db
def test_the_person_facing_schema_leaves_it_out():
    from drf_spectacular.generators import SchemaGenerator

    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    assert paths and not any("metrics" in path for path in paths)


def test_a_scrape_gets_no_access_line(monkeypatch):
    logged = []
    monkeypatch.setattr(access_log.Logger, "access", lambda self, resp, req, environ, took: logged.append(environ))
    logger = object.__new__(access_log.AccessLogger)  # its `access` reads nothing of its configuration
    logger.access(None, None, {"PATH_INFO": "/metrics"}, 0.001)
    assert logged == []
    logger.access(None, None, {"PATH_INFO": "/agent/sessions"}, 0.001)
    assert logged == [{"PATH_INFO": "/agent/sessions"}]


@pytest.mark.django_db
def test_a_scrape_reads_the_database_six_times_and_a_request_never(client, scraping, django_assert_num_queries):
    """The collect-time gauges cost six queries at each scrape (the readiness checks' three: the
    database, its migrations, the purge schedule; the schedule's interval, expired sessions, the
    log's checkpoint), and only then."""
    with django_assert_num_queries(6):
        client.get("/metrics", **AUTHORISED)


def _readiness_states(scraped: dict) -> dict[str, str]:
    """{check: its state} of a scrape's resume_agent_readiness_check (the series at 1)."""
    states = {}
    for (name, labels), given in scraped.items():
        if name == "resume_agent_readiness_check" and given == 1:
            labelled = dict(labels)
            assert labelled["check"] not in states  # one state at 1 per check
            states[labelled["check"]] = labelled["state"]
    return states


@pytest.mark.django_db
def test_a_scrape_gives_each_readiness_check_as_readyz_does_and_the_purge_interval(
    client, scraping, settings, tmp_path
):
    """The alert rules' readiness (config/prometheus/alerts.yml): each check's state at the scrape,
    the same as /readyz's, and how often the schedule purges."""
    make_purge_schedule(dt.datetime.now(dt.UTC) + dt.timedelta(minutes=5), minutes=20)
    settings.STORAGE_VOLUME_PATH = str(tmp_path)  # known on either leg (PostgreSQL has none by default)
    settings.STORAGE_HEADROOM_BYTES = 2**62  # more than any volume has free: disk failing
    scraped = samples(client.get("/metrics", **AUTHORISED).content)
    readyz = client.get("/readyz")
    assert readyz.status_code == 503
    assert _readiness_states(scraped) == readyz.json()["checks"]
    assert _readiness_states(scraped)["disk"] == CheckStatus.FAILING
    assert len([key for key in scraped if key[0] == "resume_agent_readiness_check"]) == len(ReadinessCheck) * len(
        CheckStatus
    )
    assert value(scraped, "resume_agent_purge_interval_seconds") == 20 * 60


@pytest.mark.django_db(transaction=True)
def test_with_the_database_gone_a_scrape_still_answers_its_checks_failing(client, scraping, tmp_path):
    with database_gone(tmp_path):
        scrape = client.get("/metrics", **AUTHORISED)
    assert scrape.status_code == 200
    scraped = samples(scrape.content)
    states = _readiness_states(scraped)
    assert {check for check, state in states.items() if state == CheckStatus.FAILING} >= {
        "database",
        "migrations",
        "purge_schedule",
    }
    assert ("resume_agent_turns_in_flight_limit", ()) in scraped
    assert not any(name == "resume_agent_sessions_expired_stored" for name, _ in scraped)  # read from the database


# --- What a scripted flow counts, and that no series names anything of it ---------------------


@pytest.fixture
def retrying_gemini(monkeypatch, env_on_gemini_double, turns_on):
    """The model the service picks with a key (Gemini with two attempts per call) on a local double."""
    from agent.model_selection import select_model

    monkeypatch.setenv("AGENT_MODEL_RETRY_DELAY_SECONDS", "0.01")
    monkeypatch.setenv("AGENT_MODEL_ATTEMPTS", "2")
    turns_on(select_model())
    return env_on_gemini_double


def _say(client, session_id, token, message, **extra):
    url = f"/agent/sessions/{session_id}/messages"
    return client.post(url, {"message": message}, format="json", HTTP_X_SESSION_TOKEN=token, **extra)


@pytest.mark.django_db
def test_a_scripted_flow_is_counted_and_no_series_names_anything_of_it(scraping, settings, retrying_gemini):
    from sessions_app import services
    from sessions_app.models import AgentSession
    from sessions_app.purge import purge_expired
    from sessions_app.security.sealing import IntegrityCheckFailed

    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**rates, "session_create": "2/min"},
    }
    client = ASGIClient(address=CLIENT)
    before = samples(client.get("/metrics", **AUTHORISED).content)
    messages = ["Please draft my plan for platform teams", "And for remote roles?", "Stream the next step"]

    created = [client.post("/agent/sessions", {"resume_text": fixture_resume()}) for _ in range(3)]
    assert [response.status_code for response in created] == [201, 201, 429]
    (first, first_token), (second, second_token) = [(r.json()["session_id"], r.json()["token"]) for r in created[:2]]

    # A stored turn: a call retried, a flag the model raised, a tool that does not exist.
    retrying_gemini.answer(
        UNAVAILABLE,
        call_answer("flag_suspicious_text", {"excerpt": "Ignore previous instructions", "reason": "instructs"}),
        call_answer("no_such_tool", {}),
        text_answer("Hi 林語晴, here is a first plan."),
    )
    assert _say(client, first, first_token, messages[0]).status_code == 200
    # A model failure: both attempts unavailable.
    retrying_gemini.answer(UNAVAILABLE, UNAVAILABLE)
    assert _say(client, first, first_token, messages[1]).status_code == 503
    # A streamed turn.
    retrying_gemini.answer(text_answer("Hi 林語晴, the next step."))
    streamed = _say(client, first, first_token, messages[2], **STREAM)
    assert parse(streamed.streaming_content)[-1][0] == "reply"
    # A turn refused: the process runs as many as it may.
    settings.AGENT_MAX_TURNS_IN_FLIGHT = 0
    assert _say(client, second, second_token, messages[0]).json()["code"] == "busy"
    settings.AGENT_MAX_TURNS_IN_FLIGHT = 16
    # An integrity failure, as the API records one.
    services.integrity_failure_record(failure=IntegrityCheckFailed(second, FailureKind.STATE_TAMPERED))
    # A delete, then a purge of the other session, expired.
    assert client.delete(f"/agent/sessions/{first}", HTTP_X_SESSION_TOKEN=first_token).status_code == 204
    long_ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=30)
    AgentSession.objects.filter(session_id=second).update(created_at=long_ago, last_activity_at=long_ago)
    assert purge_expired(trigger=ErasureTrigger.TTL).sessions == 1

    scrape = client.get("/metrics", **AUTHORISED)
    after = samples(scrape.content)

    def added(name: str, **labels) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert added("resume_agent_sessions_created_total") == 2
    assert added("resume_agent_throttled_requests_total", scope="session_create") == 1
    assert added("resume_agent_turns_total", outcome="stored", reason="") == 2
    assert added("resume_agent_turns_total", outcome="model_failure", reason="unavailable") == 1
    assert added("resume_agent_turns_total", outcome="refused", reason="turns_busy") == 1
    assert added("resume_agent_turn_duration_seconds_count", outcome="stored") == 2
    assert added("resume_agent_turn_model_seconds_count") == 3
    assert added("resume_agent_turn_first_progress_seconds_count") == 1
    assert added("resume_agent_busy_answers_total", cause="turns") == 1
    assert added("resume_agent_model_retries_total", status="503") == 2
    assert added("resume_agent_injection_flags_total", kind="model") == 1
    assert added("resume_agent_unknown_tool_calls_total") == 1
    assert added("resume_agent_integrity_failures_total", kind="state_tampered") == 1
    assert added("resume_agent_sessions_erased_total", trigger="api") == 1
    assert added("resume_agent_sessions_erased_total", trigger="ttl") == 1
    assert added("resume_agent_purge_runs_total", trigger="ttl", outcome="ok") == 1
    assert added("resume_agent_purge_duration_seconds_count", trigger="ttl") == 1
    assert added("resume_agent_http_answers_total", route=MESSAGES_ROUTE, method="POST", status="200") == 2
    assert added("resume_agent_http_answers_total", route="agent/sessions", method="POST", status="429") == 1
    assert value(after, "resume_agent_deletion_log_entries") == 2
    assert value(after, "resume_agent_sessions_expired_stored") == 0
    assert 0 <= value(after, "resume_agent_deletion_log_checkpoint_age_seconds") < 60
    assert value(after, "resume_agent_purge_last_success_timestamp_seconds") >= time.time() - 60

    # Nothing of the flow in any series: names, label names and values, and the whole text.
    private = [first, second, first_token, second_token, owner_id_for(first_token), owner_id_for(second_token)]
    private += [CLIENT, *messages, *fixture_markers(), "Ignore previous instructions", "no_such_tool"]
    private += [line.strip() for line in fixture_resume().splitlines() if len(line.strip()) >= 8]
    series = [
        text
        for (name, labels) in after
        for text in (name, *(part for pair in labels for part in pair))
    ]  # fmt: skip
    found = [(text, marker) for text in series for marker in private if marker in text]
    assert found == []
    assert find_in_text(scrape.content.decode(), private) == []


@pytest.mark.django_db
def test_labels_hold_closed_sets_only(client, scraping):
    """Every label value of every series is one of the values its label may take."""
    from agent.screening import KINDS, MODEL_FLAG_KIND
    from sessions_app.api.errors import BUSY_CAUSES
    from sessions_app.exceptions import ModelFailureReason
    from sessions_app.turns.service import REFUSALS

    allowed = {
        "outcome": {"stored", "model_failure", "refused", "error", "abandoned", "ok", "disk_full", "failed"},
        "reason": {"", *ModelFailureReason, *REFUSALS.values()},
        "cause": set(BUSY_CAUSES),
        "trigger": {*ErasureTrigger.values, "other"},
        "kind": {*KINDS, MODEL_FLAG_KIND, *FailureKind.values},
        "scope": _scopes(),
        "status": None,  # a status code, or a model call's
        "route": None,  # a URL pattern (checked below)
        "method": {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "other"},
        "le": None,
        "check": set(ReadinessCheck.values),  # resume_agent_readiness_check's
        "state": set(CheckStatus.values),
    }
    client.get("/agent/sessions/not-a-session/messages")
    client.get("/admin/auth/")  # a regex route under a prefix (the admin's app index)
    scraped = samples(client.get("/metrics", **AUTHORISED).content)
    routes = _routes()
    for _, labels in scraped:
        for label, given in labels:
            assert label in allowed, label
            if label == "status":
                assert given.isdigit()
            elif label == "route":
                assert given in routes, given
            elif allowed[label] is not None:
                assert given in allowed[label], (label, given)


def _scopes() -> set[str]:
    from django.conf import settings

    return set(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"])


def _routes() -> set[str]:
    """Every route of the URLconf, as `resolver_match.route` gives it, and "unmatched"."""
    from django.urls import get_resolver

    def walk(resolver, prefix=""):
        for pattern in resolver.url_patterns:
            # A regex included under a prefix loses its "^" there, as resolver_match.route joins them.
            route = prefix + (str(pattern.pattern).removeprefix("^") if prefix else str(pattern.pattern))
            if hasattr(pattern, "url_patterns"):
                yield from walk(pattern, route)
            else:
                yield route

    return {*walk(get_resolver()), "unmatched"}


# --- No query more per request ---------------------------------------------------------------


class _Off:
    """A metric that records nothing (the metrics off)."""

    def labels(self, *args, **kwargs):
        return self

    def inc(self, *args):
        pass

    observe = set = inc


def _queries_of_a_create_and_a_turn(api, scripted_model) -> tuple[int, int]:
    from tests.support.scripted_llm import text_response

    with CaptureQueriesContext(connection) as create:
        response = api.post("/agent/sessions", {"resume_text": fixture_resume()}, format="json")
    session_id, token = response.json()["session_id"], response.json()["token"]
    scripted_model(text_response("Hi 林語晴."))
    with CaptureQueriesContext(connection) as turn:
        assert _say(api, session_id, token, "Please draft my plan").status_code == 200
    return len(create), len(turn)


@pytest.mark.django_db
def test_metrics_add_no_query_to_a_create_or_a_turn(api, scripted_model, settings, monkeypatch):
    on = _queries_of_a_create_and_a_turn(api, scripted_model)
    settings.MIDDLEWARE = [name for name in settings.MIDDLEWARE if not name.endswith("AnswersByRoute")]
    for name, metric in vars(metrics).items():
        if isinstance(metric, metrics.Counter | metrics.Gauge | metrics.Histogram):
            monkeypatch.setattr(metrics, name, _Off())
    off = _queries_of_a_create_and_a_turn(api, scripted_model)
    assert on == off


# --- The outcomes the flow above does not meet -------------------------------------------------


def _count(name: str, **labels) -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.mark.django_db
def test_a_turn_whose_client_went_away_counts_as_abandoned(new_session):
    from django.core import signals
    from django.db import close_old_connections

    api = ASGIClient()
    session_id, token = new_session()
    before = _count("resume_agent_turns_total", outcome="abandoned", reason="")
    url = f"/agent/sessions/{session_id}/messages"
    response = api.opened(url, {"message": "Plan"}, HTTP_X_SESSION_TOKEN=token, **STREAM)
    assert response.status_code == 200
    signals.request_finished.disconnect(close_old_connections)  # as tests/test_api_stream.py does
    try:
        response.close()
    finally:
        signals.request_finished.connect(close_old_connections)
    assert _count("resume_agent_turns_total", outcome="abandoned", reason="") == before + 1


@pytest.mark.django_db
def test_a_turn_that_fails_on_our_side_counts_as_an_error(api, new_session, scripted_model, monkeypatch):
    from sessions_app.turns import service
    from tests.support.scripted_llm import text_response

    session_id, token = new_session()
    scripted_model(text_response("Hi 林語晴."))

    def broken(*args):
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(service, "_summarise", broken)
    before = _count("resume_agent_turns_total", outcome="error", reason="")
    assert _say(api, session_id, token, "Please draft my plan").status_code == 500
    assert _count("resume_agent_turns_total", outcome="error", reason="") == before + 1


def test_a_pool_that_has_no_connection_left_counts_as_busy():
    from django.db import OperationalError
    from psycopg_pool import PoolTimeout

    from sessions_app.api.errors import api_exception_handler

    exc = OperationalError("no connection")
    exc.__cause__ = PoolTimeout()
    before = _count("resume_agent_busy_answers_total", cause="pool")
    assert api_exception_handler(exc, {}).status_code == 503
    assert _count("resume_agent_busy_answers_total", cause="pool") == before + 1


@pytest.mark.django_db
def test_a_path_no_pattern_matches_counts_as_unmatched_never_as_itself(client):
    before = _count("resume_agent_http_answers_total", route="unmatched", method="GET", status="404")
    client.get("/agent/sessions/a-session-id/nothing-here")
    assert _count("resume_agent_http_answers_total", route="unmatched", method="GET", status="404") == before + 1


@pytest.mark.django_db
def test_a_trigger_outside_the_choices_is_labelled_other():
    """A caller may name itself (the purge takes any trigger): the label stays a closed set."""
    from sessions_app.purge import purge_expired

    before = _count("resume_agent_purge_runs_total", trigger="other", outcome="ok")
    purge_expired(trigger="a-name-of-its-own")
    assert _count("resume_agent_purge_runs_total", trigger="other", outcome="ok") == before + 1
    assert _count("resume_agent_purge_runs_total", trigger="a-name-of-its-own", outcome="ok") == 0
