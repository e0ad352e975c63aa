"""Readiness: whether this server can do its work now (`/readyz`, and the admin's retention page).

Each check answers ok, failing or not configured here, nothing more: no count, no path, no
error text, no key; whoever asks learns only that. Cheap enough to be asked every second: three
small queries (the database answers, the applied migrations' names, the purge schedule), a stat
of the database's volume, a cache round trip where a cache server is configured, and the signing
key, read once per process. Nothing here reads a session.

- database: a `SELECT 1` on the default connection.
- migrations: every leaf migration on disk (read once per process: the code does not change
  under a running process) is recorded as applied.
- cache: the cache server (CACHE_URL, Redis) answers; the SQLite cache file beside the database
  is no server and is "not configured".
- disk: the database's volume has more free space than the headroom, as `ensure_headroom` counts
  it (sessions_app.infra.disk_space); "not configured" where its volume is not known here
  (PostgreSQL without STORAGE_VOLUME_PATH).
- purge_schedule: the purge's django-q2 schedule exists, will run again, and its next run is not
  late by more than its interval (a next run that stays in the past means no scheduler takes it).
- signing_key: the deletion log's keys load (sessions_app.deletion_log.key), as `manage.py check` asks.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone
from django_q.models import Schedule

from sessions_app import retention
from sessions_app.choices import CheckStatus, ReadinessCheck
from sessions_app.deletion_log import key as log_key
from sessions_app.infra import disk_space

logger = logging.getLogger(__name__)

LOCAL_CACHE_BACKEND = "sessions_app.infra.cache.SQLiteCache"
CACHE_PROBE_KEY = "readiness:probe"
# A scheduler looks at its schedules every few seconds (Q_CLUSTER's guard cycle): a next run late
# by less than this, or than the schedule's interval when that is longer, is still on time.
PURGE_LATE_GRACE = dt.timedelta(minutes=2)
# The late margin of a schedule that is not "every N minutes" (the admin makes none such).
OTHER_SCHEDULE_INTERVAL = dt.timedelta(days=1)


def purge_schedule() -> Schedule | None:
    """The purge's schedule (the one due first, if there are several); None: nothing purges on its own."""
    # By function, not name: operators may rename the schedule in the admin.
    return Schedule.objects.filter(func=retention.PURGE_TASK).order_by("next_run").first()


def purge_overdue(schedule: Schedule, now: dt.datetime | None = None) -> bool:
    """Whether `schedule` will not run on time: it has no runs left, or its next run is past by
    more than its interval (and PURGE_LATE_GRACE)."""
    if schedule.repeats == 0 or schedule.next_run is None:
        return True  # django-q2 never runs a schedule with no repeats left
    return (now or timezone.now()) - schedule.next_run > max(schedule_interval(schedule), PURGE_LATE_GRACE)


def schedule_interval(schedule: Schedule) -> dt.timedelta:
    """How often `schedule` runs: its minutes, or OTHER_SCHEDULE_INTERVAL for another kind."""
    if schedule.schedule_type == Schedule.MINUTES and schedule.minutes:
        return dt.timedelta(minutes=schedule.minutes)
    return OTHER_SCHEDULE_INTERVAL


@functools.cache
def _leaf_migrations() -> frozenset[tuple[str, str]]:
    """The newest migration of each app, as the code on disk has them (no database read)."""
    return frozenset(MigrationLoader(None, ignore_no_migrations=True).graph.leaf_nodes())


def _database() -> CheckStatus:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return CheckStatus.OK


def _migrations() -> CheckStatus:
    recorder = MigrationRecorder(connections[DEFAULT_DB_ALIAS])
    applied = set(recorder.migration_qs.values_list("app", "name"))
    return CheckStatus.OK if _leaf_migrations() <= applied else CheckStatus.FAILING


def _cache() -> CheckStatus:
    if cache_is_local():
        return CheckStatus.NOT_CONFIGURED
    cache.has_key(CACHE_PROBE_KEY)  # one round trip; raises when the server does not answer
    return CheckStatus.OK


def cache_is_local() -> bool:
    return settings.CACHES["default"]["BACKEND"] == LOCAL_CACHE_BACKEND


def _disk() -> CheckStatus:
    space = disk_space.space_report()
    if space.free_bytes is None:
        return CheckStatus.NOT_CONFIGURED
    return CheckStatus.FAILING if space.below_headroom else CheckStatus.OK


def _purge_schedule() -> CheckStatus:
    schedule = purge_schedule()
    return CheckStatus.FAILING if schedule is None or purge_overdue(schedule) else CheckStatus.OK


def _signing_key() -> CheckStatus:
    return CheckStatus.OK if log_key.signing_key_problem() is None else CheckStatus.FAILING


_CHECKS: dict[ReadinessCheck, Callable[[], CheckStatus]] = {
    ReadinessCheck.DATABASE: _database,
    ReadinessCheck.MIGRATIONS: _migrations,
    ReadinessCheck.CACHE: _cache,
    ReadinessCheck.DISK: _disk,
    ReadinessCheck.PURGE_SCHEDULE: _purge_schedule,
    ReadinessCheck.SIGNING_KEY: _signing_key,
}
# Not asked when the database does not answer: they read it, and would only wait for it again.
_NEED_THE_DATABASE = {ReadinessCheck.MIGRATIONS, ReadinessCheck.PURGE_SCHEDULE}


@dataclass(frozen=True)
class Readiness:
    checks: dict[ReadinessCheck, CheckStatus]  # in ReadinessCheck's order

    @property
    def ready(self) -> bool:
        return CheckStatus.FAILING not in self.checks.values()


def _run(name: ReadinessCheck, check: Callable[[], CheckStatus]) -> CheckStatus:
    try:
        return check()
    except Exception as exc:  # whatever stops a check, the probe answers; the check is failing
        # DEBUG: a probe asked every second would repeat it every second. The type only: a
        # database's or a cache's message may quote a URL with its password.
        logger.debug("readiness check %s failing: %s", name.value, type(exc).__name__)
        return CheckStatus.FAILING


def readiness() -> Readiness:
    """Every check's status (see the module docstring)."""
    statuses: dict[ReadinessCheck, CheckStatus] = {}
    for name, check in _CHECKS.items():
        if name in _NEED_THE_DATABASE and statuses[ReadinessCheck.DATABASE] == CheckStatus.FAILING:
            statuses[name] = CheckStatus.FAILING
        else:
            statuses[name] = _run(name, check)
    return Readiness(statuses)
