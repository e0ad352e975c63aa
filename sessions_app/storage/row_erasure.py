"""A selection of sessions erased as rows: its events, its sessions and the `user:` state no
remaining session of an owner needs. Only rows: the audit, the deletion log and the retry on a
full disk are the erasure's (sessions_app/erasure.py), which calls this in its transaction."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count, QuerySet, Sum
from django.utils import timezone

from sessions_app import retention
from sessions_app.deletion_log.store import ErasedSession
from sessions_app.infra import sql
from sessions_app.models import AccountSession, AgentSession, SessionEvent, UserState

S, E = AgentSession, SessionEvent


@dataclass
class ErasedRows:
    """What erasing a selection deleted, and each session as the deletion log describes it."""

    sessions: int = 0
    events: int = 0
    user_states: int = 0
    live: int = 0  # of the sessions, those not expired when they were erased
    erased: list[ErasedSession] = field(default_factory=list)


@dataclass(frozen=True)
class _Described:
    pk: int
    app_name: str
    owner_id: str
    logged: ErasedSession
    live: bool


def _described(sessions: QuerySet) -> list[_Described]:
    """Each session of the selection, oldest key first; the rows locked (where the database can)
    so what is described is what the deletes remove. Two statements: FOR UPDATE takes no
    aggregate, so the events are counted apart."""
    rows = list(
        AgentSession.objects.filter(pk__in=sessions.values("pk"))
        .select_for_update()
        .order_by("pk")
        .annotate(state_bytes=sql.ByteLength("state"))
        .values_list("pk", "app_name", "owner_id", "session_id", "created_at", "last_activity_at", "state_bytes")
    )
    events = {
        pk: (count, size)
        for pk, count, size in SessionEvent.objects.filter(agent_session__in=[row[0] for row in rows])
        .values("agent_session")
        .annotate(count=Count("pk"), size=Sum(sql.ByteLength("event_data")))
        .values_list("agent_session", "count", "size")
    }
    now = timezone.now()
    described = []
    for pk, app_name, owner_id, session_id, created_at, last_activity_at, state_bytes in rows:
        count, size = events.get(pk, (0, 0))
        stored = (state_bytes or 0) + (size or 0)
        logged = ErasedSession(session_id, owner_id, created_at, count, stored)
        live = retention.expires_at(created_at, last_activity_at) > now
        described.append(_Described(pk, app_name, owner_id, logged, live))
    return described


def _delete_by_keys(cursor, model, column_field: str, pks: list[int]) -> int:
    n = sql.Names(cursor.db)
    cursor.execute(f"DELETE FROM {n.table(model)} WHERE {n.column(model, column_field)} IN ({sql.keys(len(pks))})", pks)
    return cursor.rowcount


def erase_rows(sessions: QuerySet, *, keep_owner_state: bool = False) -> ErasedRows:
    """Deletes `sessions` with their events and, unless kept, the `user:` state no remaining
    session of its owner needs. Call it inside a transaction: it opens none (in a savepoint SQLite
    handles the freed pages differently: tests/storage/test_secure_delete.py). secure_delete
    (sessions_app.infra.sqlite) makes the deletes overwrite the bytes."""
    rows = _described(sessions)
    if not rows:
        return ErasedRows()
    pks = [row.pk for row in rows]
    erased = ErasedRows(live=sum(row.live for row in rows), erased=[row.logged for row in rows])
    # An account's hold on a session (and the session's wrapped tokens) goes with the session: the
    # row points at it, so a session erased by any trigger leaves no trace in an account.
    AccountSession.objects.filter(agent_session__in=pks).delete()
    with transaction.get_connection().cursor() as cursor:
        # Events first, as the ORM's cascade does (no signal receivers are connected to these models).
        erased.events = _delete_by_keys(cursor, E, "agent_session", pks)
        erased.sessions = _delete_by_keys(cursor, S, "id", pks)
    if not keep_owner_state:
        # `user:` state belongs to an owner, not a session: once no session of that owner is
        # left, nothing needs it. One delete per app for the whole batch (the purge's hot path).
        for app_name in {row.app_name for row in rows}:
            owners = {row.owner_id for row in rows if row.app_name == app_name}
            still_owning = AgentSession.objects.filter(app_name=app_name, owner_id__in=owners).values("owner_id")
            orphaned = UserState.objects.filter(app_name=app_name, owner_id__in=owners).exclude(
                owner_id__in=still_owning
            )
            erased.user_states += orphaned.delete()[0]
    return erased


def count(sessions: QuerySet) -> ErasedRows:
    """What erasing `sessions` would delete (sessions and events), deleting nothing."""
    return ErasedRows(
        sessions=sessions.count(), events=SessionEvent.objects.filter(agent_session__in=sessions.values("pk")).count()
    )
