"""GET /agent/sessions/{id}/plan: the current plan and its kept versions, for the owner only.

Reading the plan saves nothing (no version, no event, no state, no activity); every miss
is the byte-identical 404 of the other endpoints; the schema says exactly what it answers.
"""

import datetime as dt
import uuid

import pytest
import time_machine

from sessions_app.models import AgentSession, SessionEvent
from tests.support.answers import comparable
from tests.support.session_client import answer_to

pytestmark = pytest.mark.django_db


def _plan(api, session_id, token):
    return api.get(f"/agent/sessions/{session_id}/plan", HTTP_X_SESSION_TOKEN=token)


def _stored(session_id) -> tuple:
    row = AgentSession.objects.get(session_id=session_id)
    events = list(SessionEvent.objects.filter(agent_session=row).order_by("seq").values_list("seq", "event_data"))
    return row.state, row.revision, row.last_activity_at, row.turn_started_at, events


def test_a_new_session_has_no_plan(api, new_session):
    session_id, token = new_session()
    response = _plan(api, session_id, token)
    assert response.status_code == 200
    assert response.json() == {"session_id": session_id, "current": None, "versions": []}
    assert "no-store" in response["Cache-Control"]


def test_the_current_plan_and_its_earlier_versions(api, new_session):
    session_id, token = new_session()
    answer_to(api, session_id, token, "Please draft my job-search plan")
    answer_to(api, session_id, token, "Focus on remote roles")

    body = _plan(api, session_id, token).json()
    assert set(body) == {"session_id", "current", "versions"}
    assert [version["version"] for version in body["versions"]] == [1, 2]
    assert body["current"] == body["versions"][-1]
    assert set(body["current"]) == {"version", "plan", "saved_at"}
    assert body["current"]["plan"] and body["current"]["plan"] != body["versions"][0]["plan"]
    dt.datetime.fromisoformat(body["current"]["saved_at"])
    # The same versions the export holds, and the count the metadata gives.
    export = api.get(f"/agent/sessions/{session_id}/export", HTTP_X_SESSION_TOKEN=token).json()
    assert body["versions"] == export["plan_versions"]
    meta = api.get(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).json()
    assert meta["plan_versions"] == body["current"]["version"]


def test_reading_the_plan_saves_nothing(api, new_session):
    session_id, token = new_session()
    answer_to(api, session_id, token, "Please draft my job-search plan")
    before = _stored(session_id)
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    with time_machine.travel(later):
        first = _plan(api, session_id, token).json()
        second = _plan(api, session_id, token).json()
    assert first == second
    assert [version["version"] for version in first["versions"]] == [1]
    assert _stored(session_id) == before  # no version, no event, same sealed state, no activity


def test_only_the_kept_versions_are_listed(api, new_session, monkeypatch):
    monkeypatch.setenv("PLAN_MAX_VERSIONS", "2")
    session_id, token = new_session()
    for message in ("Please draft my job-search plan", "Focus on remote roles", "Add a weekly schedule"):
        answer_to(api, session_id, token, message)
    body = _plan(api, session_id, token).json()
    assert [version["version"] for version in body["versions"]] == [2, 3]
    assert body["current"]["version"] == 3


def test_without_a_token_it_is_the_401_of_the_other_endpoints(api, new_session):
    session_id, _ = new_session()
    response = api.get(f"/agent/sessions/{session_id}/plan")
    assert response.status_code == 401
    assert comparable(response) == comparable(api.get(f"/agent/sessions/{session_id}/export"))


def test_every_miss_is_the_404_of_the_other_endpoints_byte_for_byte(api, new_session, settings):
    settings.DEBUG = False
    mine, my_token = new_session()
    answer_to(api, mine, my_token, "Please draft my job-search plan")
    other, other_token = new_session()
    gone, gone_token = new_session()
    assert api.delete(f"/agent/sessions/{gone}", HTTP_X_SESSION_TOKEN=gone_token).status_code == 204
    baseline = comparable(api.get(f"/agent/sessions/{uuid.uuid4()}", HTTP_X_SESSION_TOKEN=my_token))
    assert baseline[0] == 404
    misses = {
        "wrong token": (mine, "x" * 43),
        "other owner's token": (mine, other_token),
        "deleted": (gone, gone_token),
        "unknown id": (str(uuid.uuid4()), my_token),
        "malformed id": ("not-a-uuid", my_token),
        "empty token": (mine, ""),
    }
    for name, (session_id, token) in misses.items():
        plan = _plan(api, session_id, token)
        assert comparable(plan) == baseline, name
        # ... and the same answer the session's other endpoints give for that miss.
        for path in ("", "/messages", "/export"):
            other_endpoint = api.get(f"/agent/sessions/{session_id}{path}", HTTP_X_SESSION_TOKEN=token)
            assert comparable(other_endpoint) == comparable(plan), (name, path)
    # The stranger's reads changed nothing for the owner.
    assert _plan(api, mine, my_token).json()["current"]["version"] == 1


def test_an_expired_session_is_the_same_404(api, new_session, settings):
    settings.AGENT_SESSION_TTL_HOURS = 24
    session_id, token = new_session()
    baseline = comparable(api.get(f"/agent/sessions/{uuid.uuid4()}", HTTP_X_SESSION_TOKEN=token))
    with time_machine.travel(dt.datetime.now(dt.UTC) + dt.timedelta(hours=24, minutes=1)):
        assert comparable(_plan(api, session_id, token)) == baseline


def test_the_schema_says_exactly_what_it_answers(api):
    document = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    operation = document["paths"]["/agent/sessions/{session_id}/plan"]["get"]
    parameters = {(parameter["in"], parameter["name"]): parameter for parameter in operation["parameters"]}
    assert parameters[("header", "X-Session-Token")]["required"] is True
    assert ("path", "session_id") in parameters
    # 400 (a Host not allowed) and 413 (a body, even on a GET) come from in front of the view.
    assert set(operation["responses"]) == {"200", "400", "401", "404", "406", "413", "503", "507"}
    busy = operation["responses"]["503"]  # PostgreSQL's pool lent no connection in time
    assert busy["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ServerBusyResponse"}
    assert "Retry-After" in busy["headers"]
    assert operation["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/SessionPlan"
    }
    assert operation["responses"]["404"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorResponse"
    }
    schemas = document["components"]["schemas"]
    plan = schemas["SessionPlan"]
    assert set(plan["properties"]) == {"session_id", "current", "versions"}
    assert set(plan["required"]) == {"session_id", "current", "versions"}
    assert plan["properties"]["current"]["nullable"] is True
    assert plan["properties"]["current"]["allOf"] == [{"$ref": "#/components/schemas/PlanVersion"}]
    assert plan["properties"]["versions"]["items"] == {"$ref": "#/components/schemas/PlanVersion"}
    assert set(schemas["PlanVersion"]["required"]) == {"version", "plan", "saved_at"}
    # A created session is linked to it, as to every operation on a session.
    links = document["paths"]["/agent/sessions"]["post"]["responses"]["201"]["links"]
    assert operation["operationId"] in links
