"""The operators' reads (the admin's dashboards): retention, integrity failures, storage and the
deletion log's status; metadata and counts only, never state or event content, and no key."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Max, Q, Sum
from django.utils import timezone
from django_q.models import Schedule, Task

from sessions_app import retention, selectors_health
from sessions_app.choices import ErasureTrigger, FailureKind
from sessions_app.deletion_log import key as log_key
from sessions_app.deletion_log import store as deletion_log
from sessions_app.deletion_log.formats.note import open_note
from sessions_app.deletion_log.formats.strict import Rejected
from sessions_app.infra import disk_space
from sessions_app.models import AgentSession, DeletionAudit, IntegrityFailure
from sessions_app.storage import turn_lock


def turn_running(session: AgentSession) -> bool:
    """Whether a turn of the session runs now (holds its turn lock: a row on PostgreSQL, a file
    lock on SQLite, so no query of the list can say it)."""
    return turn_lock.turn_is_locked(session.pk)


@dataclass(frozen=True)
class RetentionPolicy:
    ttl_hours: float
    max_age_hours: float
    batch_size: int
    schedule: Schedule | None  # None: nothing purges expired sessions on its own
    last_run: Task | None  # the purge task's latest Success or Failure

    @property
    def last_run_deleted(self) -> dict | None:
        """What the last successful run deleted: the counts the task returned (sessions, events)."""
        result = self.last_run.result if self.last_run and self.last_run.success else None
        return result if isinstance(result, dict) and "failed" not in result else None

    @property
    def last_run_failed(self) -> str | None:
        """Why the last run failed: "disk_full", an exception's type, or "error" (django-q2's own failure)."""
        if self.last_run is None:
            return None
        if not self.last_run.success:
            return "error"
        result = self.last_run.result
        return result.get("failed") if isinstance(result, dict) else None


def retention_policy() -> RetentionPolicy:
    return RetentionPolicy(
        ttl_hours=settings.AGENT_SESSION_TTL_HOURS,
        max_age_hours=settings.AGENT_SESSION_MAX_AGE_HOURS,
        batch_size=settings.PURGE_BATCH_SIZE,
        schedule=selectors_health.purge_schedule(),
        # Task holds both Success and Failure rows (they are proxies of it).
        last_run=Task.objects.filter(func=retention.PURGE_TASK).order_by("-stopped").first(),
    )


@dataclass(frozen=True)
class IntegrityFailureCounts:
    last_day: int
    total: int
    by_kind: list[tuple[str, int, int]]  # (kind's label, last 24 h, total), most frequent first


def integrity_failure_counts(now: dt.datetime | None = None) -> IntegrityFailureCounts:
    """Reads refused because a session did not verify (`sessions_app.storage.failure_counts`), in one query."""
    since = (now or timezone.now()) - dt.timedelta(hours=24)
    rows = (
        IntegrityFailure.objects.order_by()
        .values("kind")
        .annotate(total=Count("pk"), last_day=Count("pk", filter=Q(created_at__gte=since)))
        .order_by("-total", "kind")
    )
    labels = dict(FailureKind.choices)
    by_kind = [(labels.get(row["kind"], row["kind"]), row["last_day"], row["total"]) for row in rows]
    return IntegrityFailureCounts(
        last_day=sum(last_day for _, last_day, _ in by_kind),
        total=sum(total for _, _, total in by_kind),
        by_kind=by_kind,
    )


@dataclass(frozen=True)
class LastPurge:
    at: dt.datetime
    trigger: str  # DeletionAudit.Trigger's label
    outcome: str  # "ok", "disk_full" or "failed"
    sessions: int
    events: int
    error: str  # the exception's type, for "failed"


@dataclass(frozen=True)
class StorageStatus:
    """What the operator sees of storage: free space against the headroom, the erasure reserve,
    sessions past their TTL still stored, and how the last purge (whoever ran it) ended."""

    space: disk_space.SpaceReport
    expired_stored: int
    last_purge: LastPurge | None


def last_purge() -> LastPurge | None:
    record = cache.get(retention.LAST_PURGE_KEY)
    if not isinstance(record, dict):
        return None
    labels = dict(ErasureTrigger.choices)
    return LastPurge(
        at=dt.datetime.fromisoformat(record["at"]),
        trigger=labels.get(record["trigger"], record["trigger"]),
        outcome=record["outcome"],
        sessions=record["sessions"],
        events=record["events"],
        error=record["error"],
    )


def storage_status() -> StorageStatus:
    return StorageStatus(
        space=disk_space.space_report(), expired_stored=AgentSession.objects.expired().count(), last_purge=last_purge()
    )


@dataclass(frozen=True)
class ObservedState:
    """What a scrape of the metrics reads when it is made (sessions_app/api/scrape.py): the free
    space, the reserve, sessions past their TTL still stored, and the deletion log's size and latest
    checkpoint; two queries, counts and times only."""

    space: disk_space.SpaceReport
    expired_stored: int
    log_size: int
    checkpoint_signed_at: dt.datetime | None


def observed_state() -> ObservedState:
    status = deletion_log.status()
    return ObservedState(
        space=disk_space.space_report(),
        expired_stored=AgentSession.objects.expired().count(),
        log_size=status.size,
        checkpoint_signed_at=status.signed_at,
    )


@dataclass(frozen=True)
class DeletionLogOverview:
    """What the admin shows of the deletion log: sizes, the latest checkpoint and the public key."""

    status: deletion_log.LogStatus
    root: str | None  # the latest checkpoint's root, base64 as in its text
    public_key: str  # `<origin>+<key id>+<key>`, as served at /.well-known/deletion-log-key
    previous_keys: tuple[str, ...]  # the public keys it replaced (DELETION_LOG_PREVIOUS_KEYS)
    audited_sessions: int  # sessions erased according to the deletion audit: the log's size, when both agree
    # Whether this server's keys (current or previous) signed the latest checkpoint: False where
    # another server appends with a key of its own, whose receipts this key cannot check.
    latest_signed_by_our_keys: bool | None = None  # None: no checkpoint yet


def deletion_log_status() -> DeletionLogOverview:
    """The log's size, latest signed checkpoint and public key, beside the audit's count (for the admin)."""
    status = deletion_log.status()
    root = status.checkpoint.splitlines()[2] if status.checkpoint else None  # origin, size, root, ...
    audited = DeletionAudit.objects.aggregate(total=Sum("sessions_deleted"))["total"] or 0
    previous = tuple(key.vkey for key in log_key.previous_verifiers())
    ours = None
    if status.checkpoint:
        try:
            open_note(status.checkpoint, list(log_key.verifiers()))
            ours = True
        except Rejected:
            ours = False
    return DeletionLogOverview(status, root, log_key.verifier().vkey, previous, audited, ours)


def accounts_overview(accounts):
    """The passkey accounts as the admin lists them: how many passkeys (and synced ones), their last
    use and how many sessions each keeps. Counts and dates: no id, key or wrapped token is read."""
    return accounts.annotate(
        passkey_count=Count("credentials", distinct=True),
        synced_passkey_count=Count("credentials", filter=Q(credentials__backed_up=True), distinct=True),
        passkey_last_used_at=Max("credentials__last_used_at"),
        session_count=Count("sessions", distinct=True),
    ).only("created_at", "last_sign_in_at")
