"""The session repository: the only code that reads or writes a session's rows.

Sessions, their events, the owner's `user:` state, ADK's `app:` state and the
deletion audit are written here and nowhere else, and content is sealed and
opened here (`sealing` says how). It is synchronous and knows neither HTTP nor
ADK's session semantics (state prefixes, temp state, stale markers): the ADK
adapter (`adk_service`), the services, selectors, the turn and the purge call it.

Content needs the owner's token in `crypto.token_context`: without one,
reading or writing content raises `KeyUnavailable` before anything is written;
a value that does not open, or a history rolled back or truncated, raises
`sealing.IntegrityCheckFailed`. Deleting needs no key.

A turn loads its session and appends its events in one transaction; those
statements are plain SQL on Django's connection, each named next to its use
(`_Sql`), because building them through the ORM took several times the CPU
SQLite took to run them (benchmarks/results/store.md).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction
from django.db.models import Count, F, Func, IntegerField, QuerySet, Sum
from django.db.models.functions import Coalesce

from agent.plans import plan_count
from sessions_app import retention
from sessions_app.choices import FailureKind
from sessions_app.exceptions import SessionMissing
from sessions_app.infra import disk_space
from sessions_app.models import AgentSession, AppState, DeletionAudit, SessionEvent, UserState, new_session_id
from sessions_app.security import sealing
from sessions_app.security.crypto import DecryptionFailed
from sessions_app.storage import deletion_log

if TYPE_CHECKING:  # ADK is imported where events are read: the purge and the admin never need it
    from google.adk.events.event import Event


class SessionExists(Exception):
    """A session with the chosen id already exists for this owner."""


class StaleWriter(Exception):
    """The writer's copy is older than the stored session: another writer appended since."""


# Scoped state deltas, as ADK splits a state dict: {"app": {...}, "user": {...}, "session": {...}}.
Deltas = dict[str, dict]


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


# --- Statements ----------------------------------------------------------------------


class _Names:
    """`{s}` is the model's quoted table, `{s.field}` the field's quoted column."""

    def __init__(self, model, connection):
        self._model, self._qn = model, connection.ops.quote_name

    def __format__(self, spec) -> str:
        return self._qn(self._model._meta.db_table)

    def __getattr__(self, name: str) -> str:
        return self._qn(self._model._meta.get_field(name).column)


class _Sql:
    """One named statement, written with the models' names (s: sessions, e: events,
    a: app state, u: user state) and quoted for each database it runs on."""

    def __init__(self, template: str):
        self.template = " ".join(template.split())
        self._by_alias: dict[str, str] = {}

    def __call__(self, connection) -> str:
        sql = self._by_alias.get(connection.alias)
        if sql is None:
            names = {m: _Names(model, connection) for m, model in _MODELS.items()}
            for_update = " FOR UPDATE" if connection.features.has_select_for_update else ""
            sql = self._by_alias[connection.alias] = self.template.format(**names, for_update=for_update)
        return sql


_MODELS = {"s": AgentSession, "e": SessionEvent, "a": AppState, "u": UserState}
_SESSION_LAST_ACTIVITY = AgentSession._meta.get_field("last_activity_at")
_APP_STATE = AppState._meta.get_field("state")


def _from_db(model_field, value, connection):
    """A raw column value as the ORM would return it (the same converters)."""
    if value is None:
        return None
    expression = model_field.cached_col
    for converter in connection.ops.get_db_converters(expression) + expression.get_db_converters(connection):
        value = converter(value, expression, connection)
    return value


def _to_datetime(timestamp: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(timestamp, tz=dt.UTC)


def _connection():
    return transaction.get_connection()


# --- Scoped state ------------------------------------------------------------------------

SCOPED_STATES = _Sql(
    """SELECT (SELECT {a.state} FROM {a} WHERE {a.app_name} = %s),
              (SELECT {u.state} FROM {u} WHERE {u.app_name} = %s AND {u.owner_id} = %s)"""
)


def _open_user_state(app_name: str, owner_id: str, sealed) -> dict:
    """The owner's `user:` state; {} where none is stored (then no key is needed)."""
    if sealed is None:
        return {}
    return sealing.open_user_state(sealing.owner_sealer(app_name, owner_id), sealed)


def _scoped_states(cursor, connection, app_name: str, owner_id: str) -> tuple[dict, dict]:
    """(app state, user state) in one statement; {} where none is stored."""
    cursor.execute(SCOPED_STATES(connection), [app_name, app_name, owner_id])
    app_value, user_value = cursor.fetchone()
    return _from_db(_APP_STATE, app_value, connection) or {}, _open_user_state(app_name, owner_id, user_value)


def app_state(app_name: str) -> dict:
    return AppState.objects.filter(app_name=app_name).values_list("state", flat=True).first() or {}


def user_state(app_name: str, owner_id: str) -> dict:
    sealed = UserState.objects.filter(app_name=app_name, owner_id=owner_id).values_list("state", flat=True).first()
    return _open_user_state(app_name, owner_id, sealed)


# The state rows are locked (where the database can) so two sessions writing
# the same app or user state at once cannot lose one another's keys; ADK's
# DatabaseSessionService locks them the same way. A no-op on SQLite, whose
# IMMEDIATE transactions already serialize writers.
def _merge_into_app_state(app_name: str, delta: dict) -> None:
    row, _ = AppState.objects.select_for_update().get_or_create(app_name=app_name)
    row.state = {**row.state, **delta}
    row.save(update_fields=["state", "updated_at"])


def _merge_into_user_state(app_name: str, owner_id: str, delta: dict) -> None:
    sealer = sealing.owner_sealer(app_name, owner_id)
    # A new row starts empty and is sealed below, in the same transaction.
    row, created = UserState.objects.select_for_update().get_or_create(
        app_name=app_name, owner_id=owner_id, defaults={"state": b""}
    )
    stored = {} if created else sealing.open_user_state(sealer, row.state)
    row.state = sealing.seal_user_state(sealer, {**stored, **delta})
    row.save(update_fields=["state", "updated_at"])


def merge_user_state(app_name: str, owner_id: str, delta: dict) -> None:
    """Merges `delta` into the owner's `user:` state (sealed with the owner's key)."""
    with transaction.atomic():
        _merge_into_user_state(app_name, owner_id, delta)


def _apply_scoped_deltas(app_name: str, owner_id: str, deltas: Deltas) -> None:
    if deltas["app"]:
        _merge_into_app_state(app_name, deltas["app"])
    if deltas["user"]:
        _merge_into_user_state(app_name, owner_id, deltas["user"])


# --- Create ------------------------------------------------------------------------------


def create(app_name: str, owner_id: str, session_id: str | None, deltas: Deltas) -> LoadedSession:
    """A new session with the `deltas` of its initial state; `session_id` None: a new UUID."""
    chosen_id = session_id
    # The id is known before the row exists: it is part of the key's scope.
    session_id = chosen_id or new_session_id()
    sealer = sealing.session_sealer(app_name, owner_id, session_id)
    now = _to_datetime(time.time())
    with transaction.atomic():
        if chosen_id and owner_sessions(app_name, owner_id, chosen_id).exists():
            raise SessionExists(session_id)
        _apply_scoped_deltas(app_name, owner_id, deltas)
        row = AgentSession(
            app_name=app_name,
            owner_id=owner_id,
            session_id=session_id,
            state=sealing.seal_state(sealer, deltas["session"], 0),
            plan_versions=plan_count(deltas["session"]),
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
            scoped_app, scoped_user = _scoped_states(cursor, connection, app_name, owner_id)
    return LoadedSession(app_name, owner_id, session_id, now, 0, deltas["session"], scoped_app, scoped_user)


# --- Load --------------------------------------------------------------------------------

SESSION_WITH_STATES = _Sql(
    """SELECT {s.id}, {s.state}, {s.last_activity_at}, {s.revision},
              (SELECT {a.state} FROM {a} WHERE {a.app_name} = %s),
              (SELECT {u.state} FROM {u} WHERE {u.app_name} = %s AND {u.owner_id} = %s)
       FROM {s} WHERE {s.app_name} = %s AND {s.owner_id} = %s AND {s.session_id} = %s"""
)
# The session's revision and its events' sequence numbers in one statement, so
# they are one snapshot (the revision is NULL once the session is gone); on the
# (session, seq) unique index.
STORED_SEQUENCE = _Sql(
    """SELECT (SELECT {s.revision} FROM {s} WHERE {s.id} = %s),
              COUNT(*), COUNT(DISTINCT {e.seq}), MIN({e.seq}), MAX({e.seq})
       FROM {e} WHERE {e.agent_session} = %s"""
)
# An event's number, id and timestamp name the place its sealed data opens in.
# Only those up to the revision the state was read at: a later one was
# appended after that read. Newest first, so a LIMIT keeps the recent ones.
EVENTS_UP_TO = _Sql(
    "SELECT {e.seq}, {e.event_id}, {e.timestamp}, {e.event_data} FROM {e}"
    " WHERE {e.agent_session} = %s AND {e.seq} <= %s"
)
EVENTS_SINCE = _Sql(f"{EVENTS_UP_TO.template} AND {{e.timestamp}} >= %s")
NEWEST_FIRST = _Sql("ORDER BY {e.seq} DESC")


def _stored_sequence(cursor, connection, session_pk: int) -> sealing.StoredSequence:
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
    query += " " + NEWEST_FIRST(connection)
    if num_recent is not None:
        query += " " + connection.ops.limit_offset_sql(0, num_recent)
    cursor.execute(query, params)
    return cursor.fetchall()


def _open_events(sealer, rows_oldest_first: Iterable[tuple]) -> list[Event]:
    from google.adk.events.event import Event

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
        stored = _stored_sequence(cursor, connection, pk)
        if stored.revision is None:
            return None  # deleted since the first statement
        event_rows = _event_rows(cursor, connection, pk, revision, num_recent_events, after_timestamp)
    sealer = sealing.session_sealer(app_name, owner_id, session_id)
    sealing.check_event_sequence(session_id, revision, stored)
    state = sealing.open_state(sealer, sealed_state, revision)
    events = _open_events(sealer, reversed(event_rows))
    try:
        owner_state = _open_user_state(app_name, owner_id, user_value)
    except DecryptionFailed:
        raise sealing.IntegrityCheckFailed(session_id, FailureKind.USER_STATE_TAMPERED) from None
    return LoadedSession(
        app_name,
        owner_id,
        session_id,
        _from_db(_SESSION_LAST_ACTIVITY, last_activity_at, connection),
        revision,
        state,
        _from_db(_APP_STATE, app_value, connection) or {},
        owner_state,
        events,
    )


# --- The API's reads of a session it found by its row ------------------------------------


def owned_live_session(app_name: str, session_id: str, owner_id: str) -> AgentSession | None:
    """The session if it exists, belongs to `owner_id` and has not expired.

    One query with id and owner together: "missing", "someone else's",
    "expired" and "deleted" are the same miss and take the same path.
    """
    sessions = AgentSession.objects.filter(app_name=app_name, session_id=session_id, owner_id=owner_id)
    return retention.live(sessions).first()


def _row_sealer(session: AgentSession) -> sealing.SessionSealer:
    return sealing.session_sealer(session.app_name, session.owner_id, session.session_id)


ALL_EVENTS_UP_TO = _Sql(f"{EVENTS_UP_TO.template} ORDER BY {{e.seq}}")


def open_content(session: AgentSession) -> tuple[dict, list[Event]]:
    """State and events of the row as read (its state and revision, one snapshot): the events
    up to that revision, checked against the stored sequence before anything is decrypted.
    Raises SessionMissing when the session was deleted since the row was read."""
    sealer = _row_sealer(session)
    connection = _connection()
    with connection.cursor() as cursor:
        stored = _stored_sequence(cursor, connection, session.pk)
        if stored.revision is None:
            raise SessionMissing(session.session_id)
        sealing.check_event_sequence(session.session_id, session.revision, stored)
        cursor.execute(ALL_EVENTS_UP_TO(connection), [session.pk, session.revision])
        rows = cursor.fetchall()
    state = sealing.open_state(sealer, session.state, session.revision)
    return state, _open_events(sealer, rows)


class ByteLength(Func):
    """Length in bytes, not characters: UTF-8 text takes more bytes than it has characters."""

    function = "OCTET_LENGTH"
    output_field = IntegerField()

    def as_sqlite(self, compiler, connection, **extra_context):
        return self.as_sql(compiler, connection, template="LENGTH(CAST(%(expressions)s AS BLOB))", **extra_context)


# The stored (sealed) state plus every sealed event: what a session takes on disk.
STORED_BYTES = ByteLength("state") + Coalesce(Sum(ByteLength("events__event_data")), 0)


@dataclass(frozen=True)
class SessionUsage:
    turns: int  # the user's messages stored
    size_bytes: int  # sealed state plus sealed events


# STORED_BYTES and the user's messages, as one statement: it runs before every turn, where
# building the ORM's query cost more than running it. The sealed columns are binary, so
# LENGTH counts bytes on SQLite and PostgreSQL alike.
USAGE = _Sql(
    """SELECT (SELECT COUNT(*) FROM {e} WHERE {e.agent_session} = %s AND {e.author} = %s),
              LENGTH({s.state}) + (SELECT COALESCE(SUM(LENGTH({e.event_data})), 0) FROM {e}
                                   WHERE {e.agent_session} = %s)
       FROM {s} WHERE {s.id} = %s"""
)


def usage(session_pk: int) -> SessionUsage | None:
    """What the session holds, for its per-session limits; needs no key (one query). None: deleted."""
    connection = _connection()
    with connection.cursor() as cursor:
        cursor.execute(USAGE(connection), [session_pk, "user", session_pk, session_pk])
        row = cursor.fetchone()
    return None if row is None else SessionUsage(turns=row[0], size_bytes=row[1])


# --- List --------------------------------------------------------------------------------

LISTED = (
    "SELECT {s.owner_id}, {s.session_id}, {s.last_activity_at}, {s.revision}, {s.state}"
    " FROM {s} WHERE {s.app_name} = %s"
)
OLDEST_ACTIVITY_FIRST = " ORDER BY {s.last_activity_at}, {s.owner_id}, {s.session_id}"
APP_SESSIONS = _Sql(LISTED + OLDEST_ACTIVITY_FIRST)
USER_SESSIONS = _Sql(LISTED + " AND {s.owner_id} = %s" + OLDEST_ACTIVITY_FIRST)
APP_USER_STATES = _Sql("SELECT {u.owner_id}, {u.state} FROM {u} WHERE {u.app_name} = %s")


def list_sessions(app_name: str, owner_id: str | None = None) -> list[LoadedSession]:
    """The app's (or one owner's) sessions without events, oldest activity first.
    Every owner's content opens with that owner's key: listing all owners fails closed
    (DecryptionFailed) unless the token in context is theirs too."""
    connection = _connection()
    with connection.cursor() as cursor:
        if owner_id is not None:
            scoped_app, scoped_user = _scoped_states(cursor, connection, app_name, owner_id)
            state_by_user = {owner_id: scoped_user}
            cursor.execute(USER_SESSIONS(connection), [app_name, owner_id])
        else:
            scoped_app = app_state(app_name)
            cursor.execute(APP_USER_STATES(connection), [app_name])
            state_by_user = {owner: _open_user_state(app_name, owner, sealed) for owner, sealed in cursor.fetchall()}
            cursor.execute(APP_SESSIONS(connection), [app_name])
        rows = cursor.fetchall()
    return [
        LoadedSession(
            app_name,
            owner,
            session_id,
            _from_db(_SESSION_LAST_ACTIVITY, last_activity_at, connection),
            revision,
            sealing.open_state(sealing.session_sealer(app_name, owner, session_id), sealed_state, revision),
            scoped_app,
            state_by_user.get(owner, {}),
        )
        for owner, session_id, last_activity_at, revision, sealed_state in rows
    ]


# --- Append ------------------------------------------------------------------------------

# The write lock of the append: the session's key, revision, last activity and state.
# FOR UPDATE (where the database has it) makes the revision check and the update one
# atomic step; on SQLite the IMMEDIATE transaction already holds the write lock.
LOCK_SESSION = _Sql(
    """SELECT {s.id}, {s.revision}, {s.last_activity_at}, {s.state} FROM {s}
       WHERE {s.app_name} = %s AND {s.owner_id} = %s AND {s.session_id} = %s{for_update}"""
)
# Stored events with the id of the one being appended (almost always none):
# sealed values differ on every write, so an equal re-delivery is found by
# opening them, not by comparing bytes in SQL.
EVENTS_WITH_IDS = _Sql(
    "SELECT {e.event_id}, {e.seq}, {e.timestamp}, {e.event_data} FROM {e}"
    " WHERE {e.agent_session} = %s AND {e.event_id} IN ({{keys}})"
)
LAST_EVENT_ID = _Sql("SELECT {e.event_id} FROM {e} WHERE {e.agent_session} = %s ORDER BY {e.seq} DESC")
INSERT_EVENT = _Sql(
    """INSERT INTO {e} ({e.agent_session}, {e.seq}, {e.event_id}, {e.invocation_id}, {e.author}, {e.timestamp},
       {e.event_data}) VALUES (%s, %s, %s, %s, %s, %s, %s)"""
)
UPDATE_SESSION = _Sql(
    "UPDATE {s} SET {s.revision} = %s, {s.last_activity_at} = %s, {s.state} = %s, {s.plan_versions} = %s"
    " WHERE {s.id} = %s"
)


def append_events(
    app_name: str, owner_id: str, session_id: str, events: list[tuple[Event, Deltas]], seen: WriterView
) -> Appended:
    """Appends `events` (each with its state deltas) in one transaction.

    Event n of a session is stored with seq n, sealed in its place, and the
    state is re-sealed once with the new revision. An event equal to one
    already stored (same id, same content) is applied once, as ADK's
    in-memory service does. Raises SessionMissing, StaleWriter, or
    IntegrityCheckFailed (an event numbered as the next one is already stored:
    the revision was put back).
    """
    # Before the transaction: without a token nothing is written at all. On SQLite every
    # writer waits for the one in the transaction, so what needs no row is done first.
    sealer = sealing.session_sealer(app_name, owner_id, session_id)
    dumped = [(event, deltas, event.model_dump_json(exclude_none=True)) for event, deltas in events]
    connection = _connection()
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
            last_activity_at = _to_datetime(event.timestamp)
            stored.append(True)
        if state is not None:
            _apply_scoped_deltas(app_name, owner_id, scoped)
            stored_time = _SESSION_LAST_ACTIVITY.get_db_prep_save(last_activity_at, connection)
            # The clear count with the sealed state it is read from, in one statement: the deletion
            # log's entry counts what the state held when it was erased.
            sealed = sealing.seal_state(sealer, state, revision)
            cursor.execute(UPDATE_SESSION(connection), [revision, stored_time, sealed, plan_count(state), pk])
        else:  # every event was a retry: nothing changed
            last_activity_at = _from_db(_SESSION_LAST_ACTIVITY, stored_last_activity_at, connection)
    # The stored time keeps microseconds only; the writer gets the stored value back
    # (as DatabaseSessionService does), so its copy and the next load compare equal.
    return Appended(revision=revision, last_activity_at=last_activity_at, stored=stored)


def _stored_with_ids(cursor, connection, sealer, pk: int, event_ids: list[str]) -> dict[str, set[str]]:
    """The stored events of the session with these ids (almost always none), opened: event id ->
    their JSON. One query for the whole append."""
    ids = list(dict.fromkeys(event_ids))
    if not ids:
        return {}
    cursor.execute(_with_keys(EVENTS_WITH_IDS(connection), len(ids)), [pk, *ids])
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
    if _from_db(_SESSION_LAST_ACTIVITY, stored_last_activity_at, connection).timestamp() > seen.last_update_time:
        cursor.execute(LAST_EVENT_ID(connection) + " " + connection.ops.limit_offset_sql(0, 1), [pk])
        last = cursor.fetchone()
        if (last[0] if last else None) != seen.last_event_id:
            raise StaleWriter(pk)


def note_model_provider(session_pk: int, provider: str) -> None:
    """Adds `provider` to the model providers that received the session's content
    (`AgentSession.model_providers`, in the order first used) unless it is there already."""
    session = AgentSession.objects.filter(pk=session_pk)
    with transaction.atomic():
        seen = session.values_list("model_providers", flat=True).first() or ""
        if provider not in seen.split(","):
            session.update(model_providers=f"{seen},{provider}" if seen else provider)


# --- Erase -------------------------------------------------------------------------------


@dataclass
class Erased:
    """What an erasure deleted; `audit`: the audit row that counts it (None when nothing was);
    `log_size`: the deletion log's size after its entries (0 when nothing was erased)."""

    sessions: int = 0
    events: int = 0
    user_states: int = 0
    audit: int | None = field(default=None, compare=False)
    log_size: int = field(default=0, compare=False)
    # Each erased session as the deletion log describes it (not summed: one erasure's own).
    erased: list[deletion_log.ErasedSession] = field(default_factory=list, compare=False, repr=False)

    def __iadd__(self, other: Erased) -> Erased:
        self.sessions += other.sessions
        self.events += other.events
        self.user_states += other.user_states
        self.audit = other.audit if other.audit is not None else self.audit
        self.log_size = max(self.log_size, other.log_size)
        return self


DELETE_EVENTS = _Sql("DELETE FROM {e} WHERE {e.agent_session} IN ({{keys}})")
DELETE_SESSIONS = _Sql("DELETE FROM {s} WHERE {s.id} IN ({{keys}})")


def _with_keys(statement: str, count: int) -> str:
    return statement.replace("{keys}", ", ".join(["%s"] * count))


def _described(sessions: QuerySet) -> list[tuple[int, str, str, deletion_log.ErasedSession]]:
    """(pk, app name, owner id, what the log says of it) of each session, oldest key first; the
    rows locked (where the database can) so what is described is what the deletes remove. Two
    statements: FOR UPDATE takes no aggregate, so the events are counted apart."""
    rows = list(
        AgentSession.objects.filter(pk__in=sessions.values("pk"))
        .select_for_update()
        .order_by("pk")
        .annotate(state_bytes=ByteLength("state"))
        .values_list("pk", "app_name", "owner_id", "session_id", "created_at", "state_bytes")
    )
    events = {
        pk: (count, size)
        for pk, count, size in SessionEvent.objects.filter(agent_session__in=[row[0] for row in rows])
        .values("agent_session")
        .annotate(count=Count("pk"), size=Sum(ByteLength("event_data")))
        .values_list("agent_session", "count", "size")
    }
    described = []
    for pk, app_name, owner_id, session_id, created_at, state_bytes in rows:
        count, size = events.get(pk, (0, 0))
        stored = (state_bytes or 0) + (size or 0)
        erased = deletion_log.ErasedSession(session_id, owner_id, created_at, count, stored)
        described.append((pk, app_name, owner_id, erased))
    return described


def erase_rows(sessions: QuerySet, *, keep_owner_state: bool = False) -> Erased:
    """Deletes `sessions` with their events and, unless kept, the `user:` state no remaining
    session of its owner needs; no audit (`record_erasure`) and no log entry (`erase`). Call it
    inside a transaction: it opens none (in a savepoint SQLite handles the freed pages
    differently: the control in tests/test_secure_delete.py no longer finds them with
    secure_delete off). secure_delete (sessions_app.infra.sqlite) makes the deletes overwrite
    the bytes."""
    rows = _described(sessions)
    if not rows:
        return Erased()
    pks = [pk for pk, _, _, _ in rows]
    connection = _connection()
    with connection.cursor() as cursor:
        # Events first, as the ORM's cascade does (no signal receivers are connected to these models).
        cursor.execute(_with_keys(DELETE_EVENTS(connection), len(pks)), pks)
        erased = Erased(events=cursor.rowcount, erased=[described for _, _, _, described in rows])
        cursor.execute(_with_keys(DELETE_SESSIONS(connection), len(pks)), pks)
        erased.sessions = cursor.rowcount
        if not keep_owner_state:
            # `user:` state belongs to an owner, not a session: once no session of that owner is
            # left, nothing needs it. One delete per app for the whole batch (the purge's hot path).
            for app_name in {app for _, app, _, _ in rows}:
                owners = {owner for _, app, owner, _ in rows if app == app_name}
                still_owning = AgentSession.objects.filter(app_name=app_name, owner_id__in=owners).values("owner_id")
                orphaned = UserState.objects.filter(app_name=app_name, owner_id__in=owners).exclude(
                    owner_id__in=still_owning
                )
                erased.user_states += orphaned.delete()[0]
    return erased


def record_erasure(trigger: str, erased: Erased, started: float, *, adding_to: int | None = None) -> int | None:
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
) -> Erased:
    """THE erasure, whoever asks (the owner's DELETE, the admin, ADK's delete_session, the purge,
    the start-up purge): deletes `sessions` (rows, events, owner state no other session needs),
    writes the audit row, and appends one deletion-log entry per erased session under one signed
    checkpoint (`deletion_log.append`), in the caller's transaction, which it never opens itself:
    the caller decides what else commits with it, and a failure anywhere undoes all of it. On a
    full disk the caller runs its transaction on the erasure reserve's room
    (`erase_in_a_transaction`, or `disk_space.run_erasure`)."""
    if transaction.get_autocommit():
        raise transaction.TransactionManagementError("erase() runs inside its caller's transaction")
    started = time.monotonic() if started is None else started
    erased = erase_rows(sessions, keep_owner_state=keep_owner_state)
    erased.audit = record_erasure(trigger, erased, started, adding_to=adding_to)
    erased.log_size = deletion_log.append(erased.erased, trigger)
    return erased


def erase_in_a_transaction(sessions: QuerySet, trigger: str, *, keep_owner_state: bool = False) -> Erased:
    """`erase` in a transaction of its own; on a full disk it runs once more on the erasure
    reserve's room (`disk_space.run_erasure`)."""
    started = time.monotonic()

    def erase_and_audit() -> Erased:
        with transaction.atomic():
            return erase(sessions, trigger, keep_owner_state=keep_owner_state, started=started)

    return disk_space.run_erasure(erase_and_audit)


def owner_sessions(app_name: str, owner_id: str, session_id: str) -> QuerySet:
    """The owner's session by its id (live or expired), as a selection to erase or check."""
    return AgentSession.objects.filter(app_name=app_name, owner_id=owner_id, session_id=session_id)


def count(sessions: QuerySet) -> Erased:
    """What erasing `sessions` would delete (sessions and events), deleting nothing."""
    return Erased(
        sessions=sessions.count(), events=SessionEvent.objects.filter(agent_session__in=sessions.values("pk")).count()
    )
