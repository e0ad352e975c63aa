"""The purge: erases expired sessions (or, for an incident, every session) in batches. The command,
the scheduled task, the start-up purge and the admin call it; what counts as expired is
retention's (sessions_app/retention.py); how often it runs is `services.purge_interval_set`."""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError
from django.db.models import QuerySet
from django.utils import timezone

from sessions_app import erasure
from sessions_app.infra import disk_space, metrics
from sessions_app.models import AgentSession, DeletionAudit
from sessions_app.retention import LAST_PURGE_KEY
from sessions_app.storage import planner_statistics

logger = logging.getLogger(__name__)


@dataclass
class PurgeResult:
    """What a purge erased (the counts of all its batches), in how many batches and how long."""

    erased: erasure.ErasureCounts = field(default_factory=erasure.ErasureCounts)
    batches: int = 0
    seconds: float = 0.0
    dry_run: bool = False

    @property
    def sessions(self) -> int:
        return self.erased.sessions

    @property
    def events(self) -> int:
        return self.erased.events

    @property
    def user_states(self) -> int:
        return self.erased.user_states

    def as_dict(self) -> dict:
        return {**self.erased.as_dict(), "batches": self.batches, "seconds": self.seconds, "dry_run": self.dry_run}


def purge_expired(
    *,
    now: dt.datetime | None = None,
    ttl_hours: float | None = None,
    batch_size: int | None = None,
    dry_run: bool = False,
    trigger: str,
    progress: Callable[[PurgeResult], None] | None = None,
) -> PurgeResult:
    """Deletes every expired session with its events and orphaned per-owner state.

    The command, the scheduled task and the admin all call this. It works in
    batches, each its own short transaction followed by a short pause, so a
    large purge never holds SQLite's write lock for long and API requests
    keep being served in between. `now` is fixed at the start, so sessions
    that expire while it runs wait for the next purge. `trigger` (who asked,
    for the audit row) has no default: each caller names itself.
    """
    expired = AgentSession.objects.expired(now or timezone.now(), ttl_hours)
    if dry_run:
        return _what_would_be_erased(expired)
    started = time.monotonic()
    try:
        result = _erase_in_batches(expired, batch_size=batch_size, trigger=trigger, progress=progress)
    except Exception as exc:
        outcome = "disk_full" if disk_space.is_disk_full(exc) else "failed"
        _record_outcome(trigger, outcome, started, error=type(exc).__name__)
        raise
    _record_outcome(trigger, "ok", started, sessions=result.sessions, events=result.events)
    return result


def _record_outcome(
    trigger: str, outcome: str, started: float, *, sessions: int = 0, events: int = 0, error: str = ""
) -> None:
    label = erasure.trigger_label(trigger)
    metrics.PURGE_RUNS.labels(label, outcome).inc()
    metrics.PURGE_SECONDS.labels(label).observe(time.monotonic() - started)
    if outcome == "ok":
        metrics.PURGE_LAST_SUCCESS.set(time.time())
    record = {
        "at": timezone.now().isoformat(),
        "trigger": str(trigger),
        "outcome": outcome,
        "sessions": sessions,
        "events": events,
        "error": error,
    }
    try:
        cache.set(LAST_PURGE_KEY, record, timeout=None)
    except Exception as exc:  # the cache's disk may be full too: the log line stays
        logger.warning("the purge's outcome could not be recorded (%s)", type(exc).__name__)


def erase_all_sessions(
    *, batch_size: int | None = None, dry_run: bool = False, progress: Callable[[PurgeResult], None] | None = None
) -> PurgeResult:
    """Deletes every session now, live ones included (incident response), as the purge deletes
    expired ones: in batches, overwriting the bytes, audited as an erasure of everything."""
    if dry_run:
        return _what_would_be_erased(AgentSession.objects.all())
    return _erase_in_batches(
        AgentSession.objects.all(), batch_size=batch_size, trigger=DeletionAudit.Trigger.ERASE_ALL, progress=progress
    )


def _what_would_be_erased(selection: QuerySet) -> PurgeResult:
    started = time.monotonic()
    return PurgeResult(erasure.would_erase(selection), seconds=time.monotonic() - started, dry_run=True)


def _erase_in_batches(selection: QuerySet, *, batch_size, trigger, progress) -> PurgeResult:
    batch_size = batch_size or settings.PURGE_BATCH_SIZE
    started = time.monotonic()
    planner_statistics.analyse_if_never_analysed()
    result = PurgeResult()

    while True:
        # On a full disk a batch runs on the erasure reserve's room (erase_sessions); where
        # even that is too little, smaller batches, down to one session.
        try:
            # Each batch commits with its count in the purge's one audit row.
            erased = erasure.erase_sessions(
                selection, trigger=trigger, batch_size=batch_size, started=started, adding_to=result.erased.audit
            )
        except DatabaseError as exc:
            if batch_size <= 1 or not disk_space.is_disk_full(exc):
                raise
            batch_size = max(1, batch_size // 2)
            logger.warning("disk full: purge batches of %d sessions from now on", batch_size)
            continue
        if not erased.sessions:
            break
        result.erased += erased
        result.batches += 1
        if progress:
            progress(result)
        time.sleep(settings.PURGE_BATCH_PAUSE_SECONDS)  # let waiting writers take the lock
    result.seconds = time.monotonic() - started
    return result
