"""What the suite needs under mutmut (`make mutants`) only: loaded by `-p tests.mutation_plugin` in
`[tool.mutmut] pytest_add_cli_args` (pyproject.toml), never by `make test`.

mutmut runs each mutant's tests in a fork of one process that already collected the suite, in
mutants/ (a copy of the tree). So that a run is quick and sees its mutant:
- its tests run fastest first (mutmut stops at the first failure);
- its test database and cache sit in a worker slot's folder, kept from run to run, and its
  database starts as a copy of the slot's migrated template (no migrations per mutant);
- what the parent process built once (the storage's SQL, the URLconf) is built again.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from pathlib import Path

import pytest

_HELD_SLOT: list = []  # the lock file of this process's worker slot, held open for its life


def _under_mutmut(*, stats: bool = False) -> bool:
    """Whether this run tests a mutant (or, with `stats`, is mutmut's run that links tests to functions)."""
    name = os.environ.get("MUTANT_UNDER_TEST", "")
    return "__mutmut_" in name or (stats and name == "stats")


def pytest_configure(config):
    if _under_mutmut():
        # pytest-django's --reuse-db: a slot's database is a fresh copy of its migrated template
        # (see pytest_fixture_setup); in a folder of this process's own it is new anyway.
        config.option.reuse_db = True


def pytest_test_files_folder(base: Path, project: str) -> Path | None:
    """The folder of this slot's test files (tests/conftest.py `_files_of_this_process`), under mutmut."""
    slot = _mutant_slot(base, project)
    return None if slot is None else base / f"resume-agent-{project}-mutmut-slot{slot}"


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


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    """Around pytest-django's `django_db_setup`, in a slot: the database starts as the copy of
    the slot's template, so migrating it again is a no-op; the first run in a slot keeps its
    freshly migrated file as that template, before any test writes to it."""
    if fixturedef.argname != "django_db_setup" or not _HELD_SLOT:
        return (yield)
    from django.conf import settings
    from django.db import connection

    name = settings.DATABASES["default"]["TEST"]["NAME"]
    template = f"{name}.template"
    if os.path.exists(template):
        for sidecar in ("-journal", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(name + sidecar)
        shutil.copyfile(template, name)
    result = yield
    if not os.path.exists(template):
        with request.getfixturevalue("django_db_blocker").unblock():
            connection.close()
        shutil.copyfile(name, f"{template}.tmp")
        os.replace(f"{template}.tmp", template)
    return result


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """A mutant's tests run fastest first (mutmut's own timings of the clean run), and mutmut
    stops at the first failure: a mutant is usually killed by a quick unit test, which
    otherwise waited behind the server tests in an arbitrary order."""
    timings = Path("mutmut-stats.json")  # mutmut runs the tests in mutants/, beside it
    if not _under_mutmut() or not timings.exists():
        return
    duration = json.loads(timings.read_text())["duration_by_test"]
    items.sort(key=lambda item: duration.get(item.nodeid, float("inf")))


# What a process builds once is rebuilt under mutmut, which forks each mutant's run from a
# process that already built it: a mutant of that code would otherwise go unseen.
@pytest.fixture(autouse=True)
def _statements_built_for_this_test():
    """The storage's SQL (built at import, then cached per connection). Per test, and in
    mutmut's stats run too, so every test that runs SQL is one that can see such a mutant."""
    if _under_mutmut(stats=True):
        from sessions_app.infra.sql import Statement

        Statement.forget_all()
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
