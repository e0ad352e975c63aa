"""No cache may store an answer of the session API: success or error, every endpoint."""

import json
import uuid

import pytest
from google.genai import errors as genai_errors

from sessions_app.models import AgentSession
from sessions_app.storage import turn_lock
from tests.support.answers import comparable
from tests.support.scripted_llm import text_response

pytestmark = pytest.mark.django_db


def _no_store(response) -> bool:
    directives = {part.strip() for part in response.get("Cache-Control", "").split(",")}
    return "no-store" in directives


def _genai_error(code: int):
    cls = genai_errors.ServerError if code >= 500 else genai_errors.ClientError
    return cls(code, {"error": {"code": code, "message": "failed", "status": "X"}})


def test_create_and_its_errors(api, settings, monkeypatch):
    too_big = json.dumps({"resume_text": "a" * (settings.API_MAX_BODY_BYTES + 10)})
    answers = {
        201: api.post("/agent/sessions", {"resume_text": "Lin"}, format="json"),
        400: api.post("/agent/sessions", {"resume_text": ""}, format="json"),
        "400 invalid JSON": api.post("/agent/sessions", "{nope", content_type="application/json"),
        405: api.get("/agent/sessions"),
        413: api.post("/agent/sessions", too_big, content_type="application/json"),
        415: api.post("/agent/sessions", "resume_text=Lin", content_type="application/x-www-form-urlencoded"),
    }
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**rates, "session_create": "1/min"},
    }
    api.post("/agent/sessions", {"resume_text": "Lin"}, format="json", REMOTE_ADDR="10.1.1.1")
    answers[429] = api.post("/agent/sessions", {"resume_text": "Lin"}, format="json", REMOTE_ADDR="10.1.1.1")
    for expected, response in answers.items():
        assert response.status_code == int(str(expected)[:3]), expected
        assert _no_store(response), (expected, response.headers)
    assert "token" in answers[201].json()


def test_unexpected_error_500(api, settings, creating_fails):
    settings.DEBUG = False
    creating_fails(RuntimeError("forced failure"))
    response = api.post("/agent/sessions", {"resume_text": "Lin"}, format="json")
    assert response.status_code == 500
    assert _no_store(response)


def test_owned_session_endpoints_and_their_errors(api, new_session, scripted_model, settings):
    session_id, token = new_session()
    base = f"/agent/sessions/{session_id}"
    auth = {"HTTP_X_SESSION_TOKEN": token}
    scripted_model(text_response("Hello."), _genai_error(400), _genai_error(503), TimeoutError())
    answers = {
        "200 post message": api.post(f"{base}/messages", {"message": "hi"}, format="json", **auth),
        "502 bad response": api.post(f"{base}/messages", {"message": "hi"}, format="json", **auth),
        "503 upstream": api.post(f"{base}/messages", {"message": "hi"}, format="json", **auth),
        "504 timeout": api.post(f"{base}/messages", {"message": "hi"}, format="json", **auth),
        "200 detail": api.get(base, **auth),
        "200 messages": api.get(f"{base}/messages", **auth),
        "200 export": api.get(f"{base}/export", **auth),
        "400 bad message": api.post(f"{base}/messages", {"message": ""}, format="json", **auth),
        "401 detail": api.get(base),
        "401 messages": api.post(f"{base}/messages", {"message": "hi"}, format="json"),
        "401 export": api.get(f"{base}/export"),
        "401 delete": api.delete(base),
        "405 put": api.put(base, {}, format="json", **auth),
        "413 message": api.post(
            f"{base}/messages",
            json.dumps({"message": "a" * (settings.API_MAX_BODY_BYTES + 10)}),
            content_type="application/json",
            **auth,
        ),
        "415 message": api.post(f"{base}/messages", "message=hi", content_type="text/plain", **auth),
    }
    session_pk = AgentSession.objects.get(session_id=session_id).pk
    assert turn_lock.lock_turn(session_pk, 60)  # another turn runs
    answers["409 turn running"] = api.post(f"{base}/messages", {"message": "hi"}, format="json", **auth)
    turn_lock.release_turn(session_pk)
    answers["204 delete"] = api.delete(base, **auth)
    for name, response in answers.items():
        assert response.status_code == int(name[:3]), (name, response.content)
        assert _no_store(response), (name, response.headers)


def test_the_uniform_404_forbids_storing_and_stays_identical(api, new_session, settings):
    settings.DEBUG = False
    session_id, token = new_session()
    auth = {"HTTP_X_SESSION_TOKEN": token}
    misses = [
        api.get(f"/agent/sessions/{uuid.uuid4()}", **auth),
        api.delete(f"/agent/sessions/{uuid.uuid4()}", **auth),
        api.get(f"/agent/sessions/{session_id}/export", HTTP_X_SESSION_TOKEN="x" * 43),
        api.post(f"/agent/sessions/{session_id}/messages", {"message": "hi"}, format="json", HTTP_X_SESSION_TOKEN="短"),
        api.get(f"/agent/sessions/{session_id}/", **auth),  # no view matches: the project's 404 handler
        api.get("/agent/nothing-here"),
        api.get("/agent/nothing-here", HTTP_ACCEPT="text/html"),  # a browser too, under /agent/
    ]
    first = comparable(misses[0])
    assert first[0] == 404
    assert misses[0]["Content-Type"] == "application/json"  # as every other API answer spells it
    assert _no_store(misses[0])
    for response in misses:
        assert comparable(response) == first
