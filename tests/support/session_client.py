"""The API's session, as a test's client uses it: create one, say something in it.

`api` is any client with the test client's keywords: DRF's APIClient (the `api` fixture) or
tests/support/asgi_client.py's ASGIClient. Headers go as the test client takes them
(`HTTP_ACCEPT=...`, `REMOTE_ADDR=...`).
"""

from __future__ import annotations

from tests.support.privacy import fixture_resume

SESSIONS = "/agent/sessions"
# What a turn says where a test does not care (the offline model updates the plan).
UPDATE_THE_PLAN = "請更新我的計畫"


def create_session(api, resume: str | None = None, **headers) -> tuple[str, str]:
    """A new session holding `resume` (the fixture resume when None); returns (session_id, token)."""
    response = api.post(SESSIONS, {"resume_text": resume or fixture_resume()}, format="json", **headers)
    assert response.status_code == 201, response.content
    return response.json()["session_id"], response.json()["token"]


def messages_path(session_id: str) -> str:
    return f"{SESSIONS}/{session_id}/messages"


def say(api, session_id: str, token: str, message: str = UPDATE_THE_PLAN, **headers):
    """One turn: `message` sent to the session with its token; returns the response."""
    return api.post(
        messages_path(session_id), {"message": message}, format="json", HTTP_X_SESSION_TOKEN=token, **headers
    )


def messages_of(api, session_id: str, token: str) -> list[dict]:
    """The session's conversation, as its owner reads it."""
    return api.get(messages_path(session_id), HTTP_X_SESSION_TOKEN=token).json()["messages"]


def answer_to(api, session_id: str, token: str, message: str = UPDATE_THE_PLAN, **headers) -> dict:
    """A turn that must succeed (200); returns its answer's JSON."""
    response = say(api, session_id, token, message, **headers)
    assert response.status_code == 200, response.content
    return response.json()
