"""The session service every turn's Runner runs on: in memory, the session read before the turn,
its events kept and written at the end in one transaction (turns/service.py). ADK's tooling and
the conformance suite use `DjangoSessionService` (adk/service.py) instead."""

from __future__ import annotations

from django.views.decorators.debug import sensitive_variables
from google.adk.events.event import Event
from google.adk.sessions import BaseSessionService, Session
from google.adk.sessions.base_session_service import ListSessionsResponse

from agent.plans import plan_count
from sessions_app.adk.service import event_deltas, writer_view
from sessions_app.exceptions import TurnInProgress
from sessions_app.storage import appending


class TurnBuffer(BaseSessionService):
    """The session service one turn's Runner sees, in memory only: the session read before the
    turn (in the request's thread), and the turn's events, kept for `store_pending`.

    It never reaches the database: the Runner runs on the process's event loop, which has no
    connection of its own (tests/turns/test_turn_threads.py). `append_event` does what every ADK
    service does to the in-memory session (temp state applied then trimmed, state delta applied,
    event appended) and keeps the event in `pending` instead of writing it.
    """

    def __init__(self, session: Session):
        super().__init__()
        self.session = session
        self.pending: list[Event] = []
        self._first_read = writer_view(session)

    async def get_session(self, *, app_name, user_id, session_id, config=None) -> Session | None:
        if (app_name, user_id, session_id) != (self.session.app_name, self.session.user_id, self.session.id):
            return None  # a turn's Runner asks for its own session only
        if config is None:
            return self.session
        events = self.session.events  # as ADK's in-memory service filters them
        if config.num_recent_events is not None:
            events = events[-config.num_recent_events :] if config.num_recent_events else []
        if config.after_timestamp is not None:
            events = [event for event in events if event.timestamp >= config.after_timestamp]
        return self.session.model_copy(update={"events": list(events)})

    async def create_session(self, *, app_name, user_id, state=None, session_id=None) -> Session:
        raise NotImplementedError("a turn's Runner creates no session")

    async def list_sessions(self, *, app_name, user_id=None) -> ListSessionsResponse:
        raise NotImplementedError("a turn's Runner lists no sessions")

    async def delete_session(self, *, app_name, user_id, session_id) -> None:
        raise NotImplementedError("a turn's Runner deletes no session")

    @sensitive_variables()
    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        event = await super().append_event(session, event)
        self.pending.append(event)
        return event

    @sensitive_variables()
    def store_pending(self, app_name: str, user_id: str, session_id: str) -> None:
        """Writes the kept events, in order, in one storage call (call inside a transaction).

        Checked against the revision the turn read: SessionMissing when the
        session went while the model ran, TurnInProgress when another writer
        appended meanwhile (a turn lock taken over as stale).
        """
        events = [(event, event_deltas(event)) for event in self.pending]
        try:
            appending.append_events(app_name, user_id, session_id, events, self._first_read, count_plans=plan_count)
        except appending.StaleWriter:
            raise TurnInProgress from None
