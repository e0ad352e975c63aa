"""An ADK session service on the Django ORM.

`DjangoSessionService` keeps ADK sessions, their events and ADK's scoped
state in the project's database, so the ADK `Runner` reads and writes them
exactly as it would through ADK's own services. Behaviour follows ADK's
`InMemorySessionService` (the reference the differential tests compare
against) and, where only a persistent store can have it, ADK's database
services (stale-writer detection).

Every ORM call runs in a synchronous function wrapped by `sync_to_async`
(thread-sensitive), so the async methods are safe to await from the
Runner's event loop under both WSGI (`async_to_sync`) and ASGI servers.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any, Optional

from asgiref.sync import sync_to_async
from django.db import IntegrityError, transaction
from django.db.models import F
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

from .models import AgentSession, AppState, SessionEvent, UserState

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
    row = (
        UserState.objects.filter(app_name=app_name, user_id=user_id)
        .values_list("state", flat=True)
        .first()
    )
    return row or {}


# The state rows are locked (where the database can) so two sessions writing
# the same app or user state at once cannot lose one another's keys; ADK's
# DatabaseSessionService locks them the same way. A no-op on SQLite, whose
# IMMEDIATE transactions already serialize writers.
def _merge_into_app_state(app_name: str, delta: dict) -> None:
    row, _ = AppState.objects.select_for_update().get_or_create(app_name=app_name)
    row.state = {**row.state, **delta}
    row.save(update_fields=["state", "updated_at"])


def _merge_into_user_state(app_name: str, user_id: str, delta: dict) -> None:
    rows = UserState.objects.select_for_update()
    row, _ = rows.get_or_create(app_name=app_name, user_id=user_id)
    row.state = {**row.state, **delta}
    row.save(update_fields=["state", "updated_at"])


def _apply_scoped_deltas(app_name: str, user_id: str, deltas: dict[str, dict]) -> None:
    if deltas["app"]:
        _merge_into_app_state(app_name, deltas["app"])
    if deltas["user"]:
        _merge_into_user_state(app_name, user_id, deltas["user"])


def _to_adk_session(row: AgentSession, state: dict, events: list[Event]) -> Session:
    session = Session(
        app_name=row.app_name,
        user_id=row.user_id,
        id=row.session_id,
        state=state,
        events=events,
        last_update_time=row.updated_at.timestamp(),
    )
    session._storage_update_marker = str(row.revision)
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
        session_id = _normalize_id(session_id) or None
        deltas = _session_util.extract_json_safe_state_delta(state or {})
        now = _to_datetime(time.time())
        with transaction.atomic():
            if session_id and AgentSession.objects.filter(
                app_name=app_name, user_id=user_id, session_id=session_id
            ).exists():
                raise AlreadyExistsError(f"Session with id {session_id} already exists.")
            _apply_scoped_deltas(app_name, user_id, deltas)
            row = AgentSession(
                app_name=app_name,
                user_id=user_id,
                state=deltas["session"],
                created_at=now,
                updated_at=now,
            )
            if session_id:
                row.session_id = session_id
            try:
                row.save(force_insert=True)
            except IntegrityError:
                # Another writer created the same id after the check above
                # (the check takes no lock on PostgreSQL); ADK's database
                # services report that race as the same AlreadyExistsError.
                message = f"Session with id {row.session_id} already exists."
                raise AlreadyExistsError(message) from None
            merged = _merged_state(
                _app_state(app_name), _user_state(app_name, user_id), deltas["session"]
            )
        return _to_adk_session(row, merged, [])

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
        row = AgentSession.objects.filter(
            app_name=app_name, user_id=user_id, session_id=_normalize_id(session_id)
        ).first()
        if row is None:
            return None
        events = self._load_events(row, config)
        merged = _merged_state(_app_state(app_name), _user_state(app_name, user_id), row.state)
        return _to_adk_session(row, merged, events)

    @staticmethod
    def _load_events(row: AgentSession, config: Optional[GetSessionConfig]) -> list[Event]:
        # Events come back in the order they were appended (the primary key),
        # as ADK's in-memory service keeps them.
        events = SessionEvent.objects.filter(session=row)
        if config and config.num_recent_events == 0:
            return []
        if config and config.after_timestamp is not None:
            # Every event at or after the cutoff, as GetSessionConfig documents
            # and ADK's persistent services do. The in-memory service returns
            # only those after the last older event, which differs only when
            # timestamps are out of append order.
            events = events.filter(timestamp__gte=config.after_timestamp)
        events = events.order_by("-pk")
        if config and config.num_recent_events is not None:
            events = events[: config.num_recent_events]
        data = list(events.values_list("event_data", flat=True))
        return [Event.model_validate_json(item) for item in reversed(data)]

    @override
    async def list_sessions(
        self, *, app_name: str, user_id: Optional[str] = None
    ) -> ListSessionsResponse:
        return await sync_to_async(self._list_sessions)(app_name, user_id)

    def _list_sessions(self, app_name, user_id) -> ListSessionsResponse:
        rows = AgentSession.objects.filter(app_name=app_name)
        user_states = UserState.objects.filter(app_name=app_name)
        if user_id is not None:
            rows = rows.filter(user_id=user_id)
            user_states = user_states.filter(user_id=user_id)
        state_by_user = dict(user_states.values_list("user_id", "state"))
        app_state = _app_state(app_name)
        sessions = [
            _to_adk_session(
                row, _merged_state(app_state, state_by_user.get(row.user_id, {}), row.state), []
            )
            for row in rows.order_by("updated_at", "user_id", "session_id")
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
        with transaction.atomic():
            deleted, by_model = AgentSession.objects.filter(
                app_name=app_name, user_id=user_id, session_id=_normalize_id(session_id)
            ).delete()
        return by_model.get(AgentSession._meta.label, 0)

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
        event_data = event.model_dump_json(exclude_none=True)
        with transaction.atomic():
            # select_for_update is a no-op on SQLite, where the IMMEDIATE
            # transaction already holds the write lock; on other databases it
            # makes the revision check and the update one atomic step.
            row = (
                AgentSession.objects.select_for_update()
                .filter(app_name=session.app_name, user_id=session.user_id, session_id=session.id)
                .first()
            )
            if row is None:
                raise SessionNotFoundError(f"Session {session.id} not found.")
            if SessionEvent.objects.filter(
                session=row, event_id=event.id, event_data=event_data
            ).exists():
                # An equal re-delivery (same id, same content) is applied once,
                # as ADK's in-memory service does.
                return False
            self._check_not_stale(session, row)
            state_delta = event.actions.state_delta if event.actions else None
            deltas = _session_util.extract_json_safe_state_delta(state_delta or {})
            _apply_scoped_deltas(session.app_name, session.user_id, deltas)
            SessionEvent.objects.create(
                session=row,
                event_id=event.id,
                invocation_id=event.invocation_id or "",
                author=event.author or "",
                timestamp=event.timestamp,
                event_data=event_data,
            )
            updated_at = _to_datetime(event.timestamp)
            update = {"revision": F("revision") + 1, "updated_at": updated_at}
            if deltas["session"]:
                update["state"] = {**row.state, **deltas["session"]}
            AgentSession.objects.filter(pk=row.pk).update(**update)
        # The stored time keeps microseconds only; the caller's session gets the
        # stored value (as DatabaseSessionService does), so the session a writer
        # holds and the one the next get_session returns compare equal.
        session.last_update_time = updated_at.timestamp()
        session._storage_update_marker = str(row.revision + 1)
        return True

    @staticmethod
    def _check_not_stale(session: Session, row: AgentSession) -> None:
        if session._storage_update_marker is not None:
            if session._storage_update_marker != str(row.revision):
                raise StaleSessionError(_STALE_MESSAGE)
            return
        # A Session built elsewhere carries no marker: like ADK's database
        # services, it is stale only if storage moved past its last event.
        if row.updated_at.timestamp() > session.last_update_time:
            last_stored = (
                SessionEvent.objects.filter(session=row)
                .order_by("-pk")
                .values_list("event_id", flat=True)
                .first()
            )
            last_known = session.events[-1].id if session.events else None
            if last_stored != last_known:
                raise StaleSessionError(_STALE_MESSAGE)
