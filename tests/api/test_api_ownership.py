"""Who can see a session: only the token holder, and every miss is one identical 404."""

import datetime as dt
import uuid

import pytest
import time_machine

from sessions_app.security.tokens import owner_id_for
from tests.support.answers import comparable as _comparable

pytestmark = pytest.mark.django_db

UNIFORM_404_BODY = '{"detail": "找不到這個工作階段，可能已過期或被刪除"}'.encode()
UNIFORM_404_BODY_EN = b'{"detail": "Session not found: it may have expired or been deleted."}'
# The same 404 in the language the client asks for (English when it asks for none).
UNIFORM_404_BODIES = {
    None: UNIFORM_404_BODY_EN,
    "zh-TW,zh;q=0.9": UNIFORM_404_BODY,
    "en-US,en;q=0.9": UNIFORM_404_BODY_EN,
}
ENDPOINTS = [
    ("get", "/agent/sessions/{id}", None),
    ("delete", "/agent/sessions/{id}", None),
    ("get", "/agent/sessions/{id}/messages", None),
    ("post", "/agent/sessions/{id}/messages", {"message": "請更新我的計畫"}),
    ("get", "/agent/sessions/{id}/export", None),
]
ENDPOINT_IDS = [f"{method} {path}" for method, path, _ in ENDPOINTS]


def _call(api, method, path, body, session_id, token=None):
    headers = {} if token is None else {"HTTP_X_SESSION_TOKEN": token}
    return getattr(api, method)(path.format(id=session_id), body, format="json", **headers)


def _miss_cases(api, new_session):
    """Every way of not getting a session, as (name, session_id, token, setup)."""
    mine, my_token = new_session()
    other, other_token = new_session()
    gone, gone_token = new_session()
    assert api.delete(f"/agent/sessions/{gone}", HTTP_X_SESSION_TOKEN=gone_token).status_code == 204
    return [
        ("wrong token", mine, "x" * 43),
        ("other owner's token", mine, other_token),
        ("unknown id", str(uuid.uuid4()), my_token),
        ("malformed id", "not-a-uuid", my_token),
        ("malformed id with dots", "..%2F..", my_token),
        ("deleted", gone, gone_token),
        ("token of the wrong shape", mine, "短"),
        ("empty token", mine, ""),
    ]


@pytest.mark.parametrize("method,path,body", ENDPOINTS, ids=ENDPOINT_IDS)
def test_no_token_header_is_401_json(api, new_session, method, path, body):
    session_id, _ = new_session()
    response = _call(api, method, path, body, session_id)
    assert response.status_code == 401
    assert response.json() == {"detail": "需要 X-Session-Token 標頭"}
    assert response["WWW-Authenticate"].startswith("X-Session-Token")


@pytest.mark.parametrize("accept_language", list(UNIFORM_404_BODIES))
def test_every_miss_on_every_endpoint_is_the_same_404(api, new_session, scripted_model, accept_language):
    model = scripted_model()  # no steps: any model call would fail the turn
    if accept_language:
        api.defaults["HTTP_ACCEPT_LANGUAGE"] = accept_language
    else:
        del api.defaults["HTTP_ACCEPT_LANGUAGE"]
    seen = []
    for name, session_id, token in _miss_cases(api, new_session):
        for method, path, body in ENDPOINTS:
            response = _call(api, method, path, body, session_id, token)
            assert response.status_code == 404, (name, method, path, response.content)
            seen.append(((name, method, path), _comparable(response)))
    first = seen[0][1]
    assert first[2] == UNIFORM_404_BODIES[accept_language]
    for case, comparable in seen:
        assert comparable == first, case
    assert model.requests == []


def test_expired_session_is_the_same_404_before_any_purge(api, new_session, settings):
    settings.AGENT_SESSION_TTL_HOURS = 24
    session_id, token = new_session()
    baseline = _comparable(api.get(f"/agent/sessions/{uuid.uuid4()}", HTTP_X_SESSION_TOKEN=token))
    start = dt.datetime.now(dt.UTC)
    with time_machine.travel(start + dt.timedelta(hours=23, minutes=59)):
        assert api.get(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).status_code == 200
    with time_machine.travel(start + dt.timedelta(hours=24, minutes=1)):
        for method, path, body in ENDPOINTS:
            response = _call(api, method, path, body, session_id, token)
            assert _comparable(response) == baseline, (method, path)


def test_activity_moves_expiry_forward(api, new_session, settings):
    settings.AGENT_SESSION_TTL_HOURS = 24
    session_id, token = new_session()
    start = dt.datetime.now(dt.UTC)
    with time_machine.travel(start + dt.timedelta(hours=20)):
        turn = api.post(
            f"/agent/sessions/{session_id}/messages", {"message": "hi"}, format="json", HTTP_X_SESSION_TOKEN=token
        )
        assert turn.status_code == 200
    with time_machine.travel(start + dt.timedelta(hours=30)):
        response = api.get(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token)
        assert response.status_code == 200
        expires_at = dt.datetime.fromisoformat(response.json()["expires_at"])
        assert expires_at > start + dt.timedelta(hours=43)
    with time_machine.travel(start + dt.timedelta(hours=44, minutes=30)):
        assert api.get(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).status_code == 404


def test_delete_is_honest(api, new_session):
    session_id, token = new_session()
    stranger_id, stranger_token = new_session()
    assert api.delete(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=stranger_token).status_code == 404
    # The stranger's attempt changed nothing for the owner.
    assert api.get(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).status_code == 200
    turn = api.post(
        f"/agent/sessions/{session_id}/messages", {"message": "hi"}, format="json", HTTP_X_SESSION_TOKEN=token
    )
    assert turn.status_code == 200
    assert api.delete(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).status_code == 204
    assert api.delete(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).status_code == 404
    assert api.get(f"/agent/sessions/{stranger_id}", HTTP_X_SESSION_TOKEN=stranger_token).status_code == 200


def test_caller_cannot_choose_ids(api):
    response = api.post(
        "/agent/sessions", {"resume_text": "Someone", "user_id": "alice", "session_id": "mine"}, format="json"
    )
    assert response.status_code == 201
    body = response.json()
    assert body["session_id"] != "mine"
    uuid.UUID(body["session_id"])
    from sessions_app.models import AgentSession

    stored = AgentSession.objects.get(session_id=body["session_id"])
    assert stored.owner_id == owner_id_for(body["token"]) != "alice"


def test_unrouted_paths_get_the_same_404(api, new_session, settings):
    settings.DEBUG = False
    session_id, token = new_session()
    response = api.get(f"/agent/sessions/{session_id}/", HTTP_X_SESSION_TOKEN=token)
    assert response.status_code == 404
    assert response.content == UNIFORM_404_BODY
