"""The erasure: the one use case that deletes sessions, whoever asks (the owner's DELETE, the
admin, ADK's delete_session, the purge and the start-up purge).

`erase_sessions` runs, in one transaction, the rows' erasure (`storage.row_erasure`), the audit
row (`DeletionAudit`: counts, trigger, duration) and one deletion-log entry per erased session
under one signed checkpoint (`deletion_log.store.append`): a failure anywhere undoes all of it.
On a full disk it runs once more on the erasure reserve's room (`disk_space.erasure_attempts`).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from django.db import transaction
from django.db.models import F, QuerySet

from sessions_app.choices import ErasureTrigger
from sessions_app.deletion_log import store as deletion_log
from sessions_app.deletion_log.formats.lookup import receipt_lookup
from sessions_app.infra import disk_space, metrics
from sessions_app.models import DeletionAudit
from sessions_app.storage import row_erasure


def trigger_label(trigger: str) -> str:
    """`trigger` as a metric's label: one of ErasureTrigger's values, or "other" (a caller may name
    itself otherwise, and a label holds a closed set)."""
    return str(trigger) if trigger in ErasureTrigger.values else "other"


for _trigger in ErasureTrigger:
    metrics.SESSIONS_ERASED.labels(_trigger.value)


@dataclass
class ErasureCounts:
    """What an erasure deleted. `audit`: the audit row that counts it (None when nothing was);
    `log_size`: the deletion log's size after its entries (0 when nothing was erased);
    `receipts`: the receipt lookup of each erased session (where its receipt is served);
    `live`: how many of the sessions had not expired (an expired one was already gone)."""

    sessions: int = 0
    events: int = 0
    user_states: int = 0
    live: int = field(default=0, compare=False)
    audit: int | None = field(default=None, compare=False)
    log_size: int = field(default=0, compare=False)
    receipts: list[str] = field(default_factory=list, compare=False, repr=False)

    def __iadd__(self, other: ErasureCounts) -> ErasureCounts:
        self.sessions += other.sessions
        self.events += other.events
        self.user_states += other.user_states
        self.live += other.live
        self.audit = other.audit if other.audit is not None else self.audit
        self.log_size = max(self.log_size, other.log_size)
        self.receipts += other.receipts
        return self

    def as_dict(self) -> dict:
        return {name: value for name, value in asdict(self).items() if name not in ("audit", "receipts", "live")}


def record_erasure(
    trigger: str, erased: row_erasure.ErasedRows, started: float, *, adding_to: int | None = None
) -> int | None:
    """Audits a deletion that removed something: counts, trigger and duration only. A later batch
    of the same purge adds to the row its first batch wrote (`adding_to`), so one purge is one
    row. Returns the row's pk (None when nothing was removed)."""
    if not erased.sessions:
        return adding_to
    duration_ms = round((time.monotonic() - started) * 1000)
    if adding_to is not None:
        added = DeletionAudit.objects.filter(pk=adding_to).update(
            sessions_deleted=F("sessions_deleted") + erased.sessions,
            events_deleted=F("events_deleted") + erased.events,
            duration_ms=duration_ms,
        )
        if added:
            return adding_to
    return DeletionAudit.objects.create(
        trigger=trigger, sessions_deleted=erased.sessions, events_deleted=erased.events, duration_ms=duration_ms
    ).pk


def erase(
    sessions: QuerySet,
    trigger: str,
    *,
    keep_owner_state: bool = False,
    started: float | None = None,
    adding_to: int | None = None,
) -> ErasureCounts:
    """The erasure's one transaction's work: rows, audit row, log entries, in the caller's
    transaction, which it never opens itself (`erase_sessions` does)."""
    if transaction.get_autocommit():
        raise transaction.TransactionManagementError("erase() runs inside its caller's transaction")
    started = time.monotonic() if started is None else started
    rows = row_erasure.erase_rows(sessions, keep_owner_state=keep_owner_state)
    return ErasureCounts(
        sessions=rows.sessions,
        events=rows.events,
        user_states=rows.user_states,
        live=rows.live,
        audit=record_erasure(trigger, rows, started, adding_to=adding_to),
        log_size=deletion_log.append(rows.erased, trigger),
        receipts=[receipt_lookup(session.owner_id, session.session_id) for session in rows.erased],
    )


def erase_sessions(
    selection: QuerySet,
    *,
    trigger: str,
    keep_owner_state: bool = False,
    batch_size: int | None = None,
    started: float | None = None,
    adding_to: int | None = None,
) -> ErasureCounts:
    """Erases `selection` (or, with `batch_size`, its first sessions by key that no other erasure
    holds) in a transaction of its own, retried once on the erasure reserve's room when the disk
    is full. A purge's batches name the audit row they add to (`adding_to`) and when it began."""
    started = time.monotonic() if started is None else started
    for attempt in disk_space.erasure_attempts():
        erased = None
        with attempt, transaction.atomic():
            chosen = selection
            if batch_size is not None:
                # On PostgreSQL, two purges at once (two clusters, or the admin's and the
                # schedule's) each lock their own batch and skip the other's; SQLite has one
                # writer at a time and ignores the clause.
                batch = list(
                    selection.order_by("pk")
                    .select_for_update(skip_locked=True)
                    .values_list("pk", flat=True)[:batch_size]
                )
                if not batch:
                    return ErasureCounts()
                chosen = selection.model.objects.filter(pk__in=batch)
            erased = erase(chosen, trigger, keep_owner_state=keep_owner_state, started=started, adding_to=adding_to)
        if erased is not None:  # committed (an attempt the disk refused is None: the next one runs)
            if erased.sessions:  # counted once, here, whoever asked
                metrics.SESSIONS_ERASED.labels(trigger_label(trigger)).inc(erased.sessions)
            return erased
    raise AssertionError("the last attempt never swallows what the erasure raised")


def would_erase(selection: QuerySet) -> ErasureCounts:
    """What erasing `selection` would delete (sessions and events), deleting nothing."""
    counted = row_erasure.count(selection)
    return ErasureCounts(sessions=counted.sessions, events=counted.events)
