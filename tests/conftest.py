import io
import logging
import os
import re
import shutil

import pytest
from django.conf import settings
from django.db import connection


@pytest.fixture
def db_path():
    """Path of the test database file (settings put it on disk, not in memory)."""
    return connection.settings_dict["NAME"]


@pytest.fixture(scope="session", autouse=True)
def _files_of_this_process():
    """The test database and the cache belong to the process that runs the tests.

    Settings name the test database after the process that read them. A runner
    that forks workers after that (mutmut runs each mutant in a fork of one
    process) would have its workers share one database file and one cache, so a
    forked worker gets its own.
    """
    name = settings.DATABASES["default"].get("TEST", {}).get("NAME") if settings.configured else None
    suffix = f"_{os.getpid()}.db"
    if not name or name.endswith(suffix) or not re.search(r"_\d+\.db$", name):
        yield
        return
    from django.test import override_settings

    settings.DATABASES["default"]["TEST"]["NAME"] = re.sub(r"_\d+\.db$", suffix, name)
    cache = {**settings.CACHES["default"], "LOCATION": f"{settings.CACHES['default']['LOCATION']}_{os.getpid()}"}
    with override_settings(CACHES={"default": cache}):
        yield
    shutil.rmtree(cache["LOCATION"], ignore_errors=True)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(_files_of_this_process, django_db_modify_db_settings_parallel_suffix):
    """pytest-django's seam for the test database's name: runs after the fixture above."""


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
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture
def new_session(api):
    """Creates a session through the API; returns (session_id, token)."""
    from .privacy import fixture_resume

    def create(resume_text: str | None = None) -> tuple[str, str]:
        response = api.post("/agent/sessions", {"resume_text": resume_text or fixture_resume()}, format="json")
        assert response.status_code == 201, response.content
        return response.json()["session_id"], response.json()["token"]

    return create


@pytest.fixture
def scripted_model(monkeypatch):
    """Makes the API's Runner use a ScriptedLlm with the given steps; returns the model."""
    from google.adk.runners import Runner

    from agent import APP_NAME, build_agent
    from sessions_app import turns
    from sessions_app.store import DjangoSessionService

    from .scripted_llm import ScriptedLlm

    def install(*steps) -> ScriptedLlm:
        model = ScriptedLlm(steps=list(steps))
        runner = Runner(app_name=APP_NAME, agent=build_agent(model), session_service=DjangoSessionService())
        monkeypatch.setattr(turns, "get_runner", lambda: runner)
        return model

    return install


@pytest.fixture
def captured_logs():
    """Every logger at DEBUG; one handler as configured in settings, one raw control.

    The filter rewrites records in place, so every handler after one that
    has it (settings' console handler included) sees the redacted record: the
    raw control goes first in the root logger's list.
    """
    from sessions_app.redaction import CONTENT_LOGGING_LIBRARIES, RedactLibraryRecords

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


@pytest.fixture
def restore_sqlite_settings(db_path):
    """For tests that switch a protection off on purpose: put it back and
    rebuild the file, so the bytes they left behind reach no other test."""
    yield
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA secure_delete=ON")
        cursor.execute("PRAGMA journal_mode=DELETE")
        cursor.execute("VACUUM")
