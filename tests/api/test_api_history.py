"""The conversation read back (GET .../messages) shows each reply as the turn showed it: its text,
claim checks, tool calls and model (issue 44, part 2). What it shows is kept in the reply's own
event, sealed with it: nothing of it is in the database in clear."""

import datetime as dt
import json

import pytest
from google.adk.events.event import Event
from google.genai import types

from agent.events import REPLY_RECORD
from sessions_app.selectors import _conversation
from tests.support.asgi_client import ASGIClient
from tests.support.privacy import find_chunks, find_markers, sealed_chunks
from tests.support.scripted_llm import ScriptedLlm, call_response, text_response
from tests.support.session_client import create_session, messages_of, say

pytestmark = pytest.mark.django_db
CLAIM = "Senior Backend Engineer at Kingfisher Cloud Ltd."
# A model name found nowhere but in what a turn shows with its reply.
MODEL_MARKER = "model-marker-5c1e9a"


def _steps(reply: str = "Hi 林語晴. Your plan is saved as v1.") -> list:
    return [
        call_response("verify_claims", {"claims": [CLAIM]}),
        call_response("save_plan", {"plan": "1. Apply to platform teams."}),
        text_response(reply),
    ]


@pytest.fixture
def marked_model(turns_on):
    def install(*steps) -> ScriptedLlm:
        model = ScriptedLlm(model=MODEL_MARKER, steps=list(steps))
        turns_on(model)
        return model

    return install


def _shown(answer: dict) -> dict:
    return {key: answer[key] for key in ("verification", "tool_calls", "model")}


def test_each_reply_comes_back_with_its_claim_checks_tool_calls_and_model(api, new_session, marked_model):
    session_id, token = new_session()
    marked_model(*_steps(f"You were a {CLAIM}"), text_response("Nothing to check here."))
    first = say(api, session_id, token).json()
    second = say(api, session_id, token, "Thanks").json()
    messages = messages_of(api, session_id, token)
    assert [message["role"] for message in messages] == ["user", "agent", "user", "agent"]
    for message, answer in zip(messages[1::2], (first, second), strict=True):
        assert message["text"] == answer["reply"]
        assert _shown(message) == _shown(answer)
    assert first["verification"][0]["supported"] and first["tool_calls"][0]["name"] == "verify_claims"
    assert second["tool_calls"] == []
    # The person's messages carry none of it.
    assert all(_shown(message) == dict.fromkeys(_shown(message)) for message in messages[::2])


def test_a_streamed_turn_reads_back_as_it_was_shown(new_session, marked_model):
    api = ASGIClient()
    session_id, token = create_session(api)
    marked_model(*_steps())
    streamed = say(api, session_id, token, HTTP_ACCEPT="text/event-stream")
    events = b"".join(streamed.streaming_content).decode().split("\n\n")
    shown = json.loads(next(event for event in events if event.startswith("event: reply")).split("data: ", 1)[1])
    (reply,) = [message for message in messages_of(api, session_id, token) if message["role"] == "agent"]
    assert reply["text"] == shown["reply"] and _shown(reply) == _shown(shown)
    assert reply["model"] == MODEL_MARKER
    assert [call["name"] for call in reply["tool_calls"]] == ["verify_claims", "save_plan"]


@pytest.mark.django_db(transaction=True)
def test_what_a_reply_showed_is_sealed_with_its_event(api, new_session, marked_model, stored_files):
    """Kept in the reply's event (sealed, erased with it), never in clear: the model's name, found
    only there, is in no database file; read back with the token, it is. (Seen failing with events
    stored unsealed.)"""
    session_id, token = new_session()
    marked_model(*_steps())
    assert say(api, session_id, token).status_code == 200
    assert find_markers(stored_files(), [MODEL_MARKER, CLAIM]) == []
    chunks = sealed_chunks()  # the search reads the files: every sealed value's bytes are found there
    assert {index for _, index in find_chunks(stored_files(), chunks)} == set(range(len(chunks)))
    assert messages_of(api, session_id, token)[1]["model"] == MODEL_MARKER


def _event(author: str, text: str, invocation: str, record: dict | None = None) -> Event:
    role = "user" if author == "user" else "model"
    return Event(
        author=author,
        invocation_id=invocation,
        content=types.Content(role=role, parts=[types.Part(text=text)]),
        custom_metadata=None if record is None else {REPLY_RECORD: record},
        timestamp=dt.datetime(2026, 1, 1, tzinfo=dt.UTC).timestamp(),
    )


def test_a_reply_stored_before_replies_kept_what_they_showed_has_nulls():
    record = {"verification": [], "tool_calls": [], "model": "offline-resume-model", "ignored": "x"}
    messages = _conversation(
        [
            _event("user", "Hello", "a"),
            _event("resume_agent", "An old reply.", "a"),
            _event("user", "Again", "b"),
            _event("resume_agent", "A new reply.", "b", record),
        ]
    )
    assert messages[1] | {"timestamp": None} == {
        "role": "agent",
        "text": "An old reply.",
        "timestamp": None,
        "verification": None,
        "tool_calls": None,
        "model": None,
    }
    assert {key: messages[3][key] for key in ("verification", "tool_calls", "model")} == {
        "verification": [],
        "tool_calls": [],
        "model": "offline-resume-model",
    }
    assert "ignored" not in messages[3]


def test_a_text_the_model_wrote_beside_a_tool_call_is_not_a_reply(api, new_session, marked_model):
    """Live, a turn shows its final answer only; read back, the same."""
    session_id, token = new_session()
    preamble = types.Part(text="Let me check that first.")
    call = call_response("verify_claims", {"claims": [CLAIM]})
    call.content.parts.insert(0, preamble)
    marked_model(call, text_response("Checked."))
    answer = say(api, session_id, token).json()
    assert answer["reply"] == "Checked."
    assert [message["text"] for message in messages_of(api, session_id, token)][1:] == ["Checked."]
