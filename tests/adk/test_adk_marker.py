"""What sessions_app/adk/marker.py relies on in ADK's Session, for the pinned ADK: a
private attribute `_storage_update_marker`, None on a Session built elsewhere, carried by ADK's
copies, and compared by ADK's own persistent services to tell a stale writer."""

import asyncio

import pytest
from google.adk.errors import StaleSessionError
from google.adk.events.event import Event
from google.adk.sessions import Session

from sessions_app.adk.marker import mark_revision, read_revision

pytestmark = pytest.mark.backend_independent


def _session() -> Session:
    return Session(id="s1", app_name="app", user_id="user")


def test_a_session_built_elsewhere_has_no_revision():
    assert "_storage_update_marker" in Session.__private_attributes__
    assert read_revision(_session()) is None


def test_the_revision_travels_with_adks_copies():
    session = _session()
    mark_revision(session, 7)
    assert session._storage_update_marker == "7"  # a string, as ADK's services keep it
    assert read_revision(session) == 7
    assert read_revision(session.model_copy()) == 7
    assert read_revision(session.model_copy(deep=True)) == 7
    assert read_revision(session.model_copy(update={"events": []})) == 7


def test_adks_own_database_service_tells_a_stale_writer_by_the_marker(tmp_path):
    """ADK's DatabaseSessionService marks the sessions it returns and compares the mark: a copy
    read before another write is refused, and the same copy marked as current is not."""
    from google.adk.sessions.database_session_service import DatabaseSessionService

    def event(invocation_id: str, timestamp: float) -> Event:
        return Event(author="user", invocation_id=invocation_id, timestamp=timestamp)

    async def scenario():
        service = DatabaseSessionService(f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}")
        session = await service.create_session(app_name="app", user_id="user")
        assert session._storage_update_marker is not None
        stale = session.model_copy(deep=True)
        await service.append_event(session, event("first", session.last_update_time + 1))
        with pytest.raises(StaleSessionError):
            await service.append_event(stale, event("stale", session.last_update_time + 2))
        stale._storage_update_marker = session._storage_update_marker
        await service.append_event(stale, event("marked", session.last_update_time + 3))
        await service.close()

    asyncio.run(scenario())
