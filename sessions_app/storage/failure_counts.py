"""Integrity failures: recorded where the API answers them.

`sealing` raises `IntegrityCheckFailed` where a session's stored values or
history do not verify (altered, moved, put back, deleted); the API answers it
with its uniform 404, so the caller learns nothing, and records it here: one
log line naming the session's public id and the kind, never content or a
token, and one row counting it for the operators (the retention policy page).
Recorded at the API's edge, not where it is detected, because detection may
happen inside a transaction that is then rolled back (a turn's writes).

A turn's model calls to tools that do not exist are counted here too, once the
turn is stored: the count only, never the name the model made up (it may quote
what the model was sent).
"""

from __future__ import annotations

import logging

from django.db import transaction

from sessions_app.choices import FailureKind
from sessions_app.infra import metrics
from sessions_app.models import IntegrityFailure
from sessions_app.security.sealing import IntegrityCheckFailed

logger = logging.getLogger(__name__)
for _kind in FailureKind:  # each kind's series from the start; unknown tool calls have their own
    if _kind != FailureKind.UNKNOWN_TOOL_CALL:
        metrics.INTEGRITY_FAILURES.labels(_kind.value)


def record_failure(failure: IntegrityCheckFailed) -> None:
    logger.warning("integrity failure: session=%s kind=%s", failure.session_id, failure.kind.value)
    with transaction.atomic():
        IntegrityFailure.objects.create(kind=failure.kind)
    metrics.INTEGRITY_FAILURES.labels(failure.kind.value).inc()


def record_unknown_tool_calls(count: int) -> None:
    logger.warning("model called %d tool(s) that do not exist", count)
    with transaction.atomic():
        IntegrityFailure.objects.bulk_create(
            [IntegrityFailure(kind=FailureKind.UNKNOWN_TOOL_CALL) for _ in range(count)]
        )
    metrics.UNKNOWN_TOOL_CALLS.inc(count)
