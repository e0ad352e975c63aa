"""Erasing sessions: the one place rows of a session are deleted for good.

The owner's DELETE, the TTL purge and the admin all come through
`erase_sessions`, which removes the sessions with their events, the per-owner
state no remaining session needs, and writes one audit row without personal
data. secure_delete (sessions_app.sqlite) makes the deletes overwrite bytes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.db import transaction
from django.db.models import QuerySet

from .models import AgentSession, DeletionAudit, SessionEvent, UserState


@dataclass
class Erased:
    sessions: int = 0
    events: int = 0
    user_states: int = 0

    def __iadd__(self, other: "Erased") -> "Erased":
        self.sessions += other.sessions
        self.events += other.events
        self.user_states += other.user_states
        return self


def erase_sessions(sessions: QuerySet) -> Erased:
    """Deletes `sessions` and what only they needed, in the caller's transaction."""
    owners = set(sessions.values_list("app_name", "user_id"))
    deleted, by_model = sessions.delete()
    erased = Erased(
        sessions=by_model.get(AgentSession._meta.label, 0),
        events=by_model.get(SessionEvent._meta.label, 0),
    )
    # ADK `user:` state belongs to an owner, not a session; once no session of
    # that owner is left, nothing needs it. One lookup and one delete per app
    # for the whole batch, not two queries per owner (the purge's hot path).
    for app_name in {app for app, _ in owners}:
        user_ids = {user for app, user in owners if app == app_name}
        still_owning = AgentSession.objects.filter(app_name=app_name, user_id__in=user_ids).values("user_id")
        orphaned = UserState.objects.filter(app_name=app_name, user_id__in=user_ids).exclude(user_id__in=still_owning)
        erased.user_states += orphaned.delete()[0]
    return erased


def record(trigger: str, erased: Erased, started: float) -> None:
    """Audits a deletion that removed something: counts, trigger and duration only."""
    if erased.sessions:
        DeletionAudit.objects.create(
            trigger=trigger,
            sessions_deleted=erased.sessions,
            events_deleted=erased.events,
            duration_ms=round((time.monotonic() - started) * 1000),
        )


def erase_and_record(sessions: QuerySet, trigger: str) -> Erased:
    started = time.monotonic()
    with transaction.atomic():
        erased = erase_sessions(sessions)
        record(trigger, erased, started)
    return erased
