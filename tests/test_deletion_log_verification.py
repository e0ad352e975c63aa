"""The admin's check of the whole deletion log (issue 39, finding 2): a background task that reads
the log in short chunks, so writers commit while it runs; one at a time; at most one start per
staff user every DELETION_LOG_VERIFY_INTERVAL_SECONDS; its progress and outcome on the page.

Both backends, except the lock test (about SQLite's read locks; PostgreSQL's reads never block a
commit)."""

import re
import sqlite3

import pytest
from django.contrib.auth.models import Permission
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.urls import reverse

from sessions_app.deletion_log import store as deletion_log
from sessions_app.deletion_log import verification as log_verification
from sessions_app.deletion_log.formats.entry import DeletionEntry
from sessions_app.deletion_log.verification import State
from sessions_app.models import AgentSession
from tests.support.factories import make_session
from tests.test_deletion_log_tree import grow_log

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_english")]

LOG = reverse("admin:sessions_app_deletionlogcheckpoint_changelist")
VERIFY = reverse("admin:sessions_app_deletionlogcheckpoint_verify")


def _during_the_check(monkeypatch, at_entry: int, action) -> None:
    """Runs `action` once, while the check is busy with entry number `at_entry` (it parses each
    entry's leaf: DeletionEntry.from_leaf_bytes)."""
    parse, seen = DeletionEntry.from_leaf_bytes.__func__, [0]

    def parsing(cls, data):
        seen[0] += 1
        if seen[0] == at_entry:
            action()
        return parse(cls, data)

    monkeypatch.setattr(DeletionEntry, "from_leaf_bytes", classmethod(parsing))


def _page_text(client) -> str:
    html = client.get(LOG).content.decode()
    return re.sub(r"\s+", " ", re.search(r'<p id="log-verification".*?</p>', html, re.S).group(0))


@pytest.mark.sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_write_commits_while_the_whole_log_is_checked(monkeypatch):
    """Finding 2: an owner's turn answered 500 ("database is locked") while the check read the
    whole log in one statement, which held SQLite's read lock until its end. Now another
    connection's write commits in the middle of the check, within a 1 s busy timeout. Seen failing
    with the one-statement read (sqlite3.OperationalError: database is locked)."""
    grow_log([500] * 10)
    make_session()
    table = AgentSession._meta.db_table
    committed = []

    def an_owners_write():
        other = sqlite3.connect(connection.settings_dict["NAME"], timeout=1, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute(f"UPDATE {table} SET last_activity_at = last_activity_at")  # noqa: S608 (a model's table)
            other.execute("COMMIT")
            committed.append(True)
        finally:
            other.close()

    _during_the_check(monkeypatch, 3000, an_owners_write)
    chunks = []
    assert deletion_log.verify_whole_log(progress=chunks.append) == 5000
    assert committed == [True]
    assert chunks == [2000, 4000, 5000]  # each chunk one short read; only the right edge carried over


@pytest.fixture
def staff(django_user_model):
    """Two staff users who may view the deletion log (and nothing else)."""
    clients = []
    for name in ("first-operator", "second-operator"):
        user = django_user_model.objects.create_user(name, password="unused-in-tests", is_staff=True)
        user.user_permissions.set(Permission.objects.filter(codename="view_deletionlogcheckpoint"))
        client = Client()
        client.force_login(user)
        clients.append(client)
    return clients


def test_a_second_press_while_a_check_runs_starts_none(staff, monkeypatch, settings):
    """One at a time: a press while a check runs says so and queues nothing; the page shows the
    running check's progress. Seen failing with the running key not taken."""
    settings.DELETION_LOG_VERIFY_INTERVAL_SECONDS = 0
    grow_log([50] * 6)
    first, second = staff
    during = {}
    runs = []
    real_run = log_verification.run
    monkeypatch.setattr(log_verification, "run", lambda: runs.append(1) or real_run())

    def press_again():
        during["answer"] = second.post(VERIFY, follow=True).content.decode()
        during["page"] = _page_text(second)

    _during_the_check(monkeypatch, 120, press_again)
    answer = first.post(VERIFY, follow=True).content.decode()  # django-q2 runs the task at once in tests
    assert "The check of the whole log has started" in answer
    assert "A check of the whole log is already running" in during["answer"]
    assert re.search(r"Running since .* UTC: \d+ of 300 entries checked", during["page"]), during["page"]
    assert runs == [1]
    assert "The deletion log verifies: 300 entries" in _page_text(first)
    assert "has started" in second.post(VERIFY, follow=True).content.decode()  # once it has ended: again


def test_each_staff_user_starts_at_most_one_check_per_interval(staff, settings):
    """Throttled per staff user: pressing again within the interval starts nothing; another staff
    user may. Seen failing with the throttle's key not taken."""
    settings.DELETION_LOG_VERIFY_INTERVAL_SECONDS = 600
    grow_log([3])
    first, second = staff
    assert "has started" in first.post(VERIFY, follow=True).content.decode()
    throttled = first.post(VERIFY, follow=True).content.decode()
    assert "You started a check of the whole log less than 10 min ago" in throttled
    assert "has started" in second.post(VERIFY, follow=True).content.decode()


def test_the_page_says_a_broken_log_and_a_check_that_stopped(staff):
    grow_log([4])
    first, _ = staff
    deletion_log.DeletionLogEntry.objects.filter(index=2).update(leaf_hash=bytes(32))
    first.post(VERIFY)
    assert "The deletion log does NOT verify: entry 2 is missing, out of place or altered." in _page_text(first)
    # A check whose worker was killed (its task's time limit): said, not shown as running forever.
    cache.set(log_verification.STATE_KEY, {**cache.get(log_verification.STATE_KEY), "state": State.RUNNING})
    assert "stopped before its end (stopped)" in _page_text(first)


def test_the_check_in_traditional_chinese(staff):
    grow_log([2])
    first, _ = staff
    first.post(VERIFY)
    html = first.get(LOG, HTTP_ACCEPT_LANGUAGE="zh-Hant").content.decode()
    found = re.search(r"<p id=\"log-verification\".*?</p>", html, re.S).group(0)
    assert "刪除日誌驗證通過：2 個項目" in found and "最近一次整個紀錄的驗證" in found, found


def test_the_check_covers_the_log_as_it_was_when_it_began(monkeypatch):
    """Erasures appended during the check wait for the next one (it once chased them one entry at
    a time); entries missing at the end are said."""
    grow_log([300, 300])
    _during_the_check(monkeypatch, 100, lambda: grow_log([50]))
    assert deletion_log.verify_whole_log(chunk=200) == 600
    monkeypatch.undo()
    assert deletion_log.verify_whole_log() == 650
    deletion_log.DeletionLogEntry.objects.filter(index__gte=640).delete()
    with pytest.raises(deletion_log.LogBroken, match="checkpoint 650 covers entries the log does not have"):
        deletion_log.verify_whole_log()
