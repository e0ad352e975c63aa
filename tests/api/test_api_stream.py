"""A turn as Server-Sent Events (`Accept: text/event-stream`): progress while it runs, the verified
reply at the end, saved only when complete. (A client gone mid-turn: tests/serving/test_stream_servers.py,
under the real servers.) Every request goes through Django's ASGI handler, as `make run` serves it.
"""

import json

import pytest
from asgiref.sync import sync_to_async

from sessions_app.models import AgentSession, SessionEvent
from sessions_app.storage import turn_lock
from tests.support.asgi_client import ASGIClient, run
from tests.support.session_client import say

pytestmark = pytest.mark.django_db
DRAFT_MESSAGE = "Please draft my job-search plan"

STREAM = {"HTTP_ACCEPT": "text/event-stream"}
PROGRESS_KEYS = {"stage", "label", "count", "version", "model_call"}


@pytest.fixture
def api():
    """This module's client (and `new_session`'s): Django's ASGI handler, the one stream path."""
    return ASGIClient()


def parse(chunks) -> list[tuple[str, dict]]:
    """(event name, data) of each event in the chunks of a stream; comment lines left out."""
    events = []
    for block in b"".join(chunks).decode("utf-8").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if line and not line.startswith(":"))
        if fields:
            events.append((fields["event"], json.loads(fields["data"])))
    return events


def test_a_streamed_turn_shows_its_stages_then_the_stored_reply(api, new_session):
    session_id, token = new_session()
    response = say(api, session_id, token, DRAFT_MESSAGE, HTTP_ACCEPT_LANGUAGE="en", **STREAM)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream; charset=utf-8"
    assert response["Cache-Control"] == "no-store"
    events = parse(response.streaming_content)
    names = [name for name, _ in events]
    assert names[-1] == "reply" and set(names[:-1]) == {"progress", "text"}
    stages = [data["stage"] for name, data in events[:-1] if name == "progress"]
    assert stages[0] == "reading" and stages[-2:] == ["checking_reply", "saving"]
    assert {"thinking", "checking_claims", "saving_plan"} <= set(stages)
    labels = {data["stage"]: data["label"] for name, data in events[:-1] if name == "progress"}
    assert labels["saving_plan"] == "Saving plan v1"
    reply = events[-1][1]
    plain = say(api, session_id, token, "Focus on remote roles").json()
    assert set(reply) == set(plain)
    assert reply["verification"] and reply["tool_calls"][0]["outcome"] == "ran"
    history = api.get(f"/agent/sessions/{session_id}/messages", HTTP_X_SESSION_TOKEN=token).json()["messages"]
    assert [m["role"] for m in history] == ["user", "agent", "user", "agent"]
    assert history[1]["text"] == reply["reply"]


def test_progress_carries_stages_and_counts_never_the_models_text(api, new_session):
    session_id, token = new_session()
    events = parse(say(api, session_id, token, DRAFT_MESSAGE, **STREAM).streaming_content)
    reply = events[-1][1]["reply"]
    for _, data in [(name, data) for name, data in events[:-1] if name == "progress"]:
        assert set(data) <= PROGRESS_KEYS
        assert not any(line and line in data["label"] for line in reply.splitlines() if len(line) > 12)
    counted = next(data for _, data in events if data.get("stage") == "checking_claims")
    assert counted["count"] == len(events[-1][1]["tool_calls"][0]["args"]["claims"])


def test_progress_labels_speak_the_clients_language(api, new_session):
    session_id, token = new_session()
    events = parse(
        say(api, session_id, token, DRAFT_MESSAGE, HTTP_ACCEPT_LANGUAGE="zh-Hant", **STREAM).streaming_content
    )
    labels = {data["stage"]: data["label"] for name, data in events if name == "progress"}
    assert labels["saving_plan"] == "正在儲存第 1 版計畫"
    assert all(not label.isascii() for label in labels.values())


def test_errors_before_the_stream_are_the_usual_json_answers(api, new_session):
    session_id, token = new_session()
    missing = say(api, "0" * 32, token, DRAFT_MESSAGE, **STREAM)
    plain_missing = say(api, "0" * 32, token, DRAFT_MESSAGE)
    assert (missing.status_code, missing.content) == (404, plain_missing.content)
    assert missing["Content-Type"] == "application/json"
    session = AgentSession.objects.get(session_id=session_id)
    assert turn_lock.lock_turn(session.pk, 60)  # another turn runs
    busy = say(api, session_id, token, DRAFT_MESSAGE, **STREAM)
    turn_lock.release_turn(session.pk)
    assert busy.status_code == 409 and busy["Content-Type"] == "application/json" and "detail" in busy.json()


@pytest.mark.usefixtures("runner_on_gemini_double")
def test_a_model_failure_mid_stream_is_an_error_event_and_nothing_is_kept(api, new_session, gemini_double):
    session_id, token = new_session()
    gemini_double.answer((503, {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}))
    events = parse(say(api, session_id, token, DRAFT_MESSAGE, **STREAM).streaming_content)
    name, error = events[-1]
    assert name == "error" and error["status"] == 503 and error["code"] == "model_unavailable"
    assert error["detail"]
    assert SessionEvent.objects.count() == 0
    assert say(api, session_id, token, DRAFT_MESSAGE).status_code == 200  # the lock was freed


def test_a_session_deleted_while_its_turn_streams_ends_with_the_one_404(api, new_session):
    """The error event carries the status and body of the answer the API gives without a stream:
    here the uniform 404 (an answer built outside DRF's Response), for a session erased mid-turn."""
    session_id, token = new_session()

    async def steps():
        url = f"/agent/sessions/{session_id}/messages"
        headers = {"HTTP_X_SESSION_TOKEN": token, "HTTP_ACCEPT_LANGUAGE": "en", **STREAM}
        events = aiter(
            (
                await api.request("post", url, {"message": "Please draft my job-search plan"}, **headers)
            ).streaming_content
        )
        assert parse([await anext(events)])[0][0] == "progress"  # the turn has begun
        deleted = await sync_to_async(api.delete)(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token)
        assert deleted.status_code == 204
        return parse([chunk async for chunk in events])[-1]

    name, error = run(steps)
    not_found = api.get(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token, HTTP_ACCEPT_LANGUAGE="en")
    assert name == "error" and error == {"status": 404, **not_found.json()}
    assert not SessionEvent.objects.exists()


def test_under_debug_an_unexpected_failure_mid_stream_is_still_the_json_500(api, new_session, settings, monkeypatch):
    """Under DEBUG the API shows Django's debug page, which a stream cannot: the event then
    carries the same 500 answer as without DEBUG."""
    from sessions_app.turns import service as turns

    def broken(self, result):
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(turns.TurnSlot, "keep", broken)
    session_id, token = new_session()
    answers = {}
    for debug in (False, True):
        settings.DEBUG = debug
        answers[debug] = parse(
            say(api, session_id, token, DRAFT_MESSAGE, HTTP_ACCEPT_LANGUAGE="en", **STREAM).streaming_content
        )[-1]
    assert answers[True] == answers[False]
    assert answers[True] == (
        "error",
        {"status": 500, "detail": "Something went wrong on the server. No data was lost; please try again later."},
    )


def test_a_stream_closed_before_its_first_event_frees_the_turn(api, new_session):
    """A client that hangs up before reading anything: the server closes the answer, and with it
    the turn: its lock and its place among the turns in flight are free again."""
    from django.core import signals
    from django.db import close_old_connections

    from sessions_app.turns.limits import turns_in_flight

    session_id, token = new_session()
    response = api.opened(
        f"/agent/sessions/{session_id}/messages", {"message": "Plan"}, HTTP_X_SESSION_TOKEN=token, **STREAM
    )
    assert response.status_code == 200 and turns_in_flight.count == 1
    # What the server does once the client is gone; the test's database connection is kept open
    # meanwhile, as Django's test client keeps it through its own requests.
    signals.request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        signals.request_finished.connect(close_old_connections)
    assert turns_in_flight.count == 0
    assert say(api, session_id, token, DRAFT_MESSAGE).status_code == 200  # no 409: the lock was freed


@pytest.mark.parametrize(
    "accept, streamed",
    [
        ("text/event-stream", True),
        ("text/*", True),
        ("text/event-stream; charset=utf-8, application/json", True),  # the more specific first
        ("text/event-stream, application/json", False),  # a tie: JSON
        ("application/json", False),
        ("*/*", False),
    ],
)
def test_the_accept_header_chooses_the_stream_as_drf_negotiates(api, new_session, accept, streamed):
    session_id, token = new_session()
    response = say(api, session_id, token, DRAFT_MESSAGE, HTTP_ACCEPT=accept)
    assert response.status_code == 200 and response.streaming == streamed
    if streamed:
        list(response.streaming_content)


def test_only_a_turns_answer_varies_with_accept(api, new_session):
    """A turn's answer is JSON or a stream as the client accepts (`Vary: Accept`); no other answer
    of the view depends on Accept: its errors, the 404 among them, are the same JSON for every client."""

    def varies(response) -> bool:
        return "Accept" in [name.strip() for name in response.get("Vary", "").split(",")]

    session_id, token = new_session()
    streamed = say(api, session_id, token, DRAFT_MESSAGE, **STREAM)
    list(streamed.streaming_content)
    assert varies(streamed) and varies(say(api, session_id, token, DRAFT_MESSAGE))
    auth = {"HTTP_X_SESSION_TOKEN": token}
    assert not varies(api.get(f"/agent/sessions/{session_id}/messages", **auth, **STREAM))
    assert not varies(say(api, "0" * 32, token, DRAFT_MESSAGE, **STREAM))
    assert not varies(say(api, session_id, token, message="", **STREAM))  # a 400
    refused = say(api, session_id, token, DRAFT_MESSAGE, HTTP_ACCEPT="application/xml")
    assert refused.status_code == 406 and not varies(refused)
