"""The proof that a deleted session leaves no byte behind in the database files.

Content is stored sealed, so the resume is never in the files in clear; what
deletion must remove is the session's ciphertext. The tests record a piece of
every sealed value while the session lives, see that the scan finds them all
in the file, and that none is left once the session is deleted.
"""

import time

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from sessions_app.adk.service import DjangoSessionService
from sessions_app.infra.sqlite import secure_delete_enabled
from sessions_app.models import AgentSession, SessionEvent
from tests.support.privacy import (
    database_files,
    find_chunks,
    find_markers,
    fixture_markers,
    fixture_resume,
    sealed_chunks,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.sqlite_only,
    pytest.mark.usefixtures("sealed_with_the_modules_token"),
]

APP = "resume_agent"
USER = "anon-proof"
TOKEN = "secure-delete-test-token-not-a-real-one"


def _fill_session(service: DjangoSessionService) -> str:
    """A session holding the fixture resume in state and 14 events quoting it (all sealed)."""
    resume = fixture_resume()
    lines = [line for line in resume.splitlines() if line.strip()]
    session = async_to_sync(service.create_session)(app_name=APP, user_id=USER, state={"resume_text": resume})
    for index in range(14):
        # Each event quotes two resume lines; together they quote every line.
        quote = f"{lines[index % len(lines)]} / {lines[(index + 14) % len(lines)]}"
        role = "user" if index % 2 == 0 else "model"
        event = Event(
            author="user" if role == "user" else APP,
            invocation_id=f"inv-{index // 2}",
            timestamp=time.time(),
            content=types.Content(role=role, parts=[types.Part(text=quote)]),
            actions=EventActions(state_delta={"last_quote": quote} if role == "model" else {}),
        )
        async_to_sync(service.append_event)(session, event)
    return session.id


def _delete(service, session_id) -> None:
    async_to_sync(service.delete_session)(app_name=APP, user_id=USER, session_id=session_id)


def test_every_connection_has_secure_delete_on():
    assert secure_delete_enabled(connection)
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "delete"
        cursor.execute("PRAGMA temp_store")
        assert cursor.fetchone()[0] == 2  # MEMORY


def test_system_check_reports_secure_delete_off():
    from sessions_app.infra.sqlite import check_secure_delete

    assert check_secure_delete(databases=["default"]) == []
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA secure_delete=OFF")
    try:
        errors = check_secure_delete(databases=["default"])
        assert [error.id for error in errors] == ["sessions_app.E001"]
    finally:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA secure_delete=ON")


def test_deleted_session_leaves_no_bytes_in_database_files(db_path):
    service = DjangoSessionService()
    assert find_markers(database_files(db_path), fixture_markers()) == [], "file not clean at start"

    session_id = _fill_session(service)
    assert SessionEvent.objects.count() == 14

    # Before: the resume is not in the file in clear, in any encoding; its
    # ciphertext is, every piece of it (the state and the 14 events), which
    # shows the scan can find what it looks for.
    assert find_markers(database_files(db_path), fixture_markers()) == []
    chunks = sealed_chunks()
    assert len(chunks) == 15
    assert {index for _, index in find_chunks(database_files(db_path), chunks)} == set(range(15))

    _delete(service, session_id)

    assert AgentSession.objects.count() == 0
    assert SessionEvent.objects.count() == 0
    assert find_chunks(database_files(db_path), chunks) == []
    assert find_markers(database_files(db_path), fixture_markers()) == []


def test_scan_fails_when_secure_delete_is_switched_off(db_path, restore_sqlite_settings):
    """Control: the same flow with secure_delete explicitly OFF leaves the ciphertext in the file.

    Removing our receiver would prove nothing on builds where SQLite defaults
    secure_delete to on (Debian's), so the PRAGMA is switched off explicitly.
    (The resume itself is still not there in clear: encryption at rest.)
    """
    service = DjangoSessionService()
    session_id = _fill_session(service)
    chunks = sealed_chunks()
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA secure_delete=OFF")
    _delete(service, session_id)

    assert AgentSession.objects.count() == 0
    leftovers = find_chunks(database_files(db_path), chunks)
    assert {index for _, index in leftovers} == set(range(len(chunks)))
    assert find_markers(database_files(db_path), fixture_markers()) == []
