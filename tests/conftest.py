import hashlib
import io
import json
import logging
import os
import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests.support.browser import asgi_live_server  # noqa: F401  (a fixture, for the browser tests)
from tests.support.privacy import database_files


@pytest.fixture
def in_english(settings, api):
    """Answers in English: what a request that asks for no language gets, as the `api` client's now
    do; and no language left active in this thread by an earlier test (a change of LANGUAGE_CODE
    resets them)."""
    settings.LANGUAGE_CODE = "en"
    del api.defaults["HTTP_ACCEPT_LANGUAGE"]


@pytest.fixture
def db_path():
    """Path of the test database file (settings put it on disk, not in memory)."""
    return connection.settings_dict["NAME"]


def pytest_collection_modifyitems(config, items):
    """`sqlite_only` tests are about SQLite's files (secure_delete, journals, file modes, the
    write gate), `postgres_only` ones about the scale-out setup (PostgreSQL + Redis): each is
    skipped, saying why, in the other leg of `make test` (tests/backends.py), which runs both.
    `backend_independent` ones (the agent, the screen, the evals) and `browser` ones run in the
    SQLite leg only, but for `both_backends` browser tests, whose raw scans read the leg's own
    database and cache (tests/page/test_page_account.py)."""
    if not settings.configured:
        return
    on_sqlite = settings.DATABASES["default"]["ENGINE"] == "sessions_app.infra.sqlite_backend"
    skipped = (
        {"postgres_only": "needs PostgreSQL + Redis"}
        if on_sqlite
        else {
            "sqlite_only": "about SQLite",
            # The same test on either leg (no database or cache of the leg's): run once.
            "backend_independent": "uses no database or cache",
            # What a browser shows is the same page on either backend; its API runs on both legs.
            "browser": "the page in a browser",
        }
    )
    for item in items:
        for marker, reason in skipped.items():
            if marker == "browser" and item.get_closest_marker("both_backends"):
                continue
            if item.get_closest_marker(marker):
                item.add_marker(pytest.mark.skip(reason=f"{reason}: the other leg of `make test` runs it"))


@pytest.fixture
def stored_files():
    """A function that returns the files holding the test database now, to scan their bytes.

    SQLite: the database file and its sidecars. PostgreSQL: after a CHECKPOINT (so
    what was written is in the files, not only in shared buffers), the files of the
    test database and every WAL segment of the server (WAL is shared by all of its
    databases). Reading them needs the server's data directory on this machine.
    """
    if connection.vendor == "sqlite":
        return lambda: database_files(connection.settings_dict["NAME"])

    def postgres_files() -> list[Path]:
        with connection.cursor() as cursor:
            cursor.execute("CHECKPOINT")
            cursor.execute("SHOW data_directory")
            data_directory = Path(cursor.fetchone()[0])
            cursor.execute("SELECT oid FROM pg_database WHERE datname = current_database()")
            oid = cursor.fetchone()[0]
        files = [*(data_directory / "base" / str(oid)).iterdir(), *(data_directory / "pg_wal").iterdir()]
        return sorted(path for path in files if path.is_file())

    return postgres_files


class _Hooks:
    @pytest.hookspec(firstresult=True)
    def pytest_test_files_folder(self, base: Path, project: str) -> Path | None:
        """A folder for this run's test database and cache, kept after the run; None for one of
        this process's own, removed after it. (`make mutants` gives one per worker slot:
        tests/mutation_plugin.py.)"""


def pytest_addhooks(pluginmanager):
    pluginmanager.add_hookspecs(_Hooks)


@pytest.fixture(scope="session", autouse=True)
def _files_of_this_process(request):
    """The test database and the cache belong to the process that runs the tests, in a
    private directory of its own. The write gate locks a database's directory, so two test
    runs sharing one would wait for each other's writes.

    On a tmpfs (/dev/shm) where the machine has one: a test needs no durability, and the
    fsyncs of SQLite's commits took about a third of the suite's time on disk.
    """
    name = settings.DATABASES["default"].get("TEST", {}).get("NAME") if settings.configured else None
    if not name or not name.endswith(".db"):  # not SQLite: a database server
        yield
        return
    from django.test import override_settings

    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else Path(name).parent
    project = hashlib.sha256(str(Path(__file__).resolve().parent).encode()).hexdigest()[:8]
    kept = request.config.hook.pytest_test_files_folder(base=base, project=project)
    folder = kept or base / f"resume-agent-{project}-test-{os.getpid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    settings.DATABASES["default"]["TEST"]["NAME"] = str(folder / "test_sessions.db")
    cache = settings.CACHES["default"]
    if cache["BACKEND"] == "sessions_app.infra.cache.SQLiteCache":
        cache = {**cache, "LOCATION": str(folder / "cache")}
    with override_settings(CACHES={"default": cache}):
        yield
    if not kept:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(_files_of_this_process, django_db_modify_db_settings):
    """pytest-django's seam for the test database's name: runs after the fixture above."""


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup):
    """pytest-django's test database, and before it is dropped this process's PostgreSQL presence
    (the row locks' holder, infra/postgresql_presence.py), which would keep it in use."""
    yield
    from sessions_app.infra import postgresql_presence

    postgresql_presence.close()


@pytest.fixture(autouse=True)
def _clear_cache():
    # Throttle counters live in the (file) cache; each test starts clean.
    # (The agent tests also run without Django: `-p no:django`.)
    if settings.configured:
        from django.core.cache import cache

        cache.clear()
    yield


# Tests never call a real model: without a key the agent uses the offline model.
os.environ.pop("GOOGLE_API_KEY", None)
os.environ.pop("GOOGLE_GENAI_USE_VERTEXAI", None)


@pytest.fixture
def api():
    """DRF's test client, as a browser in Taiwan asks (its answers in Traditional Chinese); a test of
    another language sets or drops HTTP_ACCEPT_LANGUAGE in `api.defaults`."""
    from rest_framework.test import APIClient

    return APIClient(HTTP_ACCEPT_LANGUAGE="zh-TW,zh;q=0.9")


@pytest.fixture
def new_session(api):
    """`new_session(resume_text=None)`: a session created through the API (tests/support/session_client.py);
    returns (session_id, token)."""
    from tests.support.session_client import create_session

    return lambda resume_text=None: create_session(api, resume_text)


@pytest.fixture
def turns_on(settings):
    """`turns_on(model)`: the API's turns run on a Runner of the agent on `model` (a test's) until
    the test ends; returns that Runner. It is injected through the setting AGENT_RUNNER_FACTORY
    (pytest-django's `settings`: put back after the test), which drops the Runner built before
    (sessions_app/turns/runner.py)."""
    from sessions_app.turns.runner import build_runner

    def install(model):
        runner = build_runner(model)
        settings.AGENT_RUNNER_FACTORY = lambda: runner
        return runner

    return install


@pytest.fixture
def scripted_model(turns_on):
    """Makes the API's Runner use a ScriptedLlm with the given steps; returns the model."""
    from tests.support.scripted_llm import ScriptedLlm

    def install(*steps) -> ScriptedLlm:
        model = ScriptedLlm(steps=list(steps))
        turns_on(model)
        return model

    return install


@pytest.fixture
def sealed_with_the_modules_token(request):
    """The store seals with keys from the request's token, as under the API: during the test, the
    token is its module's TOKEN (for tests that call the store without a request)."""
    from sessions_app.security.crypto import token_context

    with token_context(request.module.TOKEN):
        yield


@pytest.fixture
def creating_fails(api, monkeypatch):
    """`creating_fails(error)`: a session's creation raises `error` inside the view (where its token
    is made: `failing_token`), and `api` returns the 500 answer instead of raising it."""
    from sessions_app import services

    api.raise_request_exception = False

    def fail_with(error: Exception) -> None:
        def failing_token():
            raise error

        monkeypatch.setattr(services, "new_token", failing_token)

    return fail_with


@pytest.fixture
def log_format():
    """The format of captured_logs' protected handler: LOG_FORMAT's values. A test that holds in
    both says `@pytest.mark.parametrize("log_format", LOG_FORMATS)`
    (tests/support/privacy.py)."""
    return "text"


@pytest.fixture
def captured_logs(log_format):
    """Every logger at DEBUG; one handler as configured in settings, one raw control.

    The filter rewrites records in place, so every handler after one that
    has it (settings' console handler included) sees the redacted record: the
    raw control goes first in the root logger's list. In `json`, every line the
    protected handler wrote is checked to be one JSON object.
    """
    from sessions_app.infra.json_logs import JsonLines
    from sessions_app.infra.redaction import CONTENT_LOGGING_LIBRARIES, RedactLibraryRecords

    loggers = (
        "",
        "asyncio",
        "django",
        "django.request",
        "django_q",
        "sessions_app",
        "agent",
        *CONTENT_LOGGING_LIBRARIES,
    )
    protected, raw = io.StringIO(), io.StringIO()
    raw_handler = logging.StreamHandler(raw)
    protected_handler = logging.StreamHandler(protected)
    protected_handler.addFilter(RedactLibraryRecords())
    formatter = logging.Formatter("%(levelname)s %(name)s: %(message)s")
    levels = {}
    for handler in (raw_handler, protected_handler):
        handler.setLevel(logging.DEBUG)
        handler.setFormatter(formatter)
    if log_format == "json":
        protected_handler.setFormatter(JsonLines())
    logging.getLogger().handlers.insert(0, raw_handler)
    logging.getLogger().addHandler(protected_handler)
    for name in loggers:
        levels[name] = logging.getLogger(name).level
        logging.getLogger(name).setLevel(logging.DEBUG)
    yield protected, raw
    for handler in (raw_handler, protected_handler):
        logging.getLogger().removeHandler(handler)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
    if log_format == "json":
        assert all(isinstance(json.loads(line), dict) for line in protected.getvalue().splitlines())


@pytest.fixture
def restore_sqlite_settings(db_path):
    """For tests that switch a protection off on purpose: put it back and
    rebuild the file, so the bytes they left behind reach no other test."""
    yield
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA secure_delete=ON")
        cursor.execute("PRAGMA journal_mode=DELETE")
        cursor.execute("VACUUM")


@pytest.fixture
def gemini_double():
    """A local double of the Gemini REST API (tests/support/gemini_double.py), alone: running until
    the test ends, nothing pointed at it."""
    from tests.support.gemini_double import GeminiDouble

    double = GeminiDouble().start()
    yield double
    double.stop()


@pytest.fixture
def env_on_gemini_double(monkeypatch, gemini_double):
    """The double, and this process's environment pointing google-genai at it (GOOGLE_API_KEY,
    GOOGLE_GEMINI_BASE_URL): the settings' model choice is then Gemini; returns the double."""
    for name, value in gemini_double.environment().items():
        monkeypatch.setenv(name, value)
    return gemini_double


@pytest.fixture
def runner_on_gemini_double(env_on_gemini_double, turns_on):
    """The API's turns on ADK's Gemini class, talking HTTP to the double (the environment pointing
    at it, as above); returns the double."""
    from google.adk.models.google_llm import Gemini

    turns_on(Gemini(model="gemini-2.5-flash"))
    return env_on_gemini_double


@pytest.fixture
def telemetry():
    """What ADK traces during the test (spans, and the log records of its GenAI events), kept in
    memory by OpenTelemetry's SDK (tests/support/otel_capture.py); the service itself exports nothing."""
    from tests.support.otel_capture import Telemetry

    captured = Telemetry()
    yield captured
    captured.close()
