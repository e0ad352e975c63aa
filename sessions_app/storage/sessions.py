"""The session store: a session's rows made, read and listed, its content sealed and opened here
(`sealing` says how); its events are appended in `appending` and its rows erased in `row_erasure`.
Synchronous, knowing neither HTTP nor ADK's semantics (state prefixes, temp state, stale markers).

Content needs the owner's token in `crypto.token_context`: without one, reading or writing content
raises `KeyUnavailable` before anything is written; a value that does not open, or a history rolled
back or truncated, raises `sealing.IntegrityCheckFailed`. Deleting needs no key.

The storage's raw SQL, said once: here, in `appending`, in `row_erasure`'s two deletes and in the
deletion log's append, all through `sessions_app.infra.sql`. A turn loads its session, checks its
usage and appends its events on every message, and building those statements through the ORM took
several times the CPU SQLite took to run them; the ORM's delete() reads every row before it
deletes (benchmarks/results/store.md). Everything else is the ORM.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction

from sessions_app.choices import FailureKind
from sessions_app.exceptions import SessionMissing
from sessions_app.infra import sql
from sessions_app.models import AgentSession, AppState, SessionEvent, UserState, new_session_id
from sessions_app.security import sealing
from sessions_app.security.crypto import DecryptionFailed
from sessions_app.storage import scoped_state
from sessions_app.storage.scoped_state import Deltas

if TYPE_CHECKING:  # ADK is imported where events are read: the purge and the admin never need it
    from google.adk.events.event import Event

S, E, A, U = AgentSession, SessionEvent, AppState, UserState
_SESSION_LAST_ACTIVITY = AgentSession._meta.get_field("last_activity_at")

# How many plan versions a session state holds (agent.plans.plan_count): the caller's, since
# storage knows no agent. None: not counted.
PlanCounter = Callable[[dict], int]


class SessionExists(Exception):
    """A session with the chosen id already exists for this owner."""


@dataclass
class LoadedSession:
    """A session as stored, its content opened."""

    app_name: str
    owner_id: str
    session_id: str
    last_activity_at: dt.datetime
    revision: int
    state: dict  # session-scoped keys only
    app_state: dict
    user_state: dict
    events: list[Event] = field(default_factory=list)


def to_datetime(timestamp: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(timestamp, tz=dt.UTC)


def last_activity_from_db(value, connection) -> dt.datetime:
    return sql.from_db(_SESSION_LAST_ACTIVITY, value, connection)


def _connection():
    return transaction.get_connection()


# --- Create ------------------------------------------------------------------------------


def create(
    app_name: str, owner_id: str, session_id: str | None, deltas: Deltas, *, count_plans: PlanCounter | None = None
) -> LoadedSession:
    """A new session with the `deltas` of its initial state; `session_id` None: a new UUID."""
    chosen_id = session_id
    # The id is known before the row exists: it is part of the key's scope.
    session_id = chosen_id or new_session_id()
    sealer = sealing.session_sealer(app_name, owner_id, session_id)
    now = to_datetime(time.time())
    with transaction.atomic():
        if chosen_id and AgentSession.objects.owned(app_name, owner_id, chosen_id).exists():
            raise SessionExists(session_id)
        scoped_state.apply_scoped_deltas(app_name, owner_id, deltas)
        row = AgentSession(
            app_name=app_name,
            owner_id=owner_id,
            session_id=session_id,
            state=sealing.seal_state(sealer, deltas["session"], 0),
            plan_versions=count_plans(deltas["session"]) if count_plans else None,
            created_at=now,
            last_activity_at=now,
        )
        try:
            row.save(force_insert=True)
        except IntegrityError:
            # Another writer created the same id after the check above (the
            # check takes no lock on PostgreSQL).
            raise SessionExists(session_id) from None
        connection = _connection()
        with connection.cursor() as cursor:
            scoped_app, scoped_user = scoped_state.scoped_states(cursor, connection, app_name, owner_id)
    return LoadedSession(app_name, owner_id, session_id, now, 0, deltas["session"], scoped_app, scoped_user)


# --- Load --------------------------------------------------------------------------------

SESSION_WITH_STATES = sql.Statement(
    lambda n: (
        f"""SELECT {n.column(S, "id")}, {n.column(S, "state")}, {n.column(S, "last_activity_at")},
              {n.column(S, "revision")},
              (SELECT {n.column(A, "state")} FROM {n.table(A)} WHERE {n.column(A, "app_name")} = %s),
              (SELECT {n.column(U, "state")} FROM {n.table(U)}
               WHERE {n.column(U, "app_name")} = %s AND {n.column(U, "owner_id")} = %s)
       FROM {n.table(S)} WHERE {n.column(S, "app_name")} = %s AND {n.column(S, "owner_id")} = %s
       AND {n.column(S, "session_id")} = %s"""
    )
)
# The session's revision and its events' sequence numbers in one statement, so
# they are one snapshot (the revision is NULL once the session is gone); on the
# (session, seq) unique index.
STORED_SEQUENCE = sql.Statement(
    lambda n: (
        f"""SELECT (SELECT {n.column(S, "revision")} FROM {n.table(S)} WHERE {n.column(S, "id")} = %s),
              COUNT(*), COUNT(DISTINCT {n.column(E, "seq")}), MIN({n.column(E, "seq")}), MAX({n.column(E, "seq")})
       FROM {n.table(E)} WHERE {n.column(E, "agent_session")} = %s"""
    )
)


# An event's number, id and timestamp name the place its sealed data opens in.
# Only those up to the revision the state was read at: a later one was
# appended after that read.
def _events_up_to(n: sql.Names) -> str:
    return (
        f"SELECT {n.column(E, 'seq')}, {n.column(E, 'event_id')}, {n.column(E, 'timestamp')},"
        f" {n.column(E, 'event_data')} FROM {n.table(E)}"
        f" WHERE {n.column(E, 'agent_session')} = %s AND {n.column(E, 'seq')} <= %s"
    )


# Newest first, so a LIMIT keeps the recent ones.
EVENTS_UP_TO = sql.Statement(lambda n: f"{_events_up_to(n)} ORDER BY {n.column(E, 'seq')} DESC")
EVENTS_SINCE = sql.Statement(
    lambda n: f"{_events_up_to(n)} AND {n.column(E, 'timestamp')} >= %s ORDER BY {n.column(E, 'seq')} DESC"
)
ALL_EVENTS_UP_TO = sql.Statement(lambda n: f"{_events_up_to(n)} ORDER BY {n.column(E, 'seq')}")


def stored_sequence(cursor, connection, session_pk: int) -> sealing.StoredSequence:
    cursor.execute(STORED_SEQUENCE(connection), [session_pk, session_pk])
    return sealing.StoredSequence(*cursor.fetchone())


def _event_rows(cursor, connection, pk: int, revision: int, num_recent: int | None, after: float | None):
    """(seq, event id, timestamp, sealed JSON) of the events up to `revision`, newest first."""
    if num_recent == 0:
        return []
    query, params = EVENTS_UP_TO(connection), [pk, revision]
    if after is not None:
        # Every event at or after the cutoff, as GetSessionConfig documents and
        # ADK's persistent services do.
        query, params = EVENTS_SINCE(connection), [pk, revision, after]
    if num_recent is not None:
        query += " " + connection.ops.limit_offset_sql(0, num_recent)
    cursor.execute(query, params)
    return cursor.fetchall()


def _open_events(sealer, rows_oldest_first: Iterable[tuple]) -> list[Event]:
    from google.adk.events.event import Event  # not at the top: the purge and the admin never load ADK

    return [Event.model_validate_json(sealing.open_event(sealer, *row)) for row in rows_oldest_first]


def load(
    app_name: str,
    owner_id: str,
    session_id: str,
    *,
    num_recent_events: int | None = None,
    after_timestamp: float | None = None,
) -> LoadedSession | None:
    """The session with its events in append order (the window options are GetSessionConfig's);
    None when there is none. Three statements: the row with the scoped states, the stored
    sequence, the events; the sequence is checked before anything is decrypted."""
    connection = _connection()
    with connection.cursor() as cursor:
        cursor.execute(SESSION_WITH_STATES(connection), [app_name, app_name, owner_id, app_name, owner_id, session_id])
        row = cursor.fetchone()
        if row is None:
            return None
        pk, sealed_state, last_activity_at, revision, app_value, user_value = row
        stored = stored_sequence(cursor, connection, pk)
        if stored.revision is None:
            return None  # deleted since the first statement
        event_rows = _event_rows(cursor, connection, pk, revision, num_recent_events, after_timestamp)
    sealer = sealing.session_sealer(app_name, owner_id, session_id)
    sealing.check_event_sequence(session_id, revision, stored)
    state = sealing.open_state(sealer, sealed_state, revision)
    events = _open_events(sealer, reversed(event_rows))
    try:
        owner_state = scoped_state.open_user_state(app_name, owner_id, user_value)
    except DecryptionFailed:
        raise sealing.IntegrityCheckFailed(session_id, FailureKind.USER_STATE_TAMPERED) from None
    return LoadedSession(
        app_name,
        owner_id,
        session_id,
        last_activity_from_db(last_activity_at, connection),
        revision,
        state,
        scoped_state.open_app_state(app_value, connection),
        owner_state,
        events,
    )


# --- The API's reads of a session it found by its row ------------------------------------


def open_content(session: AgentSession) -> tuple[dict, list[Event]]:
    """State and events of the row as read (its state and revision, one snapshot): the events
    up to that revision, checked against the stored sequence before anything is decrypted.
    Raises SessionMissing when the session was deleted since the row was read."""
    sealer = sealing.session_sealer(session.app_name, session.owner_id, session.session_id)
    connection = _connection()
    with connection.cursor() as cursor:
        stored = stored_sequence(cursor, connection, session.pk)
        if stored.revision is None:
            raise SessionMissing(session.session_id)
        sealing.check_event_sequence(session.session_id, session.revision, stored)
        cursor.execute(ALL_EVENTS_UP_TO(connection), [session.pk, session.revision])
        rows = cursor.fetchall()
    state = sealing.open_state(sealer, session.state, session.revision)
    return state, _open_events(sealer, rows)


@dataclass(frozen=True)
class SessionUsage:
    turns: int  # the user's messages stored
    size_bytes: int  # sealed state plus sealed events


# AgentSession.objects.with_usage()'s size and the user's messages, as one statement: it runs
# before every turn, where building the ORM's query cost more than running it. The sealed
# columns are binary, so LENGTH counts bytes on SQLite and PostgreSQL alike.
USAGE = sql.Statement(
    lambda n: (
        f"""SELECT (SELECT COUNT(*) FROM {n.table(E)}
                          WHERE {n.column(E, "agent_session")} = %s AND {n.column(E, "author")} = %s),
              LENGTH({n.column(S, "state")}) + (SELECT COALESCE(SUM(LENGTH({n.column(E, "event_data")})), 0)
                                                FROM {n.table(E)} WHERE {n.column(E, "agent_session")} = %s)
       FROM {n.table(S)} WHERE {n.column(S, "id")} = %s"""
    )
)


def usage(session_pk: int) -> SessionUsage | None:
    """What the session holds, for its per-session limits; needs no key (one query). None: deleted."""
    connection = _connection()
    with connection.cursor() as cursor:
        cursor.execute(USAGE(connection), [session_pk, "user", session_pk, session_pk])
        row = cursor.fetchone()
    return None if row is None else SessionUsage(turns=row[0], size_bytes=row[1])


# --- List --------------------------------------------------------------------------------


def _listed(n: sql.Names, owner_clause: str) -> str:
    return (
        f"SELECT {n.column(S, 'owner_id')}, {n.column(S, 'session_id')}, {n.column(S, 'last_activity_at')},"
        f" {n.column(S, 'revision')}, {n.column(S, 'state')} FROM {n.table(S)}"
        f" WHERE {n.column(S, 'app_name')} = %s{owner_clause}"
        f" ORDER BY {n.column(S, 'last_activity_at')}, {n.column(S, 'owner_id')}, {n.column(S, 'session_id')}"
    )


APP_SESSIONS = sql.Statement(lambda n: _listed(n, ""))
USER_SESSIONS = sql.Statement(lambda n: _listed(n, f" AND {n.column(S, 'owner_id')} = %s"))
APP_USER_STATES = sql.Statement(
    lambda n: (
        f"SELECT {n.column(U, 'owner_id')}, {n.column(U, 'state')} FROM {n.table(U)}"
        f" WHERE {n.column(U, 'app_name')} = %s"
    )
)


def list_sessions(app_name: str, owner_id: str | None = None) -> list[LoadedSession]:
    """The app's (or one owner's) sessions without events, oldest activity first.
    Every owner's content opens with that owner's key: listing all owners fails closed
    (DecryptionFailed) unless the token in context is theirs too."""
    connection = _connection()
    with connection.cursor() as cursor:
        if owner_id is not None:
            scoped_app, scoped_user = scoped_state.scoped_states(cursor, connection, app_name, owner_id)
            state_by_user = {owner_id: scoped_user}
            cursor.execute(USER_SESSIONS(connection), [app_name, owner_id])
        else:
            scoped_app = scoped_state.app_state(app_name)
            cursor.execute(APP_USER_STATES(connection), [app_name])
            state_by_user = {
                owner: scoped_state.open_user_state(app_name, owner, sealed) for owner, sealed in cursor.fetchall()
            }
            cursor.execute(APP_SESSIONS(connection), [app_name])
        rows = cursor.fetchall()
    return [
        LoadedSession(
            app_name,
            owner,
            session_id,
            last_activity_from_db(last_activity_at, connection),
            revision,
            sealing.open_state(sealing.session_sealer(app_name, owner, session_id), sealed_state, revision),
            scoped_app,
            state_by_user.get(owner, {}),
        )
        for owner, session_id, last_activity_at, revision, sealed_state in rows
    ]


def note_model_provider(session_pk: int, provider: str) -> None:
    """Adds `provider` to the model providers that received the session's content
    (`AgentSession.model_providers`, in the order first used) unless it is there already."""
    session = AgentSession.objects.filter(pk=session_pk)
    with transaction.atomic():
        seen = session.values_list("model_providers", flat=True).first() or ""
        if provider not in seen.split(","):
            session.update(model_providers=f"{seen},{provider}" if seen else provider)
