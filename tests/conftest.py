import pytest
from django.db import connection


@pytest.fixture
def db_path():
    """Path of the test database file (settings put it on disk, not in memory)."""
    return connection.settings_dict["NAME"]


@pytest.fixture(autouse=True)
def _clear_cache():
    # Throttle counters live in the (file) cache; each test starts clean.
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture
def vacuum_after(db_path):
    """Rebuilds the test database after a test that left deleted bytes behind on purpose."""
    yield
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA secure_delete=ON")
        cursor.execute("VACUUM")
