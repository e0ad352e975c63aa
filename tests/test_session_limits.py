"""One session cannot grow without bound: linear plan storage, turn and size caps, a model-call cap."""

import json

import pytest

from agent.plans import PLAN_COUNT_KEY, new_version_delta, plan_key, plan_versions
from sessions_app import selectors
from sessions_app.models import AgentSession, SessionEvent
from sessions_app.security.crypto import token_context
from sessions_app.storage import sessions
from tests.support.factories import make_session
from tests.support.scripted_llm import call_response, text_response
from tests.support.session_client import say

# The turn these tests take (the offline model saves a plan version for it).
PLAN_MESSAGE = "Focus on remote roles"

pytestmark = pytest.mark.django_db


def _content(session_id, token):
    with token_context(token):
        return selectors.session_content(AgentSession.objects.get(session_id=session_id))


def _state_deltas(session_id, token) -> list[dict]:
    return [e.actions.state_delta for e in _content(session_id, token).events if e.actions and e.actions.state_delta]


# --- plan versions ---------------------------------------------------------------------
def test_each_save_plan_event_stores_only_the_new_version(api, new_session):
    session_id, token = new_session()
    for _ in range(4):
        assert say(api, session_id, token, PLAN_MESSAGE).status_code == 200
    deltas = _state_deltas(session_id, token)
    assert [sorted(delta) for delta in deltas] == [[PLAN_COUNT_KEY, plan_key(n)] for n in (1, 2, 3, 4)]
    # Storage is linear: the 4th save's delta is no bigger than the 1st's plus its revision note.
    sizes = [len(json.dumps(delta)) for delta in deltas]
    assert sizes[3] < sizes[0] + 400
    document = api.get(f"/agent/sessions/{session_id}/export", HTTP_X_SESSION_TOKEN=token).json()
    assert [plan["version"] for plan in document["plan_versions"]] == [1, 2, 3, 4]


def test_only_the_newest_plan_versions_are_kept(api, new_session, monkeypatch):
    monkeypatch.setenv("PLAN_MAX_VERSIONS", "2")
    session_id, token = new_session()
    for _ in range(3):
        assert say(api, session_id, token, PLAN_MESSAGE).status_code == 200
    meta = api.get(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).json()
    assert meta["plan_versions"] == 3  # saved so far
    document = api.get(f"/agent/sessions/{session_id}/export", HTTP_X_SESSION_TOKEN=token).json()
    assert [plan["version"] for plan in document["plan_versions"]] == [2, 3]
    state = _content(session_id, token).state
    assert state[plan_key(1)] is None and state[PLAN_COUNT_KEY] == 3
    assert _state_deltas(session_id, token)[-1] == {
        plan_key(3): state[plan_key(3)],
        PLAN_COUNT_KEY: 3,
        plan_key(1): None,
    }


def test_a_session_saved_with_a_plan_list_keeps_its_versions():
    legacy = {"plan_versions": [{"version": 1, "plan": "a"}, {"version": 2, "plan": "b"}]}
    assert [v["plan"] for v in plan_versions(legacy)] == ["a", "b"]
    version, delta = new_version_delta(legacy, {"plan": "c"})
    after = {**legacy, **delta}
    assert version == 3 and after["plan_versions"] is None
    assert [v["plan"] for v in plan_versions(after)] == ["a", "b", "c"]


# --- turns and bytes per session ---------------------------------------------------------
def test_a_session_takes_at_most_session_max_turns(api, new_session, settings, scripted_model):
    settings.AGENT_SESSION_MAX_TURNS = 2
    session_id, token = new_session()
    scripted_model(text_response("one"), text_response("two"))  # nothing scripted for a third turn
    assert [say(api, session_id, token, PLAN_MESSAGE).status_code for _ in range(2)] == [200, 200]
    events_before = SessionEvent.objects.count()
    refused = say(api, session_id, token, PLAN_MESSAGE)
    assert refused.status_code == 409
    assert refused.json()["code"] == "session_turn_limit" and refused.json()["detail"]
    assert SessionEvent.objects.count() == events_before
    # Reading and exporting still work.
    assert api.get(f"/agent/sessions/{session_id}/export", HTTP_X_SESSION_TOKEN=token).status_code == 200


def test_a_session_over_session_max_bytes_takes_no_more_turns(api, new_session, settings, scripted_model):
    session_id, token = new_session()
    scripted_model(text_response("one"))
    assert say(api, session_id, token, PLAN_MESSAGE).status_code == 200
    stored = sessions.usage(AgentSession.objects.get(session_id=session_id).pk)
    assert stored.turns == 1 and stored.size_bytes > 0
    settings.AGENT_SESSION_MAX_BYTES = stored.size_bytes  # full now: the model must not run again
    refused = say(api, session_id, token, PLAN_MESSAGE)
    assert refused.status_code == 409 and refused.json()["code"] == "session_size_limit"
    settings.AGENT_SESSION_MAX_BYTES = stored.size_bytes + 1
    scripted_model(text_response("two"))
    assert say(api, session_id, token, PLAN_MESSAGE).status_code == 200


def test_session_usage_counts_sealed_bytes_without_a_key(api, new_session):
    session_id, token = new_session()
    assert say(api, session_id, token, PLAN_MESSAGE).status_code == 200
    session = AgentSession.objects.get(session_id=session_id)
    usage = sessions.usage(session.pk)  # no token_context: no key needed
    stored = len(session.state) + sum(len(data) for data in session.events.values_list("event_data", flat=True))
    assert usage.size_bytes == stored and usage.turns == 1
    # The admin's figure (the ORM's with_usage()) and the turn's (one SQL statement) agree.
    listed = AgentSession.objects.filter(pk=session.pk).with_usage().get()
    assert listed.size_bytes == usage.size_bytes


def test_session_usage_of_a_session_without_events_is_its_state_and_of_a_deleted_one_none():
    session = make_session(events=0)
    assert sessions.usage(session.pk) == sessions.SessionUsage(turns=0, size_bytes=len(session.state))
    AgentSession.objects.filter(pk=session.pk).delete()
    assert sessions.usage(session.pk) is None


# --- model calls per turn --------------------------------------------------------------------
def test_a_model_that_keeps_calling_tools_is_stopped_and_nothing_is_saved(api, new_session, settings, scripted_model):
    settings.AGENT_MAX_LLM_CALLS = 4
    session_id, token = new_session()
    model = scripted_model(*[call_response("verify_claims", {"claims": ["Loop"]}) for _ in range(50)])
    before = SessionEvent.objects.count()
    response = say(api, session_id, token, PLAN_MESSAGE)
    assert response.status_code == 502
    assert "次數" in response.json()["detail"]
    assert len(model.requests) == 4
    assert SessionEvent.objects.count() == before
    # The session is not left locked: the next turn runs.
    scripted_model(text_response("Back to normal."))
    assert say(api, session_id, token, PLAN_MESSAGE).status_code == 200
