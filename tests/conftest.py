import contextlib
import fcntl
import hashlib
import io
import logging
import os
import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests.privacy import database_files


@pytest.fixture
def in_english(settings):
    """Answers in English where a request asks for no language (the default is Traditional Chinese)."""
    settings.LANGUAGE_CODE = "en"


@pytest.fixture
def db_path():
    """Path of the test database file (settings put it on disk, not in memory)."""
    return connection.settings_dict["NAME"]


def pytest_collection_modifyitems(config, items):
    """`sqlite_only` tests are about SQLite's files (secure_delete, journals, file modes, the
    write gate), `postgres_only` ones about the scale-out setup (PostgreSQL + Redis): each is
    skipped, saying why, in the other leg of `make test` (tests/backends.py), which runs both.
    `backend_independent` ones (the agent, the screen, the evals) and `browser` ones run in the
    SQLite leg only."""
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
            if item.get_closest_marker(marker):
                item.add_marker(pytest.mark.skip(reason=f"{reason}: the other leg of `make test` runs it"))
    if _under_mutmut():
        _fastest_first(items)


def _fastest_first(items) -> None:
    """Under mutmut, a mutant's tests run fastest first (mutmut's own timings of the clean
    run), and mutmut stops at the first failure: a mutant is usually killed by a quick unit
    test, which otherwise waited behind the server tests in an arbitrary order."""
    timings = Path("mutmut-stats.json")  # mutmut runs the tests in mutants/, beside it
    if not timings.exists():
        return
    import json

    duration = json.loads(timings.read_text())["duration_by_test"]
    items.sort(key=lambda item: duration.get(item.nodeid, float("inf")))


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


def _mutant_slot(base: Path, project: str) -> int | None:
    """Under mutmut, the worker slot this forked mutant run holds (a flock held for the
    process's life), so runs one after another in a slot reuse its migrated test database.

    The locks sit in a folder of their own: the settings' test database name may already
    point at the folder of the process mutmut forked from, which removed it when it ended."""
    if not _under_mutmut():
        return None
    directory = base / f"resume-agent-{project}-mutmut-slots"
    directory.mkdir(mode=0o700, exist_ok=True)
    for slot in range(16):
        handle = open(directory / f"slot_{slot}.lock", "w")  # noqa: SIM115 (held open)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        _HELD_SLOT.append(handle)
        return slot
    return None


_HELD_SLOT: list = []


def _under_mutmut(*, stats: bool = False) -> bool:
    name = os.environ.get("MUTANT_UNDER_TEST", "")
    return "__mutmut_" in name or (stats and name == "stats")


# What a process builds once is rebuilt under mutmut, which forks each mutant's run from a
# process that already built it: a mutant of that code would otherwise go unseen.
@pytest.fixture(autouse=True)
def _statements_built_for_this_test():
    """The repository's SQL (built at import, then cached per connection). Per test, and in
    mutmut's stats run too, so every test that runs SQL is one that can see such a mutant."""
    if _under_mutmut(stats=True):
        from sessions_app.storage import repository

        for statement in vars(repository).values():
            if isinstance(statement, repository._Sql):
                statement.__init__(statement.template)
    yield


@pytest.fixture(scope="session", autouse=True)
def _urls_built_in_this_run():
    """The URLconf, with the admin's own URLs (`get_urls`)."""
    if _under_mutmut():
        import importlib

        from django.urls import clear_url_caches

        import config.urls

        importlib.reload(config.urls)
        clear_url_caches()
    yield


@pytest.fixture(scope="session", autouse=True)
def _files_of_this_process():
    """The test database and the cache belong to the process that runs the tests, in a
    private directory of its own: per worker slot under mutmut (which runs each mutant in a
    fork of one process; see `django_db_setup`), else per process. The write gate locks a
    database's directory, so two test runs sharing one would wait for each other's writes.

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
    slot = _mutant_slot(base, project)
    label = f"mutmut-slot{slot}" if slot is not None else f"test-{os.getpid()}"
    folder = base / f"resume-agent-{project}-{label}"
    folder.mkdir(mode=0o700, exist_ok=True)
    file_name = "test_sessions_slot.db" if slot is not None else "test_sessions.db"
    settings.DATABASES["default"]["TEST"]["NAME"] = str(folder / file_name)
    cache = settings.CACHES["default"]
    if cache["BACKEND"] == "sessions_app.infra.cache.SQLiteCache":
        cache = {**cache, "LOCATION": str(folder / "cache")}
    with override_settings(CACHES={"default": cache}):
        yield
    if slot is None:  # a slot's directory holds its template for the next mutant's run
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(_files_of_this_process, django_db_modify_db_settings_parallel_suffix):
    """pytest-django's seam for the test database's name: runs after the fixture above.

    In a mutmut slot, the database starts as the copy of the slot's freshly migrated
    template (kept by `django_db_setup`), so migrating it again is a no-op."""
    name = settings.DATABASES["default"]["TEST"].get("NAME", "")
    if name.endswith(".db") and "_slot" in name and os.path.exists(f"{name}.template"):
        for sidecar in ("-journal", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(name + sidecar)
        shutil.copyfile(f"{name}.template", name)


@pytest.fixture(scope="session")
def django_db_keepdb(request):
    """pytest-django's --reuse-db, always on in a mutmut slot (its file is a fresh copy)."""
    return request.config.getvalue("reuse_db") or "_slot" in settings.DATABASES["default"]["TEST"].get("NAME", "")


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's setup; in a mutmut slot, the freshly migrated file is kept as the
    slot's template before any test writes to it (what later runs in the slot start from)."""
    name = settings.DATABASES["default"]["TEST"].get("NAME", "")
    if "_slot" in name and not os.path.exists(f"{name}.template"):
        with django_db_blocker.unblock():
            connection.close()
        shutil.copyfile(name, f"{name}.template.tmp")
        os.replace(f"{name}.template.tmp", f"{name}.template")
    yield


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
    from tests.privacy import fixture_resume

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
    from sessions_app.runtime import turns
    from sessions_app.storage.adk_service import DjangoSessionService
    from tests.scripted_llm import ScriptedLlm

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


@pytest.fixture
def gemini(monkeypatch):
    """The API's Runner on ADK's Gemini class, talking HTTP to a local double of the Gemini REST
    API (tests/gemini_double.py); yields the double. (The server tests have their own: the double
    alone, for the servers they start.)"""
    from google.adk.models.google_llm import Gemini
    from google.adk.runners import Runner

    from agent import APP_NAME, build_agent
    from sessions_app.runtime import turns
    from sessions_app.storage.adk_service import DjangoSessionService
    from tests.gemini_double import GeminiDouble

    double = GeminiDouble().start()
    monkeypatch.setenv("GOOGLE_API_KEY", "key-of-the-local-double")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", double.url)
    runner = Runner(
        app_name=APP_NAME, agent=build_agent(Gemini(model="gemini-2.5-flash")), session_service=DjangoSessionService()
    )
    monkeypatch.setattr(turns, "get_runner", lambda: runner)
    yield double
    double.stop()
