"""The probes (issue 42, point 1): `/healthz` answers without I/O; `/readyz` answers 200 while every
check holds and 503 as soon as one fails: the database gone, a migration not applied, the disk
below the headroom, the cache server down (on the PostgreSQL + Redis leg), the purge schedule
missing or overdue, the signing key unusable. Public, never throttled, a few queries, and what a
stranger learns is ok or failing per check, nothing more. The admin's retention page shows the
same checks."""

import contextlib
import datetime as dt
import json

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from sessions_app import selectors_health
from sessions_app.choices import CheckStatus, ReadinessCheck
from sessions_app.retention import PURGE_TASK
from tests.support.factories import make_purge_schedule, make_session

pytestmark = pytest.mark.django_db

CHECKS = [check.value for check in ReadinessCheck]
STATUSES = {status.value for status in CheckStatus}
POLICY = reverse("admin:sessions_app_agentsession_policy")


@pytest.fixture(autouse=True)
def ready(settings, tmp_path):
    """Every check holds: a schedule due soon, a known volume with room to spare."""
    make_purge_schedule(timezone.now() + dt.timedelta(minutes=5))
    settings.STORAGE_VOLUME_PATH = str(tmp_path)  # known on either leg (PostgreSQL has none by default)
    settings.STORAGE_HEADROOM_BYTES = 1


def _readiness(client, **headers) -> tuple[int, dict]:
    response = client.get("/readyz", headers=headers)
    return response.status_code, response.json()


def _failing(client) -> set[str]:
    status, body = _readiness(client)
    failing = {name for name, outcome in body["checks"].items() if outcome == CheckStatus.FAILING}
    assert (status == 503) == bool(failing) == (body["status"] == CheckStatus.FAILING), (status, body)
    return failing


def _expected_cache() -> str:
    return CheckStatus.NOT_CONFIGURED if django_settings.CACHES["default"]["BACKEND"].endswith("SQLiteCache") else "ok"


# --- answers -----------------------------------------------------------------------------------


def test_healthz_answers_ok_and_asks_nothing(client, settings, django_assert_num_queries):
    from tests.support.servers import free_port

    # No cache either: one that nothing answers for changes nothing.
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
        }
    }
    with django_assert_num_queries(0):
        response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert "no-store" in response["Cache-Control"]


def test_a_probe_is_never_logged_at_info(client, settings, caplog):
    import logging

    with caplog.at_level(logging.DEBUG):
        assert client.get("/healthz").status_code == client.get("/readyz").status_code == 200
    assert [record for record in caplog.records if record.levelno >= logging.INFO] == []
    settings.STORAGE_HEADROOM_BYTES = 2**62
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        assert client.get("/readyz").status_code == 503
    # Django's own line for a 5xx: the path only, at ERROR.
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records if r.levelno >= logging.INFO] == [
        ("django.request", "ERROR", "Service Unavailable: /readyz")
    ]


def test_readyz_answers_every_check_ok_in_three_queries_none_of_a_session(client):
    make_session(events=2)
    with CaptureQueriesContext(connection) as queries:
        status, body = _readiness(client)
    assert status == 200
    assert body == {"status": "ok", "checks": {**dict.fromkeys(CHECKS, "ok"), "cache": _expected_cache()}}
    assert list(body["checks"]) == CHECKS
    # SELECT 1, the applied migrations, the purge schedule: cheap enough for a probe every second.
    assert len(queries.captured_queries) == 3, queries.captured_queries
    sql = " ".join(query["sql"] for query in queries.captured_queries).lower()
    assert "agentsession" not in sql and "event" not in sql and "state" not in sql


@pytest.mark.sqlite_only
def test_without_a_cache_server_the_cache_is_not_configured(client):
    assert _readiness(client) == (
        200,
        {"status": "ok", "checks": {**dict.fromkeys(CHECKS, "ok"), "cache": "not_configured"}},
    )


def test_head_is_answered_as_get_and_nothing_else_is(client):
    miss = client.get("/no-such-page")
    for path in ("/healthz", "/readyz"):
        head = client.head(path)
        assert head.status_code == 200 and head.content == b"", path
        assert client.post(path).status_code == 405, path
        # Beside them, the service's one 404, as anywhere.
        beside = client.get(path + "/")
        assert (beside.status_code, beside.content) == (404, miss.content) and miss.status_code == 404


# --- each check, failing -----------------------------------------------------------------------


@contextlib.contextmanager
def database_gone(tmp_path):
    """The default connection points at a database that does not exist until the block ends."""
    saved = dict(connection.settings_dict)
    connection.close()
    if connection.vendor == "sqlite":
        connection.settings_dict["NAME"] = str(tmp_path / "no-such-directory" / "sessions.db")
    else:
        connection.settings_dict["NAME"] = f"{saved['NAME']}_gone"  # a database that does not exist
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)


@pytest.mark.django_db(transaction=True)
def test_the_database_gone_makes_readyz_503_and_healthz_still_answers(client, tmp_path):
    with database_gone(tmp_path):
        failing = _failing(client)
        health = client.get("/healthz")
    # The migrations and the schedule are read from the database: not asked, and not ok either.
    assert failing == {"database", "migrations", "purge_schedule"}
    assert health.status_code == 200 and health.json() == {"status": "ok"}


def test_a_migration_not_applied_makes_readyz_503(client):
    from django.db.migrations.recorder import MigrationRecorder

    applied = MigrationRecorder(connection).migration_qs
    newest = applied.filter(app="sessions_app").order_by("-name").first()
    assert _failing(client) == set()
    applied.filter(pk=newest.pk).delete()  # as if the code were deployed and `migrate` not run
    assert _failing(client) == {"migrations"}


def test_the_disk_below_the_headroom_makes_readyz_503(client, settings):
    settings.STORAGE_HEADROOM_BYTES = 2**62  # more than any volume has free
    assert _failing(client) == {"disk"}


@pytest.mark.postgres_only  # the Redis leg: a cache server is configured there
def test_the_cache_server_down_makes_readyz_503(client, settings):
    from tests.support.servers import free_port

    assert _failing(client) == set()
    down = {**settings.CACHES["default"], "LOCATION": f"redis://127.0.0.1:{free_port()}/0"}  # nothing listens
    settings.CACHES = {"default": down}
    assert _failing(client) == {"cache"}


@pytest.mark.parametrize(
    "schedule",
    [
        pytest.param({"next_run": dt.timedelta(hours=-2)}, id="overdue"),
        pytest.param({"next_run": dt.timedelta(minutes=5), "repeats": 0}, id="no-runs-left"),
        pytest.param(None, id="missing"),
    ],
)
def test_the_purge_schedule_missing_or_overdue_makes_readyz_503(client, schedule):
    from django_q.models import Schedule

    if schedule is None:
        Schedule.objects.filter(func=PURGE_TASK).delete()
    else:
        make_purge_schedule(timezone.now() + schedule.pop("next_run"), **schedule)
    assert _failing(client) == {"purge_schedule"}


def test_a_purge_late_by_less_than_its_interval_is_on_time(client):
    make_purge_schedule(timezone.now() - dt.timedelta(minutes=14), minutes=15)
    assert _failing(client) == set()
    make_purge_schedule(timezone.now() - dt.timedelta(minutes=16), minutes=15)
    assert _failing(client) == {"purge_schedule"}


def test_an_unusable_signing_key_makes_readyz_503(client, settings):
    settings.DELETION_LOG_SIGNING_KEY = "PRIVATE+KEY+not-a-key"
    assert _failing(client) == {"signing_key"}


# --- public, cheap, quiet ----------------------------------------------------------------------


def test_the_probes_are_never_throttled(client, settings):
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": dict.fromkeys(rates, "1/min")}
    statuses = {client.get(path).status_code for _ in range(60) for path in ("/healthz", "/readyz")}
    assert statuses == {200}


def test_a_stranger_learns_only_ok_or_failing_per_check(client, settings, tmp_path):
    """No reason, count, path, setting or key: the same bytes whoever asks, in any language, however
    many sessions there are; only the statuses change when a check fails."""
    quiet = client.get("/readyz", headers={"accept-language": "en"}).content
    for _ in range(3):
        make_session(events=1)
    assert client.get("/readyz", headers={"accept-language": "zh-hant"}).content == quiet

    settings.STORAGE_HEADROOM_BYTES = 2**62
    key_file = tmp_path / "secret-place" / "deletion_log_key"
    settings.DELETION_LOG_KEY_FILE = str(key_file)
    key_file.parent.mkdir()
    key_file.write_text("not a key")
    response = client.get("/readyz")
    assert response.status_code == 503
    body = json.loads(response.content)
    assert set(body) == {"status", "checks"} and body["status"] == "failing"
    assert list(body["checks"]) == CHECKS and set(body["checks"].values()) <= STATUSES
    assert body["checks"]["disk"] == body["checks"]["signing_key"] == "failing"
    text = response.content.decode()
    assert not any(character.isdigit() for character in text)  # no size, count or port
    for secret in ("secret-place", str(2**62), django_settings.DATABASES["default"]["NAME"], "not a key"):
        assert str(secret) not in text


def test_the_access_log_leaves_out_the_probes_only():
    import io

    from sessions_app.infra.access_log import PROBE_PATHS
    from tests.support.logs import access_logger

    assert {reverse("healthz"), reverse("readyz")} == PROBE_PATHS
    lines = io.StringIO()
    logger = access_logger(lines)

    class Answer:
        status, sent, headers = "200 OK", 16, []

    for path in ("/healthz", "/readyz", "/agent/sessions"):
        environ = {
            "PATH_INFO": path,
            "RAW_URI": path,
            "REQUEST_METHOD": "GET",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "::1",
        }
        logger.access(Answer(), [], environ, dt.timedelta(milliseconds=1))
    assert [line.split('"')[1] for line in lines.getvalue().splitlines()] == ["GET /agent/sessions HTTP/1.1"]


# --- the admin's retention page ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("language", "title", "failing"), [("en", "Readiness", "failing"), ("zh-hant", "就緒狀態", "異常")]
)
def test_the_retention_page_shows_the_same_checks(admin_client, settings, language, title, failing):
    settings.STORAGE_HEADROOM_BYTES = 2**62
    html = admin_client.get(POLICY, headers={"accept-language": language}).content.decode()
    assert f"<h2>{title}</h2>" in html
    for check in CHECKS:
        assert f'id="readiness-{check}"' in html
    disk = html.split('id="readiness-disk"')[1].split("</tr>")[0]
    assert f"<strong>{failing}</strong>" in disk


# --- the OpenAPI schema ------------------------------------------------------------------------


def test_the_answers_hold_exactly_what_the_schema_declares(client, settings):
    schemas = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()["components"]["schemas"]

    def declared(name: str) -> set[str]:
        assert set(schemas[name]["required"]) == set(schemas[name]["properties"]), name
        return set(schemas[name]["properties"])

    assert set(client.get("/healthz").json()) == declared("HealthResponse")
    assert schemas["CheckStatusEnum"]["enum"] == [status.value for status in CheckStatus]
    for headroom in (1, 2**62):  # 200, then 503
        settings.STORAGE_HEADROOM_BYTES = headroom
        body = client.get("/readyz").json()
        assert set(body) == declared("ReadinessResponse")
        assert set(body["checks"]) == declared("ReadinessChecks") == set(CHECKS)


def test_the_database_and_the_cache_servers_are_given_a_time_to_answer(settings):
    """A blackholed database host or a hung Redis fails a probe after the timeout, not never:
    both clients are told it (seen failing with the OPTIONS taken out of config/settings/base.py)."""
    configured = django_settings
    if configured.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        assert configured.DATABASES["default"]["OPTIONS"]["connect_timeout"] >= 2
    if not selectors_health.cache_is_local():
        options = configured.CACHES["default"]["OPTIONS"]
        assert options["socket_timeout"] == options["socket_connect_timeout"] == configured.BACKEND_TIMEOUT_SECONDS


@pytest.mark.postgres_only  # the Redis leg: a cache server is configured there
def test_a_cache_server_that_never_answers_makes_readyz_503_within_its_timeout(client, settings):
    import socket
    import time

    silent = socket.create_server(("127.0.0.1", 0))  # takes connections, never says a word
    try:
        port = silent.getsockname()[1]
        options = {**settings.CACHES["default"]["OPTIONS"], "socket_timeout": 0.5, "socket_connect_timeout": 0.5}
        settings.CACHES = {
            "default": {**settings.CACHES["default"], "LOCATION": f"redis://127.0.0.1:{port}/0", "OPTIONS": options}
        }
        started = time.monotonic()
        assert _failing(client) == {"cache"}
        assert time.monotonic() - started < 5
    finally:
        silent.close()
