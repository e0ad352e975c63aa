"""The writes: a session created, a session deleted, an integrity failure counted, the purge's
interval set.

Views call these and the reads in `selectors`; the rows are storage's, the erasure is `erasure`'s.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.views.decorators.debug import sensitive_variables
from django_q.models import Schedule

from agent import APP_NAME
from agent.documents import sandbox
from agent.documents.lines import Document, DocumentRefused
from agent.plans import initial_state, plan_count
from agent.screening import KINDS
from sessions_app import erasure, retention
from sessions_app.choices import ErasureTrigger
from sessions_app.infra import disk_space, metrics
from sessions_app.models import AgentSession
from sessions_app.security.crypto import token_context
from sessions_app.security.sealing import IntegrityCheckFailed
from sessions_app.security.tokens import new_token, owner_id_for
from sessions_app.storage import failure_counts, sessions

for _kind in KINDS:  # the screen's kinds (a flag the model raises: turns/service.py)
    metrics.SCREEN_FLAGS.labels(_kind)


@dataclass
class NewSession:
    session_id: str
    expires_at: dt.datetime
    token: str  # handed to the client once, never stored


@sensitive_variables()
def session_create(*, resume_text: str, concealed_lines: tuple[int, ...] = ()) -> NewSession:
    """A new session for a resume; `concealed_lines` (0 = the first) are the lines a resume file hid
    from its reader: the screen flags each (agent/screening.py, "concealed")."""
    # Before anything is written: under the headroom, nothing of the resume is stored.
    disk_space.ensure_headroom()
    token = new_token()
    # initial_state screens the resume (agent/screening.py): its findings are the session's
    # first flags, sealed with the rest of the state. The new session's state is sealed
    # with a key derived from its new token.
    with token_context(token):
        deltas = {"app": {}, "user": {}, "session": initial_state(resume_text, concealed_lines)}
        created = sessions.create(APP_NAME, owner_id_for(token), None, deltas, count_plans=plan_count)
    metrics.SESSIONS_CREATED.inc()
    for flag in deltas["session"]["suspicious_flags"]:
        metrics.SCREEN_FLAGS.labels(flag["kind"]).inc()
    return NewSession(
        session_id=created.session_id,
        expires_at=retention.expires_at(created.last_activity_at, created.last_activity_at),
        token=token,
    )


def document_limits() -> sandbox.Limits:
    return sandbox.Limits(
        cpu_seconds=settings.DOCUMENT_READ_CPU_SECONDS,
        wall_seconds=settings.DOCUMENT_READ_WALL_SECONDS,
        memory_bytes=settings.DOCUMENT_READ_MEMORY_MB * 1024 * 1024,
        max_pages=settings.DOCUMENT_MAX_PAGES,
    )


@sensitive_variables()
def document_read(*, data: bytes, file_name: str) -> Document:
    """A resume file read in a bounded worker (agent/documents/): its bytes live in this request's
    memory and the worker's pipe only, and are kept nowhere. Raises DocumentRefused."""
    return sandbox.pool(settings.DOCUMENT_READ_WORKERS, document_limits()).read(data, file_name)


@sensitive_variables()
def session_create_from_document(*, document: Document) -> NewSession:
    """A new session for a resume read from a file: its text goes on as pasted text does, the lines
    the file hid flagged. Raises DocumentRefused("too_long") for a text over RESUME_MAX_CHARS."""
    if len(document.text) > settings.RESUME_MAX_CHARS:
        raise DocumentRefused("too_long")
    concealed = tuple(number - 1 for number in document.hidden_line_numbers)
    return session_create(resume_text=document.text, concealed_lines=concealed)


def session_delete(*, session_id: str, owner_id: str) -> str | None:
    """Deletes the owner's session (live or expired) and what only it needed; never refused for
    lack of room (`erasure`). Returns the receipt lookup of its erasure only when a live session
    was deleted: an expired one is erased too, but for the caller it was already gone."""
    selection = AgentSession.objects.owned(APP_NAME, owner_id, session_id)
    erased = erasure.erase_sessions(selection, trigger=ErasureTrigger.API)
    return erased.receipts[0] if erased.live else None


def integrity_failure_record(*, failure: IntegrityCheckFailed) -> None:
    """Counts a read refused because the session did not verify, for the operators (one log line
    naming the session's public id and the kind, one row): the API answers it with its 404."""
    failure_counts.record_failure(failure)


# How often the scheduled purge may run: at least once a day, at most once a minute.
PURGE_INTERVAL_MIN_MINUTES = 1
PURGE_INTERVAL_MAX_MINUTES = 24 * 60


def purge_interval_set(*, minutes: int) -> int:
    """Sets how many minutes apart the scheduled purge runs, and nothing else.

    The only write the admin makes to django-q2's tables: one column, never a
    schedule's function, arguments or hook (the scheduler would run those as
    the service). Returns how many schedules changed: 0 when there is none.
    """
    if not PURGE_INTERVAL_MIN_MINUTES <= minutes <= PURGE_INTERVAL_MAX_MINUTES:
        raise ValueError(
            f"purge interval {minutes} min is outside {PURGE_INTERVAL_MIN_MINUTES}..{PURGE_INTERVAL_MAX_MINUTES}"
        )
    # update(), not save(): the statement names `minutes` alone.
    return Schedule.objects.filter(func=retention.PURGE_TASK, schedule_type=Schedule.MINUTES).update(minutes=minutes)
