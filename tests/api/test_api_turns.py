"""Conversation turns through the API: tools, verification, model failures, concurrency."""

import asyncio
import re
import threading

import pytest
from google.genai import errors as genai_errors

from sessions_app.models import AgentSession, SessionEvent
from sessions_app.storage import turn_lock
from tests.support.scripted_llm import call_response, text_response
from tests.support.session_client import messages_of, say

pytestmark = pytest.mark.django_db


def test_tool_calls_usage_and_plan_are_reported(api, new_session, scripted_model):
    session_id, token = new_session()
    scripted_model(
        call_response(
            "verify_claims",
            {"claims": ["Senior Backend Engineer at Kingfisher Cloud Ltd."]},
            prompt_tokens=100,
            output_tokens=10,
        ),
        call_response("save_plan", {"plan": "1. Apply to platform teams."}, prompt_tokens=120, output_tokens=12),
        text_response("Hi 林語晴. Your plan is saved as v1.", prompt_tokens=140, output_tokens=14),
    )
    response = say(api, session_id, token)
    assert response.status_code == 200
    body = response.json()
    assert [call["name"] for call in body["tool_calls"]] == ["verify_claims", "save_plan"]
    assert body["tool_calls"][1]["args"] == {"plan": "1. Apply to platform teams."}
    assert body["llm_calls"] == 3
    assert body["total_tokens"] == 396
    assert body["model"] == "scripted"
    assert body["latency_ms"] >= 0
    assert body["reply"] == "Hi 林語晴. Your plan is saved as v1."
    meta = api.get(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).json()
    assert meta["plan_versions"] == 1 and meta["turns"] == 1


def test_reply_is_verified_even_when_the_model_skips_verification(api, new_session, scripted_model):
    session_id, token = new_session()
    scripted_model(text_response("You worked at Google for 10 years. You led the billing migration to Kubernetes."))
    body = say(api, session_id, token).json()
    assert body["tool_calls"] == []
    by_claim = {check["claim"]: check for check in body["verification"]}
    assert by_claim["You worked at Google for 10 years."]["supported"] is False
    supported = by_claim["You led the billing migration to Kubernetes."]
    assert supported["supported"] is True
    assert "billing service" in supported["evidence"]


MODEL_FAILURES = [
    (
        "quota",
        genai_errors.ClientError(429, {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}),
        503,
        True,
    ),
    (
        "server error",
        genai_errors.ServerError(500, {"error": {"code": 500, "message": "boom", "status": "INTERNAL"}}),
        502,
        True,
    ),
    (
        "unavailable",
        genai_errors.ServerError(503, {"error": {"code": 503, "message": "busy", "status": "UNAVAILABLE"}}),
        503,
        True,
    ),
    ("timeout", TimeoutError(), 504, False),
    ("bad response", ValueError("unparseable"), 502, False),
]


@pytest.mark.parametrize("name,error,status,retry_after", MODEL_FAILURES, ids=[m[0] for m in MODEL_FAILURES])
def test_model_failure_is_mapped_and_leaves_no_half_turn(
    api, new_session, scripted_model, name, error, status, retry_after
):
    session_id, token = new_session()
    scripted_model(text_response("Hi 林語晴, first answer."))
    assert say(api, session_id, token, "first").status_code == 200
    history = messages_of(api, session_id, token)
    state = AgentSession.objects.get(session_id=session_id).state
    event_count = SessionEvent.objects.count()

    # The model fails after a tool already wrote state in this turn.
    scripted_model(call_response("save_plan", {"plan": "half a plan"}), error)
    response = say(api, session_id, token, "second")
    assert response.status_code == status
    assert "detail" in response.json()
    assert ("Retry-After" in response) is retry_after
    assert not retry_after or int(response["Retry-After"]) > 0  # seconds, as RFC 9110 says

    assert messages_of(api, session_id, token) == history
    assert AgentSession.objects.get(session_id=session_id).state == state
    assert SessionEvent.objects.count() == event_count
    scripted_model(text_response("Hi again."))
    assert say(api, session_id, token, "third").status_code == 200
    assert [m["text"] for m in messages_of(api, session_id, token)][-2:] == ["third", "Hi again."]


def test_turn_timeout_is_504(api, new_session, scripted_model, settings):
    settings.AGENT_TURN_TIMEOUT_SECONDS = 0.2

    model = scripted_model()

    async def slow_generate(llm_request, stream=False):
        await asyncio.Event().wait()  # a model that never answers: the turn's timeout ends it
        yield text_response("too late")

    object.__setattr__(model, "generate_content_async", slow_generate)
    session_id, token = new_session()
    response = say(api, session_id, token)
    assert response.status_code == 504
    assert messages_of(api, session_id, token) == []


def test_a_turn_already_running_gets_409(api, new_session):
    session_id, token = new_session()
    session_pk = AgentSession.objects.get(session_id=session_id).pk
    assert turn_lock.lock_turn(session_pk, 60)  # another turn runs
    response = say(api, session_id, token)
    turn_lock.release_turn(session_pk)
    assert response.status_code == 409
    assert response.json() == {"detail": "這個工作階段正在處理上一則訊息，請等它完成後再送出"}
    assert messages_of(api, session_id, token) == []


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_turns_give_one_200_and_one_409(new_session, scripted_model):
    from rest_framework.test import APIClient

    session_id, token = new_session()
    entered, release = threading.Event(), threading.Event()
    model = scripted_model()

    async def blocking_generate(llm_request, stream=False):
        entered.set()
        await asyncio.get_running_loop().run_in_executor(None, release.wait, 10)
        yield text_response("Hi 林語晴, the only answer.")

    object.__setattr__(model, "generate_content_async", blocking_generate)
    results = {}

    def first_turn():
        results["first"] = say(APIClient(), session_id, token, "first")

    thread = threading.Thread(target=first_turn)
    thread.start()
    assert entered.wait(10)
    results["second"] = say(APIClient(), session_id, token, "second")
    release.set()
    thread.join(10)
    from django.db import connections

    connections.close_all()
    assert results["first"].status_code == 200
    assert results["second"].status_code == 409
    texts = [m["text"] for m in messages_of(APIClient(), session_id, token)]
    assert texts == ["first", "Hi 林語晴, the only answer."]


def test_offline_model_end_to_end(api, new_session):
    session_id, token = new_session()
    headers = {"HTTP_X_SESSION_TOKEN": token}
    first = say(api, session_id, token, "請幫我規劃求職").json()
    assert "offline" in first["model"]
    assert "林語晴" in first["reply"] and "離線模型" in first["reply"]
    assert {"verify_claims", "save_plan"} <= {call["name"] for call in first["tool_calls"]}
    assert first["total_tokens"] == 0 and first["llm_calls"] >= 3
    assert first["verification"] and all(check["supported"] for check in first["verification"])
    second = say(api, session_id, token, "Focus on remote roles").json()
    assert second["reply"] != first["reply"]

    meta = api.get(f"/agent/sessions/{session_id}", **headers).json()
    assert meta["turns"] == 2 and meta["plan_versions"] == 2
    export = api.get(f"/agent/sessions/{session_id}/export", **headers)
    assert export.status_code == 200
    # The file's name says the day, never the session id (issue 39): it lands in downloads folders.
    assert re.fullmatch(r'attachment; filename="resume-session-\d{4}-\d\d-\d\d\.json"', export["Content-Disposition"])
    assert session_id not in export["Content-Disposition"]
    document = export.json()
    assert [plan["version"] for plan in document["plan_versions"]] == [1, 2]
    assert document["plan_versions"][0]["plan"] != document["plan_versions"][1]["plan"]
    assert "林語晴" in document["resume_text"]
    assert len(document["conversation"]) == 4

    assert api.delete(f"/agent/sessions/{session_id}", **headers).status_code == 204
    assert api.get(f"/agent/sessions/{session_id}", **headers).status_code == 404
    assert AgentSession.objects.count() == 0 and SessionEvent.objects.count() == 0


@pytest.mark.parametrize(
    "language,detail",
    [
        ("zh-hant", "服務目前忙碌中，未處理這個請求。請稍後再試。"),
        ("en", "The service is busy right now; nothing was done. Please try again soon."),
    ],
)
def test_a_request_that_gets_no_database_connection_in_time_is_503_busy(language, detail):
    """PostgreSQL's pool (DATABASE_POOL_SIZE a web process) lends none within its timeout: a bound
    that says so, like the turns' one; any other database error stays a logged 500."""
    from django.db import OperationalError
    from django.utils import translation
    from psycopg_pool import PoolTimeout

    from sessions_app.api.errors import api_exception_handler

    def answer(cause: Exception):
        try:
            raise OperationalError("no connection") from cause
        except OperationalError as exc:
            with translation.override(language):
                return api_exception_handler(exc, {})

    waited = answer(PoolTimeout("couldn't get a connection after 10.00 sec"))
    assert waited.status_code == 503 and waited["Retry-After"] == "1"
    assert waited.data == {"detail": detail, "code": "busy"}
    assert answer(RuntimeError("something else")).status_code == 500


def test_a_turn_beyond_the_processs_bound_is_503_busy_and_takes_nothing(api, new_session, settings):
    """AGENT_MAX_TURNS_IN_FLIGHT turns at once per process (tests/turns/test_turns_in_flight.py holds 100
    at the model); one more is refused at once, not queued, and holds no lock and no slot."""
    from sessions_app.turns.limits import turns_in_flight

    session_id, token = new_session()
    settings.AGENT_MAX_TURNS_IN_FLIGHT = 0
    refused = say(api, session_id, token)
    assert refused.status_code == 503 and refused["Retry-After"] == "1"
    assert refused.json() == {"detail": "服務目前正在回覆的訊息已達上限，請稍後再傳送一次。", "code": "busy"}
    in_english = api.post(
        f"/agent/sessions/{session_id}/messages",
        {"message": "Hi"},
        format="json",
        HTTP_X_SESSION_TOKEN=token,
        HTTP_ACCEPT_LANGUAGE="en",
    )
    assert in_english.json()["detail"] == (
        "The service is answering as many messages as it can right now. Please send it again soon."
    )
    assert turns_in_flight.count == 0 and messages_of(api, session_id, token) == []
    settings.AGENT_MAX_TURNS_IN_FLIGHT = 1
    assert say(api, session_id, token).status_code == 200  # the session's lock was never taken
    assert turns_in_flight.count == 0  # the turn gave its place back
