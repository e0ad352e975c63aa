"""The real model path on the wire: ADK's Gemini class, google-genai's HTTP client, and a local
double of the Gemini REST API on 127.0.0.1 (tests/support/gemini_double.py; google-genai reads
GOOGLE_GEMINI_BASE_URL). No network.

A turn the model ends without an answer to show is an error with a code the client can act on,
in the client's language, and it is not kept: a prompt or an answer its safety filters blocked
(422 `model_blocked`), an answer cut off before any text (502 `model_truncated`), an answer
with no text (502 `model_empty`). Never a 200 with an empty reply.
"""

import gc
import logging
import time

import pytest

from sessions_app.models import AgentSession, IntegrityFailure, SessionEvent
from sessions_app.storage import turn_lock
from tests.support.gemini_double import GeminiDouble, call_answer, text_answer
from tests.support.session_client import messages_of, say

pytestmark = pytest.mark.django_db

NO_ANSWER = {
    "prompt blocked": ({"promptFeedback": {"blockReason": "SAFETY"}}, 422, "model_blocked"),
    "answer blocked": ({"candidates": [{"finishReason": "SAFETY", "index": 0}]}, 422, "model_blocked"),
    "cut off": (
        {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "MAX_TOKENS", "index": 0}]},
        502,
        "model_truncated",
    ),
    "no text": (
        {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "STOP", "index": 0}]},
        502,
        "model_empty",
    ),
}


@pytest.mark.usefixtures("runner_on_gemini_double")
def test_a_turn_on_the_wire_stores_its_reply(api, new_session, gemini_double):
    session_id, token = new_session()
    gemini_double.answer(text_answer("Hi 林語晴, here is a first answer."))
    response = say(api, session_id, token, "Please draft my plan")
    assert response.status_code == 200
    assert (response.json()["reply"], response.json()["model"]) == (
        "Hi 林語晴, here is a first answer.",
        "gemini-2.5-flash",
    )
    assert gemini_double.requests[0]["systemInstruction"]  # what ADK sent on the wire
    assert [m["role"] for m in messages_of(api, session_id, token)] == ["user", "agent"]


@pytest.mark.usefixtures("runner_on_gemini_double")
def test_turns_share_one_model_client_and_its_connection(api, new_session, gemini_double, caplog):
    """The Runner runs on one long-lived event loop (sessions_app.turns.loop), so ADK's Gemini keeps
    one google-genai client and its connection pool across turns: every model call of five turns
    arrives on one connection, and no closed loop is left for a discarded client's aclose() to fail
    on ("Event loop is closed", an ERROR record of asyncio's)."""
    session_id, token = new_session()
    for n in range(5):
        assert say(api, session_id, token, f"message {n}").status_code == 200
    gc.collect()  # a discarded client is closed when it is collected
    assert len(gemini_double.client_ports) == 5
    assert len(set(gemini_double.client_ports)) == 1
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR] == []


UPSTREAM_MARKER = "上游引文-Marrowvale-5521"
QUOTING_ANSWERS = {
    # A 400 whose message quotes what it was sent, as Google's errors do.
    "400 quoting": (
        400,
        {"error": {"code": 400, "message": f"Invalid value {UPSTREAM_MARKER!r}", "status": "INVALID"}},
    ),
    # An answer google-genai cannot read as a response (its validation error quotes the value),
    # and an HTML error page (its error quotes the body).
    "invalid answer": (200, {"candidates": [{"content": {"parts": [{"text": {"quoted": UPSTREAM_MARKER}}]}}]}),
    "HTML page": (502, f"<html><body><h1>Bad gateway</h1><p>{UPSTREAM_MARKER}</p></body></html>"),
}


@pytest.mark.parametrize("case", list(QUOTING_ANSWERS))
@pytest.mark.usefixtures("runner_on_gemini_double")
def test_upstream_text_in_a_failed_answer_reaches_no_log(api, new_session, gemini_double, captured_logs, case):
    """ADK logs a failed model call with tracebacks quoting the upstream text (its node runner's
    "Node execution failed" and the root node's failure); the console handler's filter redacts them."""
    protected, raw = captured_logs
    session_id, token = new_session()
    gemini_double.answer(QUOTING_ANSWERS[case])
    response = say(api, session_id, token, "Please draft my plan")
    assert response.status_code in (502, 503) and response.json()["code"].startswith("model_")
    assert UPSTREAM_MARKER in raw.getvalue()  # control: the libraries did log it
    assert "record redacted" in protected.getvalue()
    assert UPSTREAM_MARKER not in protected.getvalue() + response.content.decode()
    assert SessionEvent.objects.count() == 0


@pytest.mark.parametrize("case", list(NO_ANSWER))
@pytest.mark.usefixtures("runner_on_gemini_double")
def test_a_turn_without_an_answer_is_an_error_and_is_not_kept(api, new_session, gemini_double, case):
    body, status, code = NO_ANSWER[case]
    session_id, token = new_session()
    gemini_double.answer(text_answer("Hi 林語晴, a first answer."))
    assert say(api, session_id, token, "first").status_code == 200
    history, events = messages_of(api, session_id, token), SessionEvent.objects.count()
    state = AgentSession.objects.get(session_id=session_id).state

    gemini_double.answer(body)
    response = say(api, session_id, token, "second", HTTP_ACCEPT_LANGUAGE="en")
    assert (response.status_code, response.json()["code"]) == (status, code)
    assert response.json()["detail"].isascii() and "not saved" in response.json()["detail"]
    # Nothing of the turn is kept: not the message, not an empty reply.
    assert messages_of(api, session_id, token) == history
    assert SessionEvent.objects.count() == events
    assert AgentSession.objects.get(session_id=session_id).state == state
    assert not turn_lock.turn_is_locked(AgentSession.objects.get(session_id=session_id).pk)  # the lock was released

    gemini_double.answer(text_answer("Hi again."))
    assert say(api, session_id, token, "third").status_code == 200
    assert [m["text"] for m in messages_of(api, session_id, token)][-2:] == ["third", "Hi again."]


@pytest.mark.usefixtures("runner_on_gemini_double")
def test_a_blocked_turn_answers_in_the_clients_language(api, new_session, gemini_double):
    session_id, token = new_session()
    gemini_double.answer({"promptFeedback": {"blockReason": "SAFETY"}})
    chinese = say(api, session_id, token, "first")  # no Accept-Language: Traditional Chinese
    assert chinese.status_code == 422 and chinese.json()["code"] == "model_blocked"
    assert not chinese.json()["detail"].isascii()


@pytest.mark.usefixtures("runner_on_gemini_double")
def test_each_tool_call_says_whether_it_ran(api, new_session, gemini_double, captured_logs):
    """A tool the model made up is listed as unknown, not as done: ADK told the model so, nothing ran."""
    session_id, token = new_session()
    gemini_double.answer(
        call_answer("delete_all_sessions", {"confirm": True}),
        call_answer("save_plan", {"plan": "1. Apply to platform teams."}),
        text_answer("Hi 林語晴, your plan is saved."),
    )
    response = say(api, session_id, token, "Please draft my plan")
    assert response.status_code == 200
    assert response.json()["tool_calls"] == [
        {"name": "delete_all_sessions", "args": {"confirm": True}, "outcome": "unknown"},
        {"name": "save_plan", "args": {"plan": "1. Apply to platform teams."}, "outcome": "ran"},
    ]
    told = gemini_double.requests[1]["contents"][-1]["parts"][0]["functionResponse"]
    assert told["name"] == "delete_all_sessions" and "error" in told["response"]
    assert api.get(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).json()["plan_versions"] == 1
    # Counted for the operators (the retention page's integrity table), without the made-up name.
    assert list(IntegrityFailure.objects.values_list("kind", flat=True)) == ["unknown_tool_call"]
    logged = captured_logs[0].getvalue()
    assert "WARNING sessions_app.storage.failure_counts: model called 1 tool(s) that do not exist" in logged
    assert "delete_all_sessions" not in logged


UNAVAILABLE = (503, {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}})


@pytest.fixture
def selected_gemini(monkeypatch, env_on_gemini_double, turns_on):
    """The model the service picks with a key (select_model: Gemini with its retries) on a local
    double; AGENT_MODEL_ATTEMPTS as the test sets it before it calls `select()`."""
    monkeypatch.setenv("AGENT_MODEL_RETRY_DELAY_SECONDS", "0.01")

    def select(attempts: str) -> GeminiDouble:
        from agent.model_selection import select_model

        monkeypatch.setenv("AGENT_MODEL_ATTEMPTS", attempts)
        turns_on(select_model())
        return env_on_gemini_double

    return select


@pytest.mark.parametrize("attempts,status,requests", [("2", 200, 2), ("1", 503, 1)])
def test_a_failed_model_call_is_retried_as_configured(api, new_session, selected_gemini, attempts, status, requests):
    """A 503 is retried once with two attempts, and not at all with one."""
    double = selected_gemini(attempts)
    session_id, token = new_session()
    double.answer(UNAVAILABLE, text_answer("Hi 林語晴, answered on the second attempt."))
    response = say(api, session_id, token, "Please draft my plan")
    assert response.status_code == status
    assert len(double.requests) == requests


def test_a_retry_waits_as_long_as_the_model_asked(api, new_session, selected_gemini):
    double = selected_gemini("3")
    session_id, token = new_session()
    double.answer((429, _quota(), {"Retry-After": "1"}), text_answer("Hi 林語晴, answered after the wait."))
    assert say(api, session_id, token, "Please draft my plan").status_code == 200
    first, second = double.arrival_times
    assert second - first >= 0.95  # the model's 1 s, not the configured 0.01 s backoff


def test_a_wait_past_the_turns_deadline_is_not_waited(api, new_session, selected_gemini, settings):
    """The model asks for longer than the turn has left: no retry, and the answer passes the
    model's wait on to the client at once."""
    settings.AGENT_TURN_TIMEOUT_SECONDS = 20
    double = selected_gemini("3")
    session_id, token = new_session()
    double.answer((429, _quota(), {"Retry-After": "120"}), text_answer("never sent"))
    started = time.monotonic()
    response = say(api, session_id, token, "Please draft my plan")
    assert (response.status_code, response["Retry-After"]) == (503, "120")
    assert len(double.requests) == 1 and time.monotonic() - started < 10


def _quota(details: list | None = None) -> dict:
    return {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED", "details": details or []}}


RETRY_INFO = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "42.3s"}]


@pytest.mark.parametrize(
    "answer,retry_after",
    [((429, _quota(), {"Retry-After": "17"}), "17"), ((429, _quota(RETRY_INFO)), "43"), ((429, _quota()), "30")],
    ids=["Retry-After header", "RetryInfo detail", "nothing said"],
)
@pytest.mark.usefixtures("runner_on_gemini_double")
def test_the_answers_retry_after_says_what_the_model_said(api, new_session, gemini_double, answer, retry_after):
    session_id, token = new_session()
    gemini_double.answer(answer)
    response = say(api, session_id, token, "Please draft my plan")
    assert response.status_code == 503
    assert response["Retry-After"] == retry_after
    assert SessionEvent.objects.count() == 0
