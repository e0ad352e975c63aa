"""A session's events appended: sealed in their places, the state re-sealed once, in one
transaction checked against what the writer saw (raw SQL: sessions.py says why)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction

from sessions_app.choices import FailureKind
from sessions_app.exceptions import SessionMissing
from sessions_app.infra import sql
from sessions_app.models import AgentSession, SessionEvent
from sessions_app.security import sealing
from sessions_app.storage import scoped_state
from sessions_app.storage.scoped_state import Deltas
from sessions_app.storage.sessions import PlanCounter, last_activity_from_db, to_datetime

if TYPE_CHECKING:
    from google.adk.events.event import Event

S, E = AgentSession, SessionEvent
_SESSION_LAST_ACTIVITY = AgentSession._meta.get_field("last_activity_at")


class StaleWriter(Exception):
    """The writer's copy is older than the stored session: another writer appended since."""


@dataclass(frozen=True)
class WriterView:
    """What a writer saw of the session: the revision it read, or (a copy built elsewhere,
    without one) its last activity and last event, judged as ADK's database services do."""

    revision: int | None
    last_update_time: float = 0.0
    last_event_id: str | None = None


@dataclass(frozen=True)
class Appended:
    revision: int
    last_activity_at: dt.datetime
    stored: list[bool]  # per event: False where an equal copy was already stored (a retry)


# The write lock of the append: the session's key, revision, last activity and state.
# FOR UPDATE (where the database has it) makes the revision check and the update one
# atomic step; on SQLite the IMMEDIATE transaction already holds the write lock.
LOCK_SESSION = sql.Statement(
    lambda n: (
        f"""SELECT {n.column(S, "id")}, {n.column(S, "revision")}, {n.column(S, "last_activity_at")},
              {n.column(S, "state")} FROM {n.table(S)}
       WHERE {n.column(S, "app_name")} = %s AND {n.column(S, "owner_id")} = %s
       AND {n.column(S, "session_id")} = %s{n.for_update}"""
    )
)


# Stored events with the id of the one being appended (almost always none):
# sealed values differ on every write, so an equal re-delivery is found by
# opening them, not by comparing bytes in SQL.
def events_with_ids(connection, count: int) -> str:
    n = sql.Names(connection)
    return (
        f"SELECT {n.column(E, 'event_id')}, {n.column(E, 'seq')}, {n.column(E, 'timestamp')},"
        f" {n.column(E, 'event_data')} FROM {n.table(E)}"
        f" WHERE {n.column(E, 'agent_session')} = %s AND {n.column(E, 'event_id')} IN ({sql.keys(count)})"
    )


LAST_EVENT_ID = sql.Statement(
    lambda n: (
        f"SELECT {n.column(E, 'event_id')} FROM {n.table(E)} WHERE {n.column(E, 'agent_session')} = %s"
        f" ORDER BY {n.column(E, 'seq')} DESC"
    )
)
INSERT_EVENT = sql.Statement(
    lambda n: (
        f"""INSERT INTO {n.table(E)} ({n.column(E, "agent_session")}, {n.column(E, "seq")},
       {n.column(E, "event_id")}, {n.column(E, "invocation_id")}, {n.column(E, "author")},
       {n.column(E, "timestamp")}, {n.column(E, "event_data")}) VALUES (%s, %s, %s, %s, %s, %s, %s)"""
    )
)
UPDATE_SESSION = sql.Statement(
    lambda n: (
        f"UPDATE {n.table(S)} SET {n.column(S, 'revision')} = %s, {n.column(S, 'last_activity_at')} = %s,"
        f" {n.column(S, 'state')} = %s, {n.column(S, 'plan_versions')} = %s WHERE {n.column(S, 'id')} = %s"
    )
)


def append_events(
    app_name: str,
    owner_id: str,
    session_id: str,
    events: list[tuple[Event, Deltas]],
    seen: WriterView,
    *,
    count_plans: PlanCounter | None = None,
) -> Appended:
    """Appends `events` (each with its state deltas) in one transaction.

    Event n of a session is stored with seq n, sealed in its place, and the
    state is re-sealed once with the new revision (and its plan versions counted by
    `count_plans`, None: not counted). An event equal to one already stored (same id, same
    content) is applied once, as ADK's in-memory service does. Raises SessionMissing,
    StaleWriter, or IntegrityCheckFailed (an event numbered as the next one is already stored:
    the revision was put back).
    """
    # Before the transaction: without a token nothing is written at all. On SQLite every
    # writer waits for the one in the transaction, so what needs no row is done first.
    sealer = sealing.session_sealer(app_name, owner_id, session_id)
    dumped = [(event, deltas, event.model_dump_json(exclude_none=True)) for event, deltas in events]
    connection = transaction.get_connection()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(LOCK_SESSION(connection), [app_name, owner_id, session_id])
        row = cursor.fetchone()
        if row is None:
            raise SessionMissing(session_id)
        pk, revision, stored_last_activity_at, sealed_state = row
        already = _stored_with_ids(cursor, connection, sealer, pk, [event.id for event, _, _ in dumped])
        state = None  # opened at the first event that is not a retry
        scoped: Deltas = {"app": {}, "user": {}}
        stored, last_activity_at = [], None
        for event, deltas, event_json in dumped:
            if event_json in already.get(event.id, ()):
                stored.append(False)
                continue
            if state is None:
                _check_not_stale(cursor, connection, seen, pk, revision, stored_last_activity_at)
                state = sealing.open_state(sealer, sealed_state, revision)
            state.update(deltas["session"])
            scoped["app"].update(deltas["app"])
            scoped["user"].update(deltas["user"])
            # The row is locked for this transaction: the next revision is this event's number.
            revision += 1
            try:
                cursor.execute(
                    INSERT_EVENT(connection),
                    [
                        pk,
                        revision,
                        event.id,
                        event.invocation_id or "",
                        event.author or "",
                        event.timestamp,
                        sealing.seal_event(sealer, revision, event.id, event.timestamp, event_json),
                    ],
                )
            except IntegrityError:
                raise sealing.IntegrityCheckFailed(session_id, FailureKind.STATE_REPLAYED) from None
            already.setdefault(event.id, set()).add(event_json)  # delivered twice in one call
            last_activity_at = to_datetime(event.timestamp)
            stored.append(True)
        if state is not None:
            scoped_state.apply_scoped_deltas(app_name, owner_id, scoped)
            stored_time = _SESSION_LAST_ACTIVITY.get_db_prep_save(last_activity_at, connection)
            # The clear count with the sealed state it is read from, in one statement.
            sealed = sealing.seal_state(sealer, state, revision)
            plans = count_plans(state) if count_plans else None
            cursor.execute(UPDATE_SESSION(connection), [revision, stored_time, sealed, plans, pk])
        else:  # every event was a retry: nothing changed
            last_activity_at = last_activity_from_db(stored_last_activity_at, connection)
    # The stored time keeps microseconds only; the writer gets the stored value back
    # (as DatabaseSessionService does), so its copy and the next load compare equal.
    return Appended(revision=revision, last_activity_at=last_activity_at, stored=stored)


def _stored_with_ids(cursor, connection, sealer, pk: int, event_ids: list[str]) -> dict[str, set[str]]:
    """The stored events of the session with these ids (almost always none), opened: event id ->
    their JSON. One query for the whole append."""
    ids = list(dict.fromkeys(event_ids))
    if not ids:
        return {}
    cursor.execute(events_with_ids(connection, len(ids)), [pk, *ids])
    stored: dict[str, set[str]] = {}
    for event_id, seq, timestamp, sealed in cursor.fetchall():
        stored.setdefault(event_id, set()).add(sealing.open_event(sealer, seq, event_id, timestamp, sealed))
    return stored


def _check_not_stale(cursor, connection, seen: WriterView, pk: int, revision: int, stored_last_activity_at) -> None:
    if seen.revision is not None:
        if seen.revision != revision:
            raise StaleWriter(pk)
        return
    # A copy without a revision is stale only if storage moved past its last event.
    if last_activity_from_db(stored_last_activity_at, connection).timestamp() > seen.last_update_time:
        cursor.execute(LAST_EVENT_ID(connection) + " " + connection.ops.limit_offset_sql(0, 1), [pk])
        last = cursor.fetchone()
        if (last[0] if last else None) != seen.last_event_id:
            raise StaleWriter(pk)
