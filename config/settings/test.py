"""The tests' settings (pyproject.toml: --ds=config.settings.test): the service's, plus what a
test run needs of its own. Processes that tests start run on `config.settings`."""

import os
import secrets

from config.settings import base
from config.settings.service import *  # noqa: F403
from config.settings.service import CACHES, DATABASES, Q_CLUSTER, STORAGES, VAR_DIR

# No key given: one made for this test process, in memory (the processes a test starts are
# handed it: tests/serving/test_servers.py).
SECRET_KEY = base.SECRET_KEY or secrets.token_urlsafe(50)

# Tests run on a real file (not :memory:) so they can scan its bytes; one file or database per
# test process, so two test runs (or xdist workers) never share (or lock) one.
if DATABASES["default"]["ENGINE"] == "sessions_app.infra.sqlite_backend":
    TEST_DATABASE_NAME = str(VAR_DIR / f"test_sessions_{os.getpid()}.db")
else:
    TEST_DATABASE_NAME = f"test_sessions_{os.getpid()}"
DATABASES = {"default": {**DATABASES["default"], "TEST": {"NAME": TEST_DATABASE_NAME}}}

# The throttles' counters apart from a local service's on the same var/.
if CACHES["default"]["BACKEND"] == "sessions_app.infra.cache.SQLiteCache" and not base.CACHE_DIR:
    CACHES = {"default": {**CACHES["default"], "LOCATION": str(VAR_DIR / "test_cache")}}

# A task queued in a test runs at once, in the test's process.
Q_CLUSTER = {**Q_CLUSTER, "sync": True}

# Static files under their own names, found in the apps' folders: no collectstatic before a test (the
# manifest the service's storage reads is made by it). The servers that tests start run on
# `config.settings`, on files collected once per test process (tests/support/servers.py), and
# tests/serving/test_static_files.py checks what that storage serves.
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}
