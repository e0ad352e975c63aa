"""ADK's session service on the session store.

`DjangoSessionService` is for ADK's tooling and the conformance suite
(tests/adk/test_session_service_contract.py); the service's own turns run on
`TurnBuffer` (adk/buffer.py), which uses this module's `read_session`,
`event_deltas` and `writer_view`. It holds ADK's semantics and nothing about storage: state prefixes
(`app:`, `user:`, `temp:`), the stale-writer check through the session's
storage marker, id normalisation; `storage` does the rows and the sealing, and `erasure` the
deletes.
Behaviour follows ADK's `InMemorySessionService` (the reference of the
differential tests) and, where only a persistent store can have it, ADK's
database services.

Each method is one `sync_to_async` (thread-sensitive) call into the
store, one thread hop per call, so it is awaited from an event loop that
has a request's thread to run in (ADK's tooling, a test's async_to_sync). The
token in `crypto.token_context` goes with it.

A Session carries the revision it was read at where ADK's own services keep it;
ADK has no public seam for that, so `marker` alone touches it. State is
split by ADK's public prefixes (`State`) and made JSON-safe with pydantic-core,
as ADK's own services do (tests/storage/test_repository.py compares the two).
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.sessions import BaseSessionService, Session, State
from google.adk.sessions.base_session_service import GetSessionConfig, ListSessionsResponse
from pydantic_core import to_jsonable_python
from typing_extensions import override

from agent.plans import plan_count
from sessions_app.adk.marker import mark_revision, read_revision
from sessions_app.erasure import erase_sessions
from sessions_app.exceptions import SessionMissing
from sessions_app.models import AgentSession, DeletionAudit
from sessions_app.storage import appending, scoped_state, sessions
from sessions_app.storage.scoped_state import Deltas

_STALE_MESSAGE = (
    "The session object is older than the stored session: another writer has"
    " appended to it since it was read. Reload the session and try again."
)


def split_state(state: dict[str, Any] | None) -> Deltas:
    """`state` split by ADK's prefixes into app, user and session deltas (temp: dropped),
    made JSON-safe as ADK's database services store it (a value JSON cannot hold, its text)."""
    deltas: Deltas = {"app": {}, "user": {}, "session": {}}
    for key, value in (state or {}).items():
        if key.startswith(State.APP_PREFIX):
            deltas["app"][key.removeprefix(State.APP_PREFIX)] = value
        elif key.startswith(State.USER_PREFIX):
            deltas["user"][key.removeprefix(State.USER_PREFIX)] = value
        elif not key.startswith(State.TEMP_PREFIX):
            deltas["session"][key] = value
    return to_jsonable_python(deltas, serialize_unknown=True)


def event_deltas(event: Event) -> Deltas:
    return split_state(event.actions.state_delta if event.actions else None)


def _normalize_id(session_id: str | None) -> str | None:
    # ADK's services strip surrounding white space from session ids.
    return session_id.strip() if session_id else session_id


def _to_adk(loaded: sessions.LoadedSession) -> Session:
    state = dict(loaded.state)
    state.update({State.APP_PREFIX + key: value for key, value in loaded.app_state.items()})
    state.update({State.USER_PREFIX + key: value for key, value in loaded.user_state.items()})
    session = Session(
        app_name=loaded.app_name,
        user_id=loaded.owner_id,
        id=loaded.session_id,
        state=state,
        events=loaded.events,
        last_update_time=loaded.last_activity_at.timestamp(),
    )
    # The revision is the storage marker ADK's database services use to tell a stale writer.
    mark_revision(session, loaded.revision)
    return session


def writer_view(session: Session) -> appending.WriterView:
    """What the holder of `session` saw: its storage marker (the revision), or its last
    activity and last event when it carries none (a Session built elsewhere)."""
    return appending.WriterView(
        revision=read_revision(session),
        last_update_time=session.last_update_time,
        last_event_id=session.events[-1].id if session.events else None,
    )


def read_session(
    app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None = None
) -> Session | None:
    """The stored session as ADK's Session (None when there is none), read in the caller's thread."""
    loaded = sessions.load(
        app_name,
        user_id,
        _normalize_id(session_id),
        num_recent_events=config.num_recent_events if config else None,
        after_timestamp=config.after_timestamp if config else None,
    )
    return None if loaded is None else _to_adk(loaded)


class DjangoSessionService(BaseSessionService):
    """ADK sessions in the project's database, through `storage` (see the module docstring)."""

    @override
    async def create_session(
        self, *, app_name: str, user_id: str, state: dict[str, Any] | None = None, session_id: str | None = None
    ) -> Session:
        return await sync_to_async(self._create_session)(app_name, user_id, state, session_id)

    def _create_session(self, app_name, user_id, state, session_id) -> Session:
        try:
            loaded = sessions.create(
                app_name, user_id, _normalize_id(session_id) or None, split_state(state), count_plans=plan_count
            )
        except sessions.SessionExists as exists:
            raise AlreadyExistsError(f"Session with id {exists} already exists.") from None
        return _to_adk(loaded)

    @override
    async def get_session(
        self, *, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None = None
    ) -> Session | None:
        return await sync_to_async(read_session)(app_name, user_id, session_id, config)

    @override
    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        loaded = await sync_to_async(sessions.list_sessions)(app_name, user_id)
        return ListSessionsResponse(sessions=[_to_adk(session) for session in loaded])

    @override
    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await sync_to_async(scoped_state.user_state)(app_name, user_id)

    @override
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await sync_to_async(self._delete_session)(app_name, user_id, session_id)

    def _delete_session(self, app_name: str, user_id: str, session_id: str) -> None:
        # The same erase as the API, the admin and the purge (rows, overwritten bytes, the
        # audit row), but ADK's `user:` state outlives its owner's sessions, as ADK's services
        # keep it (the contract suite pins it).
        selection = AgentSession.objects.owned(app_name, user_id, _normalize_id(session_id))
        erase_sessions(selection, trigger=DeletionAudit.Trigger.ADK, keep_owner_state=True)

    @override
    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        # Temp state is visible to the rest of this invocation but never stored. These three are
        # BaseSessionService's helpers for the services built on it, called in the order ADK's own
        # SqliteSessionService calls them, the write between (the contract suite's temp cases).
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        if await sync_to_async(self._store_event)(session, event):
            self._commit_event_to_session(session, event)
        return event

    def _store_event(self, session: Session, event: Event) -> bool:
        """Writes the event; False when an equal copy was already stored (a retry)."""
        try:
            appended = appending.append_events(
                session.app_name,
                session.user_id,
                session.id,
                [(event, event_deltas(event))],
                writer_view(session),
                count_plans=plan_count,
            )
        except SessionMissing:
            raise SessionNotFoundError(f"Session {session.id} not found.") from None
        except appending.StaleWriter:
            raise StaleSessionError(_STALE_MESSAGE) from None
        if not appended.stored[0]:
            return False
        # The stored time (microseconds) and revision, so the writer's copy and the next read compare equal.
        session.last_update_time = appended.last_activity_at.timestamp()
        mark_revision(session, appended.revision)
        return True
