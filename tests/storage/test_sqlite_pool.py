"""SQLite connections kept between requests (`OPTIONS["pool"]`, DATABASE_POOL_SIZE in make run's web
workers): a connection closed outside a transaction waits for the next one, still sent
`connection_created`, so the receiver's PRAGMAs hold on every connection handed out; one closed
mid-transaction, or after an error, is closed for real; a forked child never takes its parent's."""

import os

import pytest
from django.db import OperationalError, connection

from sessions_app.infra import sqlite
from sessions_app.infra.sqlite_backend.base import DatabaseWrapper

pytestmark = [pytest.mark.sqlite_only, pytest.mark.django_db]


@pytest.fixture
def pooled(tmp_path):
    options = {**connection.settings_dict["OPTIONS"], "pool": 2}
    settings_dict = {**connection.settings_dict, "NAME": str(tmp_path / "pooled.sqlite3"), "OPTIONS": options}
    wrappers = [DatabaseWrapper(settings_dict, alias=f"pooled{n}") for n in range(3)]
    yield wrappers
    for wrapper in wrappers:
        wrapper.close()
    for raw in wrappers[0]._pool._idle:
        raw.close()


def _raw(wrapper):
    wrapper.ensure_connection()
    return wrapper.connection


def test_a_closed_connection_is_the_next_ones_and_gets_the_receivers_pragmas_again(pooled):
    first = _raw(pooled[0])
    first.execute("PRAGMA secure_delete=OFF")  # as a build that defaults it off would open it
    pooled[0].close()
    assert _raw(pooled[1]) is first  # another wrapper (another request's thread) takes it
    assert sqlite.secure_delete_enabled(pooled[1])  # connection_created ran on it again


def test_at_most_size_wait_and_the_rest_are_closed(pooled):
    raws = [_raw(wrapper) for wrapper in pooled]
    for wrapper in pooled:
        wrapper.close()
    assert pooled[0]._pool._idle == raws[:2]


def test_a_connection_closed_in_a_transaction_or_after_an_error_is_not_kept(pooled):
    wrapper = pooled[0]
    raw = _raw(wrapper)
    raw.execute("BEGIN IMMEDIATE")
    wrapper.close()  # closed mid-transaction: SQLite rolls it back as it closes
    assert raw not in wrapper._pool._idle
    with pytest.raises(OperationalError), wrapper.cursor() as cursor:
        cursor.execute("SELECT * FROM no_such_table")
    raw = wrapper.connection
    wrapper.close()
    assert raw not in wrapper._pool._idle


def test_a_forked_child_opens_its_own(pooled):
    raw = _raw(pooled[0])
    pooled[0].close()
    pid = os.fork()
    if pid == 0:  # the child: the parent's connection is not handed out
        os._exit(0 if _raw(pooled[1]) is not raw else 1)
    assert os.waitpid(pid, 0)[1] == 0
    assert _raw(pooled[1]) is raw
