"""Whatever runs on the event loop cannot reach the database (issue 29).

A turn's Runner runs on the process's event loop; the session it sees is the TurnBuffer, which
holds the session read before the turn and keeps the turn's events in memory. The rows are read
and written in the request's thread only: before the Runner starts and after it ends.
"""

import threading

import pytest
from asgiref.sync import async_to_sync
from django.db.backends.signals import connection_created
from google.adk.events.event import Event
from google.adk.sessions import Session

from sessions_app.adk.buffer import TurnBuffer
from tests.support.privacy import fixture_resume

pytestmark = pytest.mark.django_db


def test_a_turn_opens_database_connections_in_the_request_thread_only(client):
    body = client.post("/agent/sessions", {"resume_text": fixture_resume()}, content_type="application/json").json()
    opened: list[str] = []

    def record(sender, connection, **kwargs):
        opened.append(threading.current_thread().name)

    connection_created.connect(record)
    try:
        answer = client.post(
            f"/agent/sessions/{body['session_id']}/messages",
            {"message": "Please draft my job-search plan"},
            content_type="application/json",
            headers={"X-Session-Token": body["token"]},
        )
    finally:
        connection_created.disconnect(record)

    assert set(opened) <= {threading.main_thread().name}
    assert answer.status_code == 200


def test_the_buffer_serves_its_own_session_from_memory_and_nothing_else():
    session = Session(app_name="resume_agent", user_id="anon-owner", id="the-session", state={"k": "v"})
    buffer = TurnBuffer(session)
    get = async_to_sync(buffer.get_session)

    assert get(app_name="resume_agent", user_id="anon-owner", session_id="the-session") is session
    assert get(app_name="resume_agent", user_id="anon-owner", session_id="another-session") is None
    assert get(app_name="resume_agent", user_id="anon-someone-else", session_id="the-session") is None
    with pytest.raises(NotImplementedError):
        async_to_sync(buffer.create_session)(app_name="resume_agent", user_id="anon-owner")

    kept = async_to_sync(buffer.append_event)(session, Event(author="user", invocation_id="i-1"))
    assert buffer.pending == [kept] and session.events == [kept]
