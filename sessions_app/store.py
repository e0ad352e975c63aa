"""An ADK session service on the Django ORM.

`DjangoSessionService` keeps ADK sessions, their events and ADK's scoped
state in the project's database, so the ADK `Runner` reads and writes them
exactly as it would through ADK's own services. Behaviour follows ADK's
`InMemorySessionService` (the reference the differential tests compare
against) and, where only a persistent store can have it, ADK's database
services (stale-writer detection).

All database work of a method runs in one synchronous function wrapped by
`sync_to_async` (thread-sensitive), so the async methods are safe to await
from the Runner's event loop under both WSGI (`async_to_sync`) and ASGI
servers, and each call costs one thread hop, not one per query.

The statements every Runner turn runs (reading a session, appending an
event) and those of listing and deleting are plain SQL on Django's
connection, built from the models' table and column names; see "SQL of the
hot paths" below. The rest uses the ORM.

Session state, events and `user:` state are stored sealed (`sealing`), with
keys derived from the session token the API puts in `crypto.token_context`
for the request; `sync_to_async` carries that context to the thread that runs
the queries. Without a token, reading or writing content raises
`KeyUnavailable` before anything is written; a value that does not open, or
a history that was rolled back or truncated, raises
`sealing.IntegrityCheckFailed` (a `DecryptionFailed`). Deleting needs no key.

The history is bound as `sealing` describes: event number n of a session is
stored with `seq` n and sealed with n in its place, and the state is re-sealed
with the new revision on every append (so an append decrypts and re-seals
the state even when the event does not change it: the state's place must
name the revision). A read checks the stored sequence with one aggregate
statement (`_stored_sequence`) before it decrypts anything.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any, Optional

from asgiref.sync import sync_to_async
from django.db import IntegrityError, transaction
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.sessions import _session_util
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from google.adk.sessions.state import State
from typing_extensions import override

from . import sealing
from .crypto import DecryptionFailed
from .models import AgentSession, AppState, SessionEvent, UserState, new_session_id

_STALE_MESSAGE = (
    "The session object is older than the stored session: another writer has"
    " appended to it since it was read. Reload the session and try again."
)


def _to_datetime(timestamp: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(timestamp, tz=dt.timezone.utc)


def _normalize_id(session_id: Optional[str]) -> Optional[str]:
    # ADK's services strip surrounding white space from session ids.
    return session_id.strip() if session_id else session_id


def _merged_state(app_state: dict, user_state: dict, session_state: dict) -> dict[str, Any]:
    merged = dict(session_state)
    merged.update({State.APP_PREFIX + key: value for key, value in app_state.items()})
    merged.update({State.USER_PREFIX + key: value for key, value in user_state.items()})
    return merged


def _app_state(app_name: str) -> dict:
    row = AppState.objects.filter(app_name=app_name).values_list("state", flat=True).first()
    return row or {}


def _user_state(app_name: str, user_id: str) -> dict:
    sealed = (
        UserState.objects.filter(app_name=app_name, user_id=user_id)
        .values_list("state", flat=True)
        .first()
    )
    return _open_user_state(app_name, user_id, sealed)


def _open_user_state(app_name: str, user_id: str, sealed) -> dict:
    """The owner's `user:` state; {} where none is stored (then no key is needed)."""
    if sealed is None:
        return {}
    return sealing.open_user_state(sealing.owner_sealer(app_name, user_id), sealed)


# --- SQL of the hot paths -------------------------------------------------------
# Every turn of the ADK Runner reads its session whole and then appends each
# event it produces, so `get_session` and `append_event` run far more often than
# anything else here. Building their queries through the ORM took several times
# the CPU that SQLite took to run them (benchmarks/store_bench.py measures it;
# results in benchmarks/results/store.md), so these statements, and those of
# list_sessions and delete_session, are written once per database connection
# from the models' own table and column names, quoted for that database.
# Sealed values are bytes both ways; app state and timestamps go through the
# model fields' own conversions, so what is stored is what the ORM writes and
# reads. Creating a session, merging app/user state, the marker-less stale
# check and get_user_state stay on the ORM.


class _Sql:
    """The hot-path statements for one database connection (see above)."""

    def __init__(self, connection):
        qn = connection.ops.quote_name
        sessions = qn(AgentSession._meta.db_table)
        events = qn(SessionEvent._meta.db_table)
        app_states = qn(AppState._meta.db_table)
        user_states = qn(UserState._meta.db_table)

        def col(model, name: str) -> str:
            return qn(model._meta.get_field(name).column)

        s_pk, s_app, s_user, s_sid = (col(AgentSession, n) for n in ("id", "app_name", "user_id", "session_id"))
        s_state, s_updated, s_revision = (col(AgentSession, n) for n in ("state", "updated_at", "revision"))
        e_session, e_event_id, e_seq = (col(SessionEvent, n) for n in ("session", "event_id", "seq"))
        e_columns = [col(SessionEvent, n) for n in ("session", "seq", "event_id", "invocation_id", "author")]
        e_time, e_data = col(SessionEvent, "timestamp"), col(SessionEvent, "event_data")
        owner = f"{s_app} = %s AND {s_user} = %s AND {s_sid} = %s"
        for_update = " FOR UPDATE" if connection.features.has_select_for_update else ""

        # The session row with its app and user state, in one statement.
        self.session_with_states = (
            f"SELECT {s_pk}, {s_state}, {s_updated}, {s_revision},"
            f" (SELECT {col(AppState, 'state')} FROM {app_states} WHERE {col(AppState, 'app_name')} = %s),"
            f" (SELECT {col(UserState, 'state')} FROM {user_states}"
            f" WHERE {col(UserState, 'app_name')} = %s AND {col(UserState, 'user_id')} = %s)"
            f" FROM {sessions} WHERE {owner}"
        )
        self.scoped_states = (
            f"SELECT (SELECT {col(AppState, 'state')} FROM {app_states} WHERE {col(AppState, 'app_name')} = %s),"
            f" (SELECT {col(UserState, 'state')} FROM {user_states}"
            f" WHERE {col(UserState, 'app_name')} = %s AND {col(UserState, 'user_id')} = %s)"
        )
        # The session's revision and its events' sequence numbers in one
        # statement, so they are one snapshot (the revision is NULL once the
        # session is gone); on the (session, seq) unique index.
        self.stored_sequence = (
            f"SELECT (SELECT {s_revision} FROM {sessions} WHERE {s_pk} = %s),"
            f" COUNT(*), COUNT(DISTINCT {e_seq}), MIN({e_seq}), MAX({e_seq}) FROM {events} WHERE {e_session} = %s"
        )
        # An event's sequence number, id and timestamp name the place its
        # sealed data opens in. Only those up to the revision the state was
        # read at: a later one was appended after that read.
        self.events = (
            f"SELECT {e_seq}, {e_event_id}, {e_time}, {e_data} FROM {events} WHERE {e_session} = %s AND {e_seq} <= %s"
        )
        self.events_after = f"{self.events} AND {e_time} >= %s"
        self.events_order = f" ORDER BY {e_seq} DESC"
        self.limit = connection.ops.limit_offset_sql
        # The write lock of the append: the session's key, revision and state.
        self.lock_session = f"SELECT {s_pk}, {s_revision}, {s_state} FROM {sessions} WHERE {owner}{for_update}"
        self.session_updated_at = f"SELECT {s_updated} FROM {sessions} WHERE {s_pk} = %s"
        # list_sessions: the app's (or one user's) sessions, oldest activity first.
        listed = f"SELECT {s_user}, {s_sid}, {s_updated}, {s_revision}, {s_state} FROM {sessions} WHERE {s_app} = %s"
        order = f" ORDER BY {s_updated}, {s_user}, {s_sid}"
        self.list_sessions = listed + order
        self.list_user_sessions = f"{listed} AND {s_user} = %s{order}"
        self.user_states = (
            f"SELECT {col(UserState, 'user_id')}, {col(UserState, 'state')} FROM {user_states}"
            f" WHERE {col(UserState, 'app_name')} = %s"
        )
        # delete_session: the events first, as the ORM's cascade does (no
        # signal receivers are connected to these models).
        self.delete_events = (
            f"DELETE FROM {events} WHERE {e_session} IN (SELECT {s_pk} FROM {sessions} WHERE {owner})"
        )
        self.delete_session = f"DELETE FROM {sessions} WHERE {owner}"
        # Stored events with the id of the one being appended (almost always
        # none): sealed values differ on every write, so an equal re-delivery is
        # found by opening them, not by comparing bytes in SQL.
        self.events_with_id = (
            f"SELECT {e_seq}, {e_time}, {e_data} FROM {events} WHERE {e_session} = %s AND {e_event_id} = %s"
        )
        self.insert_event = (
            f"INSERT INTO {events} ({', '.join(e_columns)}, {e_time}, {e_data})"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)"
        )
        self.update_session = (
            f"UPDATE {sessions} SET {s_revision} = %s, {s_updated} = %s, {s_state} = %s WHERE {s_pk} = %s"
        )


_SQL_BY_ALIAS: dict[str, _Sql] = {}


def _sql(connection) -> _Sql:
    sql = _SQL_BY_ALIAS.get(connection.alias)
    if sql is None:
        sql = _SQL_BY_ALIAS[connection.alias] = _Sql(connection)
    return sql


def _from_db(field, value, connection):
    """A raw column value as the ORM would return it for `field` (same converters)."""
    if value is None:
        return None
    expression = field.cached_col
    for converter in connection.ops.get_db_converters(expression) + expression.get_db_converters(connection):
        value = converter(value, expression, connection)
    return value


def _to_db(field, value, connection):
    """`value` as the ORM would write it to `field`'s column."""
    return field.get_db_prep_save(value, connection)


_SESSION_UPDATED_AT = AgentSession._meta.get_field("updated_at")
_APP_STATE = AppState._meta.get_field("state")


def stored_sequence(session_pk: int) -> sealing.StoredSequence:
    """The session's revision and its events' sequence numbers, as one snapshot."""
    connection = transaction.get_connection()
    with connection.cursor() as cursor:
        return _stored_sequence(cursor, _sql(connection), session_pk)


def _stored_sequence(cursor, sql: _Sql, session_pk: int) -> sealing.StoredSequence:
    cursor.execute(sql.stored_sequence, [session_pk, session_pk])
    return sealing.StoredSequence(*cursor.fetchone())


def _scoped_states(cursor, connection, app_name: str, user_id: str) -> tuple[dict, dict]:
    """(app state, user state) in one statement; {} where none is stored."""
    cursor.execute(_sql(connection).scoped_states, [app_name, app_name, user_id])
    app_value, user_value = cursor.fetchone()
    return (
        _from_db(_APP_STATE, app_value, connection) or {},
        _open_user_state(app_name, user_id, user_value),
    )


# The state rows are locked (where the database can) so two sessions writing
# the same app or user state at once cannot lose one another's keys; ADK's
# DatabaseSessionService locks them the same way. A no-op on SQLite, whose
# IMMEDIATE transactions already serialize writers.
def _merge_into_app_state(app_name: str, delta: dict) -> None:
    row, _ = AppState.objects.select_for_update().get_or_create(app_name=app_name)
    row.state = {**row.state, **delta}
    row.save(update_fields=["state", "updated_at"])


def _merge_into_user_state(app_name: str, user_id: str, delta: dict) -> None:
    sealer = sealing.owner_sealer(app_name, user_id)
    rows = UserState.objects.select_for_update()
    # A new row starts empty and is sealed below, in the same transaction.
    row, created = rows.get_or_create(app_name=app_name, user_id=user_id, defaults={"state": b""})
    stored = {} if created else sealing.open_user_state(sealer, row.state)
    row.state = sealing.seal_user_state(sealer, {**stored, **delta})
    row.save(update_fields=["state", "updated_at"])


def _apply_scoped_deltas(app_name: str, user_id: str, deltas: dict[str, dict]) -> None:
    if deltas["app"]:
        _merge_into_app_state(app_name, deltas["app"])
    if deltas["user"]:
        _merge_into_user_state(app_name, user_id, deltas["user"])


def _to_adk_session(
    app_name: str,
    user_id: str,
    session_id: str,
    updated_at: dt.datetime,
    revision: int,
    state: dict,
    events: list[Event],
) -> Session:
    session = Session(
        app_name=app_name,
        user_id=user_id,
        id=session_id,
        state=state,
        events=events,
        last_update_time=updated_at.timestamp(),
    )
    session._storage_update_marker = str(revision)
    return session


class DjangoSessionService(BaseSessionService):
    """ADK sessions stored through the Django ORM (see the module docstring)."""

    # --- create ---------------------------------------------------------------
    @override
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: Optional[dict[str, Any]] = None,
        session_id: Optional[str] = None,
    ) -> Session:
        return await sync_to_async(self._create_session)(app_name, user_id, state, session_id)

    def _create_session(self, app_name, user_id, state, session_id) -> Session:
        chosen_id = _normalize_id(session_id) or None
        # The id is known before the row exists: it is part of the key's scope.
        session_id = chosen_id or new_session_id()
        sealer = sealing.session_sealer(app_name, user_id, session_id)
        deltas = _session_util.extract_json_safe_state_delta(state or {})
        now = _to_datetime(time.time())
        with transaction.atomic():
            if chosen_id and AgentSession.objects.filter(
                app_name=app_name, user_id=user_id, session_id=chosen_id
            ).exists():
                raise AlreadyExistsError(f"Session with id {chosen_id} already exists.")
            _apply_scoped_deltas(app_name, user_id, deltas)
            row = AgentSession(
                app_name=app_name,
                user_id=user_id,
                session_id=session_id,
                state=sealing.seal_state(sealer, deltas["session"], 0),
                created_at=now,
                updated_at=now,
            )
            try:
                row.save(force_insert=True)
            except IntegrityError:
                # Another writer created the same id after the check above
                # (the check takes no lock on PostgreSQL); ADK's database
                # services report that race as the same AlreadyExistsError.
                message = f"Session with id {row.session_id} already exists."
                raise AlreadyExistsError(message) from None
            connection = transaction.get_connection()
            with connection.cursor() as cursor:
                app_state, user_state = _scoped_states(cursor, connection, app_name, user_id)
        merged = _merged_state(app_state, user_state, deltas["session"])
        return _to_adk_session(app_name, user_id, row.session_id, now, row.revision, merged, [])

    # --- read -----------------------------------------------------------------
    @override
    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: Optional[GetSessionConfig] = None,
    ) -> Optional[Session]:
        return await sync_to_async(self._get_session)(app_name, user_id, session_id, config)

    def _get_session(self, app_name, user_id, session_id, config) -> Optional[Session]:
        session_id = _normalize_id(session_id)
        connection = transaction.get_connection()
        sql = _sql(connection)
        with connection.cursor() as cursor:
            cursor.execute(sql.session_with_states, [app_name, app_name, user_id, app_name, user_id, session_id])
            row = cursor.fetchone()
            if row is None:
                return None
            pk, state, updated_at, revision, app_state, user_state = row
            stored = _stored_sequence(cursor, sql, pk)
            if stored.revision is None:
                return None  # deleted since the first statement
            event_rows = self._load_event_rows(cursor, sql, pk, revision, config)
        sealer = sealing.session_sealer(app_name, user_id, session_id)
        # The history first: it needs no decryption.
        sealing.check_event_sequence(session_id, revision, stored)
        session_state = sealing.open_state(sealer, state, revision)
        events = [
            Event.model_validate_json(sealing.open_event(sealer, *event_row)) for event_row in reversed(event_rows)
        ]
        try:
            owner_state = _open_user_state(app_name, user_id, user_state)
        except DecryptionFailed:
            raise sealing.IntegrityCheckFailed(session_id, sealing.FailureKind.USER_STATE_TAMPERED) from None
        merged = _merged_state(_from_db(_APP_STATE, app_state, connection) or {}, owner_state, session_state)
        updated_at = _from_db(_SESSION_UPDATED_AT, updated_at, connection)
        return _to_adk_session(app_name, user_id, session_id, updated_at, revision, merged, events)

    @staticmethod
    def _load_event_rows(
        cursor, sql: _Sql, pk: int, revision: int, config: Optional[GetSessionConfig]
    ) -> list[tuple]:
        """(seq, event id, timestamp, sealed event JSON) of the events stored up to `revision`,
        newest first (the caller reverses them)."""
        if config and config.num_recent_events == 0:
            return []
        # Events come back in the order they were appended (their sequence
        # number), as ADK's in-memory service keeps them.
        query, params = sql.events, [pk, revision]
        if config and config.after_timestamp is not None:
            # Every event at or after the cutoff, as GetSessionConfig documents
            # and ADK's persistent services do. The in-memory service returns
            # only those after the last older event, which differs only when
            # timestamps are out of append order.
            query, params = sql.events_after, [pk, revision, config.after_timestamp]
        query += sql.events_order
        if config and config.num_recent_events is not None:
            query += " " + sql.limit(0, config.num_recent_events)
        cursor.execute(query, params)
        return cursor.fetchall()

    @override
    async def list_sessions(
        self, *, app_name: str, user_id: Optional[str] = None
    ) -> ListSessionsResponse:
        return await sync_to_async(self._list_sessions)(app_name, user_id)

    def _list_sessions(self, app_name, user_id) -> ListSessionsResponse:
        connection = transaction.get_connection()
        sql = _sql(connection)
        with connection.cursor() as cursor:
            if user_id is not None:
                app_state, user_state = _scoped_states(cursor, connection, app_name, user_id)
                state_by_user = {user_id: user_state}
                cursor.execute(sql.list_user_sessions, [app_name, user_id])
            else:
                app_state = _app_state(app_name)
                cursor.execute(sql.user_states, [app_name])
                # Each owner's state opens with that owner's key: listing every
                # user's sessions fails closed (DecryptionFailed) unless the
                # token in context is theirs too.
                state_by_user = {
                    row_user_id: _open_user_state(app_name, row_user_id, state)
                    for row_user_id, state in cursor.fetchall()
                }
                cursor.execute(sql.list_sessions, [app_name])
            rows = cursor.fetchall()
        sessions = [
            _to_adk_session(
                app_name,
                row_user_id,
                session_id,
                _from_db(_SESSION_UPDATED_AT, updated_at, connection),
                revision,
                _merged_state(
                    app_state,
                    state_by_user.get(row_user_id, {}),
                    sealing.open_state(sealing.session_sealer(app_name, row_user_id, session_id), state, revision),
                ),
                [],
            )
            for row_user_id, session_id, updated_at, revision, state in rows
        ]
        return ListSessionsResponse(sessions=sessions)

    @override
    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await sync_to_async(_user_state)(app_name, user_id)

    # --- delete ---------------------------------------------------------------
    @override
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await sync_to_async(self.delete_session_sync)(app_name, user_id, session_id)

    def delete_session_sync(self, app_name: str, user_id: str, session_id: str) -> int:
        """Deletes the session and its events; returns how many sessions went (0 or 1)."""
        owner = [app_name, user_id, _normalize_id(session_id)]
        connection = transaction.get_connection()
        sql = _sql(connection)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql.delete_events, owner)
            cursor.execute(sql.delete_session, owner)
            return cursor.rowcount

    # --- append ---------------------------------------------------------------
    @override
    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        # Temp state is visible to the rest of this invocation but never stored.
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        stored = await sync_to_async(self._store_event)(session, event)
        if stored:
            self._commit_event_to_session(session, event)
        return event

    def _store_event(self, session: Session, event: Event) -> bool:
        """Writes the event; False when an equal copy was already stored (a retry)."""
        event_json = event.model_dump_json(exclude_none=True)
        # Before the transaction: without a token nothing is written at all.
        sealer = sealing.session_sealer(session.app_name, session.user_id, session.id)
        state_delta = event.actions.state_delta if event.actions else None
        deltas = _session_util.extract_json_safe_state_delta(state_delta or {})
        connection = transaction.get_connection()
        sql = _sql(connection)
        with transaction.atomic(), connection.cursor() as cursor:
            # FOR UPDATE (where the database has it) makes the revision check
            # and the update one atomic step; on SQLite the IMMEDIATE
            # transaction already holds the write lock.
            owner = [session.app_name, session.user_id, session.id]
            cursor.execute(sql.lock_session, owner)
            row = cursor.fetchone()
            if row is None:
                raise SessionNotFoundError(f"Session {session.id} not found.")
            pk, revision, sealed_state = row
            if self._equal_event_stored(cursor, sql, sealer, pk, event.id, event_json):
                # An equal re-delivery (same id, same content) is applied once,
                # as ADK's in-memory service does.
                return False
            self._check_not_stale(cursor, sql, connection, session, pk, revision)
            state = {**sealing.open_state(sealer, sealed_state, revision), **deltas["session"]}
            _apply_scoped_deltas(session.app_name, session.user_id, deltas)
            # The row is locked for this transaction: the next revision is
            # known, and it is this event's sequence number.
            seq = revision + 1
            sealed_event = sealing.seal_event(sealer, seq, event.id, event.timestamp, event_json)
            try:
                cursor.execute(
                    sql.insert_event,
                    [pk, seq, event.id, event.invocation_id or "", event.author or "", event.timestamp, sealed_event],
                )
            except IntegrityError:
                # An event numbered `seq` is already stored: the revision was put back.
                raise sealing.IntegrityCheckFailed(session.id, sealing.FailureKind.STATE_REPLAYED) from None
            updated_at = _to_datetime(event.timestamp)
            stored_time = _to_db(_SESSION_UPDATED_AT, updated_at, connection)
            cursor.execute(sql.update_session, [seq, stored_time, sealing.seal_state(sealer, state, seq), pk])
        # The stored time keeps microseconds only; the caller's session gets the
        # stored value (as DatabaseSessionService does), so the session a writer
        # holds and the one the next get_session returns compare equal.
        session.last_update_time = updated_at.timestamp()
        session._storage_update_marker = str(seq)
        return True

    @staticmethod
    def _equal_event_stored(cursor, sql: _Sql, sealer, pk: int, event_id: str, event_json: str) -> bool:
        cursor.execute(sql.events_with_id, [pk, event_id])
        return any(
            sealing.open_event(sealer, seq, event_id, timestamp, sealed) == event_json
            for seq, timestamp, sealed in cursor.fetchall()
        )

    @staticmethod
    def _check_not_stale(cursor, sql: _Sql, connection, session: Session, pk: int, revision: int) -> None:
        if session._storage_update_marker is not None:
            if session._storage_update_marker != str(revision):
                raise StaleSessionError(_STALE_MESSAGE)
            return
        # A Session built elsewhere carries no marker: like ADK's database
        # services, it is stale only if storage moved past its last event.
        cursor.execute(sql.session_updated_at, [pk])
        updated_at = _from_db(_SESSION_UPDATED_AT, cursor.fetchone()[0], connection)
        if updated_at.timestamp() > session.last_update_time:
            last_stored = (
                SessionEvent.objects.filter(session_id=pk)
                .order_by("-seq")
                .values_list("event_id", flat=True)
                .first()
            )
            last_known = session.events[-1].id if session.events else None
            if last_stored != last_known:
                raise StaleSessionError(_STALE_MESSAGE)
