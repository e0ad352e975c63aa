"""The admin's "verify the whole log" (issue 39): a django-q2 task, one at a time, at most one start
per staff user every DELETION_LOG_VERIFY_INTERVAL_SECONDS; its progress and outcome kept in the
cache (shared by every process: the SQLite cache file or Redis) for the admin's page.

The check itself reads the log in short chunks (storage.deletion_log.verify_whole_log), so writers
commit while it runs. The task takes no arguments and returns counts only; what the page shows is
counts, times and the check's own words about the log (hashes and positions, no session data).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, replace
from enum import StrEnum

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone
from django_q.tasks import async_task

from sessions_app.deletion_log import store as deletion_log

logger = logging.getLogger(__name__)

TASK = "sessions_app.tasks.verify_deletion_log"
STATE_KEY = "deletion-log:verification"
RUNNING_KEY = "deletion-log:verification-running"  # held from the start until the task ends


class State(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    VERIFIED = "verified"
    BROKEN = "broken"  # the log does not verify: `problem` says where
    FAILED = "failed"  # the check could not run to its end: `problem` is the exception's type


class Start(StrEnum):
    STARTED = "started"
    ALREADY_RUNNING = "already_running"
    THROTTLED = "throttled"


@dataclass(frozen=True)
class Verification:
    state: State
    checked: int  # entries checked so far
    size: int  # the log's size when the check started
    started_at: str  # ISO 8601, UTC
    finished_at: str | None = None
    problem: str = ""


def _record(verification: Verification) -> None:
    try:
        cache.set(STATE_KEY, asdict(verification), timeout=None)
    except Exception as exc:  # progress is best effort: the check goes on, and says its outcome in a log line
        logger.warning("the log check's progress could not be recorded (%s)", type(exc).__name__)


def _throttle_key(user_id: int) -> str:
    return f"deletion-log:verification-by:{user_id}"


def start(user_id: int) -> Start:
    """Queues the check unless one is queued or running, or `user_id` started one less than
    DELETION_LOG_VERIFY_INTERVAL_SECONDS ago. (Every add is one atomic cache command.)"""
    if cache.get(RUNNING_KEY):
        return Start.ALREADY_RUNNING
    interval = settings.DELETION_LOG_VERIFY_INTERVAL_SECONDS
    if interval and not cache.add(_throttle_key(user_id), True, timeout=interval):
        return Start.THROTTLED
    # Held at most the task's time limit: a worker killed mid-check does not block the next one.
    if not cache.add(RUNNING_KEY, True, timeout=settings.Q_CLUSTER["timeout"]):
        return Start.ALREADY_RUNNING
    _record(Verification(State.QUEUED, 0, deletion_log.status().size, timezone.now().isoformat()))
    try:
        async_task(TASK)  # no arguments: nothing of anyone goes into django-q2's tables
    except Exception:
        cache.delete(RUNNING_KEY)
        raise
    return Start.STARTED


def run() -> dict:
    """The task's body: checks the whole log, recording its progress after each chunk."""
    current = Verification(State.RUNNING, 0, deletion_log.status().size, timezone.now().isoformat())
    _record(current)
    try:
        checked = deletion_log.verify_whole_log(progress=lambda checked: _record(replace(current, checked=checked)))
    except deletion_log.LogBroken as broken:
        outcome = replace(current, state=State.BROKEN, problem=str(broken))
        logger.error("the deletion log does not verify: %s", broken)
    except Exception as exc:
        outcome = replace(current, state=State.FAILED, problem=type(exc).__name__)
        logger.error("the deletion log's check could not run: %s", type(exc).__name__)
    else:
        outcome = replace(current, state=State.VERIFIED, checked=checked)
    _record(replace(outcome, finished_at=timezone.now().isoformat()))
    cache.delete(RUNNING_KEY)  # after the outcome: a page read in between never sees a check that stopped
    return {"state": str(outcome.state), "checked": outcome.checked}


def latest() -> Verification | None:
    """The last check's state, queued, running or done; None if none was ever started (or the
    cache lost it). A check recorded as queued or running whose task no longer holds the running
    key stopped before its end (its worker was killed): FAILED."""
    found = cache.get(STATE_KEY)
    if found is None:
        return None
    verification = Verification(**{**found, "state": State(found["state"])})
    if verification.state in (State.QUEUED, State.RUNNING) and not cache.get(RUNNING_KEY):
        return replace(verification, state=State.FAILED, problem="stopped")
    return verification
