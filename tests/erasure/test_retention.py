"""How long a session is kept: the purge, its command, its schedule and task."""

import datetime as dt
import io
import time

import pytest
import time_machine
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone

from sessions_app.models import AgentSession, DeletionAudit, SessionEvent, UserState
from sessions_app.purge import purge_expired
from tests.support.factories import make_session, make_user_state
from tests.support.privacy import find_chunks, find_markers, fixture_markers, sealed_chunks

pytestmark = pytest.mark.django_db

HOUR = dt.timedelta(hours=1)


@pytest.fixture(autouse=True)
def _english_shell(monkeypatch):
    """purge_sessions speaks the shell's language: these tests read its English."""
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "en_US.UTF-8")


def test_purge_deletes_just_outside_the_ttl_and_keeps_just_inside(settings):
    settings.AGENT_SESSION_TTL_HOURS = 24
    now = timezone.now()
    inside = make_session("anon-in", last_activity=now - 24 * HOUR + dt.timedelta(seconds=1))
    outside = make_session("anon-out", last_activity=now - 24 * HOUR - dt.timedelta(seconds=1))
    result = purge_expired(now=now, trigger="ttl")
    assert (result.sessions, result.events) == (1, 2)
    assert list(AgentSession.objects.values_list("pk", flat=True)) == [inside.pk]
    assert not SessionEvent.objects.filter(agent_session_id=outside.pk).exists()


def test_max_age_ends_a_session_kept_alive_by_activity(settings):
    settings.AGENT_SESSION_MAX_AGE_HOURS = 168
    now = timezone.now()
    make_session(last_activity=now - HOUR, created=now - 169 * HOUR)
    assert purge_expired(now=now, trigger="ttl").sessions == 1


def test_ttl_override_and_dry_run(settings):
    now = timezone.now()
    make_session(last_activity=now - 3 * HOUR, events=3)
    dry = purge_expired(now=now, ttl_hours=2, dry_run=True, trigger="command")
    assert (dry.sessions, dry.events, dry.dry_run) == (1, 3, True)
    assert AgentSession.objects.count() == 1 and DeletionAudit.objects.count() == 0
    assert purge_expired(now=now, ttl_hours=4, trigger="command").sessions == 0
    assert purge_expired(now=now, ttl_hours=2, trigger="command").sessions == 1


@pytest.mark.parametrize("count,batch_size,batches", [(5, 2, 3), (4, 2, 2), (1, 10, 1), (0, 3, 0)])
def test_batches(count, batch_size, batches, settings):
    settings.PURGE_BATCH_PAUSE_SECONDS = 0
    old = timezone.now() - 48 * HOUR
    for i in range(count):
        make_session(f"anon-{i}", last_activity=old)
    seen = []
    result = purge_expired(batch_size=batch_size, trigger="ttl", progress=lambda r: seen.append(r.sessions))
    assert (result.sessions, result.batches) == (count, batches)
    assert seen == [min(count, batch_size * (i + 1)) for i in range(batches)]
    assert AgentSession.objects.count() == 0


def test_a_purge_in_batches_reports_and_audits_the_sum_of_every_batch(settings):
    settings.PURGE_BATCH_PAUSE_SECONDS = 0
    old = timezone.now() - 48 * HOUR
    for i, events in enumerate((3, 2, 1)):  # the last batch's counts differ from the totals
        make_session(f"anon-{i}", last_activity=old, events=events)
        make_user_state(f"anon-{i}", {"k": "v"})
    result = purge_expired(batch_size=1, trigger="ttl")
    assert (result.batches, result.sessions, result.events, result.user_states) == (3, 3, 6, 3)
    audit = DeletionAudit.objects.get()
    assert (audit.sessions_deleted, audit.events_deleted) == (3, 6)
    assert not (AgentSession.objects.exists() or SessionEvent.objects.exists() or UserState.objects.exists())


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_purge_reports_the_time_it_took(dry_run, settings):
    """`seconds` is what the command prints: the purge's own duration, never 0 or a clock reading."""
    settings.PURGE_BATCH_PAUSE_SECONDS = 0
    make_session(last_activity=timezone.now() - 48 * HOUR)
    before = time.monotonic()
    result = purge_expired(dry_run=dry_run, trigger="command")
    assert 0 < result.seconds <= time.monotonic() - before
    assert result.sessions == 1


def test_owner_state_goes_with_the_owners_last_session(settings):
    now = timezone.now()
    make_session("anon-gone", last_activity=now - 48 * HOUR)
    make_session("anon-kept", last_activity=now - 48 * HOUR)
    make_session("anon-kept", last_activity=now)
    for user_id in ("anon-gone", "anon-kept"):
        make_user_state(user_id, {"k": "v"})
    result = purge_expired(now=now, trigger="ttl")
    assert (result.sessions, result.user_states) == (2, 1)
    assert list(UserState.objects.values_list("owner_id", flat=True)) == ["anon-kept"]


def test_owner_state_is_per_app_and_goes_with_the_owners_last_session_in_that_app(settings):
    settings.PURGE_BATCH_PAUSE_SECONDS = 0
    now = timezone.now()
    make_session("anon-both", last_activity=now - 48 * HOUR, app_name="resume_agent")
    make_session("anon-both", last_activity=now, app_name="other_app")  # needs only other_app's state
    make_session("anon-other", last_activity=now - 48 * HOUR, app_name="other_app")
    for user_id, app_name in (("anon-both", "resume_agent"), ("anon-both", "other_app"), ("anon-other", "other_app")):
        make_user_state(user_id, {"k": "v"}, app_name=app_name)
    result = purge_expired(now=now, trigger="ttl")  # one batch, both apps
    assert (result.sessions, result.user_states) == (2, 2)
    assert list(UserState.objects.values_list("owner_id", "app_name")) == [("anon-both", "other_app")]


def test_a_purged_session_without_events_counts_no_events(settings):
    settings.PURGE_BATCH_PAUSE_SECONDS = 0
    make_session(last_activity=timezone.now() - 48 * HOUR, events=0)
    result = purge_expired(trigger="ttl")
    assert (result.sessions, result.events) == (1, 0)
    assert DeletionAudit.objects.get().events_deleted == 0


def test_audit_rows_hold_counts_not_people():
    old = timezone.now() - 48 * HOUR
    make_session("anon-secret-owner", last_activity=old, events=4)
    purge_expired(trigger="ttl")
    audit = DeletionAudit.objects.get()
    assert (audit.trigger, audit.sessions_deleted, audit.events_deleted) == ("ttl", 1, 4)
    fields = {f.name for f in DeletionAudit._meta.get_fields()}
    assert fields == {"id", "created_at", "trigger", "sessions_deleted", "events_deleted", "duration_ms"}
    purge_expired(trigger="ttl")  # nothing to delete: no empty audit rows
    assert DeletionAudit.objects.count() == 1


def test_the_audit_row_holds_the_erasures_duration_in_milliseconds():
    from sessions_app.erasure import record_erasure
    from sessions_app.storage.row_erasure import ErasedRows as Erased

    before = time.monotonic()
    record_erasure("ttl", Erased(sessions=1), started=before - 100)  # an erasure that took 100 s
    elapsed_ms = (time.monotonic() - before) * 1000
    assert 100_000 <= DeletionAudit.objects.get().duration_ms <= 100_000 + elapsed_ms + 1


def test_api_delete_is_audited(api, new_session):
    session_id, token = new_session()
    api.delete(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token)
    assert DeletionAudit.objects.get().trigger == "api"


def test_a_delete_that_finds_nothing_writes_no_audit_row(api, new_session):
    session_id, token = new_session()
    assert api.delete(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).status_code == 204
    assert api.delete(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).status_code == 404
    assert DeletionAudit.objects.get().sessions_deleted == 1


def test_command(settings):
    settings.PURGE_BATCH_PAUSE_SECONDS = 0
    now = timezone.now()
    make_session(last_activity=now - 5 * HOUR, events=3)
    out = io.StringIO()
    call_command("purge_sessions", "--dry-run", "--ttl-hours", "4", stdout=out)
    assert "would delete 1 sessions, 3 events" in out.getvalue()
    assert AgentSession.objects.count() == 1
    out = io.StringIO()
    call_command("purge_sessions", "--ttl-hours", "4", "--batch-size", "1", stdout=out)
    assert "deleted 1 sessions, 3 events" in out.getvalue()
    assert DeletionAudit.objects.get().trigger == "command"
    with pytest.raises(CommandError):
        call_command("purge_sessions", "--ttl-hours", "-1")


def test_command_prints_progress_on_large_runs(settings):
    settings.PURGE_BATCH_PAUSE_SECONDS = 0
    old = timezone.now() - 48 * HOUR
    for i in range(25):
        make_session(f"anon-{i}", last_activity=old, events=0)
    out = io.StringIO()
    call_command("purge_sessions", "--batch-size", "2", stdout=out)
    assert "... 20 sessions" in out.getvalue()
    assert "deleted 25 sessions" in out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_schedule_is_created_once_by_migrate_and_keeps_edits():
    from django_q.models import Schedule

    # Other transactional tests flush tables, so replay the migration here.
    call_command("migrate", "sessions_app", "0001", verbosity=0)
    assert not Schedule.objects.filter(name="purge expired sessions").exists()
    call_command("migrate", verbosity=0)
    schedule = Schedule.objects.get(name="purge expired sessions")
    assert schedule.func == "sessions_app.tasks.purge_expired_sessions"
    assert (schedule.schedule_type, schedule.minutes, schedule.repeats) == (Schedule.MINUTES, 15, -1)
    assert (schedule.args, schedule.kwargs) == (None, None)  # the task takes no data

    Schedule.objects.filter(pk=schedule.pk).update(minutes=5)  # an operator's edit
    call_command("migrate", verbosity=0)
    assert Schedule.objects.filter(name="purge expired sessions").count() == 1
    assert Schedule.objects.get(name="purge expired sessions").minutes == 5


def test_task_runs_the_purge_and_stores_counts_only():
    from django_q.models import Success
    from django_q.tasks import async_task

    make_session(last_activity=timezone.now() - 48 * HOUR, text="林語晴 secret")
    async_task("sessions_app.tasks.purge_expired_sessions")  # Q_CLUSTER sync=True in tests
    task = Success.objects.get()
    assert task.args is None or task.args == ()
    assert task.result["sessions"] == 1 and "林語晴" not in str(task.result)
    assert AgentSession.objects.count() == 0
    assert DeletionAudit.objects.get().trigger == "ttl"


@pytest.mark.django_db(transaction=True)
def test_purged_resume_leaves_no_bytes_in_database_files(api, new_session, stored_files, settings):
    settings.AGENT_SESSION_TTL_HOURS = 1
    session_id, token = new_session()
    turn = api.post(
        f"/agent/sessions/{session_id}/messages", {"message": "hi"}, format="json", HTTP_X_SESSION_TOKEN=token
    )
    assert turn.status_code == 200
    # Stored sealed: the resume is not in the file in clear, its ciphertext is.
    assert find_markers(stored_files(), fixture_markers()) == []
    chunks = sealed_chunks()
    assert {index for _, index in find_chunks(stored_files(), chunks)} == set(range(len(chunks)))
    with time_machine.travel(timezone.now() + 2 * HOUR):
        assert purge_expired(trigger="ttl").sessions == 1
    if connection.vendor == "sqlite":  # PostgreSQL keeps the ciphertext until VACUUM (test_erasure_e2e)
        assert find_chunks(stored_files(), chunks) == []
    assert find_markers(stored_files(), fixture_markers()) == []


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_purge_skips_the_rows_another_purge_holds_and_counts_only_what_it_deleted(settings):
    """Two purges at once (two clusters, or the admin's and the schedule's) on PostgreSQL: the
    second neither waits for the first's batch nor counts it (tests/serving/test_two_servers.py runs
    two real clusters)."""
    import threading

    from django.db import connections, transaction

    from sessions_app.storage import row_erasure

    settings.PURGE_BATCH_PAUSE_SECONDS = 0
    long_ago = timezone.now() - 30 * 24 * HOUR
    sessions = sorted(make_session(f"anon-{i}", last_activity=long_ago).pk for i in range(4))
    held, second_done = threading.Event(), threading.Event()

    def first_purge_mid_batch():
        try:
            with transaction.atomic():
                row_erasure.erase_rows(AgentSession.objects.filter(pk__in=sessions[:2]))
                held.set()
                second_done.wait(10)  # commits only once the second purge is done (or gave up)
        finally:
            connections.close_all()

    first = threading.Thread(target=first_purge_mid_batch)
    first.start()
    assert held.wait(10)
    second = purge_expired(trigger="ttl")
    finished_while_held = first.is_alive()
    second_done.set()
    first.join(15)
    assert finished_while_held  # it did not wait for the rows the first purge holds
    assert (second.sessions, second.events) == (2, 4)
    assert not AgentSession.objects.exists()


def test_erase_all_asks_first_then_erases_every_session_and_audits_it(monkeypatch):
    """Incident response: `purge_sessions --all` erases live sessions too, once confirmed."""
    make_session("anon-live", events=3)
    make_session("anon-old", last_activity=timezone.now() - 30 * 24 * HOUR)
    monkeypatch.setattr("builtins.input", lambda question: "no")
    with pytest.raises(CommandError, match="nothing erased"):
        call_command("purge_sessions", "--all", stdout=io.StringIO())
    assert AgentSession.objects.count() == 2 and not DeletionAudit.objects.exists()

    asked = []
    monkeypatch.setattr("builtins.input", lambda question: asked.append(question) or "yes")
    out = io.StringIO()
    call_command("purge_sessions", "--all", stdout=out)
    assert "all 2 sessions (5 events)" in asked[0]
    assert "deleted 2 sessions, 5 events" in out.getvalue()
    assert not AgentSession.objects.exists() and not SessionEvent.objects.exists()
    audit = DeletionAudit.objects.get()
    assert (audit.trigger, audit.sessions_deleted, audit.events_deleted) == ("erase_all", 2, 5)


def test_erase_all_with_yes_asks_nothing(monkeypatch):
    make_session("anon-live")
    monkeypatch.setattr("builtins.input", lambda question: pytest.fail("asked despite --yes"))
    call_command("purge_sessions", "--all", "--yes", stdout=io.StringIO())
    assert not AgentSession.objects.exists()


def test_erase_all_goes_in_the_batches_asked_and_reports_each():
    """Incident response on a large store: batches of the size asked, each reported as it ends
    (the command prints every tenth), and an erasure unless a dry run is asked for."""
    from sessions_app.purge import erase_all_sessions

    for number in range(5):
        make_session(f"anon-{number}", events=1)
    reports = []
    result = erase_all_sessions(batch_size=2, progress=lambda so_far: reports.append((so_far.batches, so_far.sessions)))
    assert reports == [(1, 2), (2, 4), (3, 5)]
    assert (result.sessions, result.batches, result.dry_run) == (5, 3, False)
    assert not AgentSession.objects.exists()


def test_the_command_speaks_the_shells_language(monkeypatch):
    make_session("anon-old", last_activity=timezone.now() - 30 * 24 * HOUR)
    monkeypatch.setenv("LANG", "zh_TW.UTF-8")
    out = io.StringIO()
    call_command("purge_sessions", "--dry-run", stdout=out)
    assert "會刪除 1 個工作階段、2 個事件" in out.getvalue()


def _disk_full() -> Exception:
    """The error Django raises when SQLite finds the disk full (SQLITE_FULL)."""
    import sqlite3

    from django.db import OperationalError

    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = sqlite3.SQLITE_FULL
    error = OperationalError("database or disk is full")
    error.__cause__ = full
    return error


@pytest.fixture
def erasures_that_fit(monkeypatch, settings):
    """Batches the disk has room for: an erasure of more than `fits` sessions finds the disk full
    (even after the reserve is given back), as SQLite's journal would; the attempts are counted."""
    from sessions_app.storage import row_erasure

    settings.PURGE_BATCH_PAUSE_SECONDS = 0
    real, attempts, room = row_erasure.erase_rows, [], {"fits": 1}

    def erase_rows(selection, **options):
        attempts.append(selection.count())
        if len(attempts) > 40:
            pytest.fail("the purge does not give up")
        if selection.count() > room["fits"]:
            raise _disk_full()
        return real(selection, **options)

    monkeypatch.setattr(row_erasure, "erase_rows", erase_rows)
    return room, attempts


@pytest.mark.parametrize("fits, batches", [(2, 3), (1, 5)])
def test_on_a_full_disk_the_purge_halves_its_batches_until_they_fit(erasures_that_fit, captured_logs, fits, batches):
    room, attempts = erasures_that_fit
    room["fits"] = fits
    for number in range(5):
        make_session(f"anon-{number}", last_activity=timezone.now() - 48 * HOUR)
    result = purge_expired(batch_size=4, trigger="ttl")
    assert (result.sessions, result.batches) == (5, batches)
    assert not AgentSession.objects.exists()
    halved = [line for line in captured_logs[0].getvalue().splitlines() if "purge batches of" in line]
    assert halved == [
        f"WARNING sessions_app.purge: disk full: purge batches of {size} sessions from now on"
        for size in (2, 1)[: 3 - fits]
    ]


def test_a_disk_too_full_for_one_session_fails_the_purge_and_records_it(erasures_that_fit, in_english):
    from django.db import DatabaseError

    from sessions_app import selectors_admin

    room, attempts = erasures_that_fit
    room["fits"] = 0
    make_session("anon-old", last_activity=timezone.now() - 48 * HOUR)
    with pytest.raises(DatabaseError):
        purge_expired(batch_size=2, trigger="ttl")
    assert attempts == [1, 1]  # the one session, once more with the reserve given back; no more
    assert AgentSession.objects.count() == 1
    last = selectors_admin.last_purge()
    assert (last.outcome, last.error, last.trigger) == ("disk_full", "OperationalError", "TTL purge (scheduled)")


def test_a_purge_that_fails_otherwise_stops_at_once_and_records_the_failures_type_only(monkeypatch, in_english):
    from django.db import OperationalError

    from sessions_app import selectors_admin
    from sessions_app.storage import row_erasure

    attempts = []

    def locked(selection, **options):
        attempts.append(selection.count())
        raise OperationalError("database is locked (holding 林語晴's resume)")

    monkeypatch.setattr(row_erasure, "erase_rows", locked)
    make_session("anon-old", last_activity=timezone.now() - 48 * HOUR)
    with pytest.raises(OperationalError):
        purge_expired(batch_size=4, trigger="command")
    assert attempts == [1]
    last = selectors_admin.last_purge()
    assert (last.outcome, last.error, last.trigger) == ("failed", "OperationalError", "Management command")
    assert (last.sessions, last.events) == (0, 0)


def test_the_last_purge_is_kept_with_who_ran_it_and_what_it_erased(in_english):
    from sessions_app import selectors_admin

    assert selectors_admin.last_purge() is None
    make_session("anon-old", last_activity=timezone.now() - 48 * HOUR, events=2)
    before = timezone.now()
    purge_expired(trigger="ttl")
    last = selectors_admin.last_purge()
    assert before <= last.at <= timezone.now()
    assert (last.trigger, last.outcome, last.sessions, last.events, last.error) == (
        "TTL purge (scheduled)",
        "ok",
        1,
        2,
        "",
    )
    purge_expired(trigger="ttl", dry_run=True)  # a dry run erases nothing and is not a purge
    assert selectors_admin.last_purge() == last
    with time_machine.travel(timezone.now() + 30 * 24 * HOUR):
        assert selectors_admin.last_purge() == last  # kept until the next purge, however long that takes


def test_a_last_purge_the_cache_cannot_keep_is_one_log_line(monkeypatch, captured_logs):
    from django.core.cache import cache

    def cache_full(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(cache, "set", cache_full)
    make_session("anon-old", last_activity=timezone.now() - 48 * HOUR)
    assert purge_expired(trigger="ttl").sessions == 1  # the purge itself is done
    lines = [line for line in captured_logs[0].getvalue().splitlines() if "outcome" in line]
    assert lines == ["WARNING sessions_app.purge: the purge's outcome could not be recorded (OSError)"]


def test_the_last_purge_of_a_caller_without_a_label_shows_its_own_name():
    from sessions_app import selectors_admin

    purge_expired(trigger="nightly-job")
    assert selectors_admin.last_purge().trigger == "nightly-job"


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_purge_gathers_planner_statistics_postgresql_never_gathered_first():
    """Without statistics PostgreSQL's planner scans every event for each purge batch (80-90 ms a
    batch at 140,000 events, 1-2 ms with them: sessions_app/storage/planner_statistics.py). Seen
    failing with the purge's call to it removed."""
    from sessions_app.storage import planner_statistics

    tables = [AgentSession._meta.db_table, SessionEvent._meta.db_table]
    with connection.cursor() as cursor:
        for table in tables:  # as after a restore: never analysed
            cursor.execute("SELECT pg_stat_reset_single_table_counters(%s::regclass)", [table])
        cursor.execute(planner_statistics.NEVER_ANALYSED, [tables])
        assert sorted(row[0] for row in cursor.fetchall()) == sorted(tables)
    make_session("anon-stats", last_activity=timezone.now() - 30 * 24 * HOUR)
    assert purge_expired(trigger="ttl").sessions == 1
    with connection.cursor() as cursor:
        cursor.execute(planner_statistics.NEVER_ANALYSED, [tables])
        assert cursor.fetchall() == []
