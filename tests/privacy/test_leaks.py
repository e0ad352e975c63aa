"""Nothing of a resume leaks outside the session's rows: not into logs at any
level, not into tracing spans, not onto a debug error page.

The model here is ADK's real Gemini class with google-genai's transport
replaced by a function in this file (no network): it is the class that logs
whole prompts at DEBUG, so these tests see what a real deployment would log.
"""

import asyncio
import io
import json
import logging

import pytest
from django.conf import settings
from django.utils.module_loading import import_string
from google.adk.agents.run_config import RunConfig
from google.adk.models.google_llm import Gemini
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.telemetry import ContentCapturingMode, TelemetryConfig
from google.genai import Client, types

from agent import APP_NAME
from agent.agent import build_agent
from sessions_app.infra.request_id import WELL_FORMED
from tests.support.asgi_client import ASGIClient
from tests.support.privacy import LOG_FORMATS, find_in_text, fixture_markers, fixture_resume

pytestmark = pytest.mark.django_db

MESSAGE_MARKER = "訊息標記-Zephyrine"


def _fake_gemini() -> Gemini:
    """Gemini whose transport answers: a verify_claims call, then a text reply quoting the resume."""
    client = Client(api_key="not-a-real-key")
    calls = {"n": 0}

    async def generate_content(*, model, contents, config=None):
        calls["n"] += 1
        if calls["n"] % 2:
            part = types.Part(
                function_call=types.FunctionCall(name="verify_claims", args={"claims": ["Kingfisher Cloud"]})
            )
        else:
            part = types.Part(text="Hi 林語晴. You worked at 翠鳥雲端股份有限公司 Kingfisher Cloud.")
        return types.GenerateContentResponse(
            candidates=[types.Candidate(content=types.Content(role="model", parts=[part]), finish_reason="STOP")],
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=50, candidates_token_count=5, total_token_count=55
            ),
        )

    client.aio.models.generate_content = generate_content
    return Gemini(model="gemini-2.5-flash", client=client)


@pytest.fixture
def runner_on_fake_gemini(turns_on):
    """The API's turns on ADK's Gemini class whose google-genai transport answers (no network)."""
    return turns_on(_fake_gemini())


def _full_flow(api) -> str:
    created = api.post("/agent/sessions", {"resume_text": fixture_resume()}, format="json").json()
    token = created["token"]
    url = f"/agent/sessions/{created['session_id']}"
    for message in (f"請幫我規劃求職 {MESSAGE_MARKER}", "Focus on remote roles"):
        assert (
            api.post(f"{url}/messages", {"message": message}, format="json", HTTP_X_SESSION_TOKEN=token).status_code
            == 200
        )
    assert api.get(f"{url}/export", HTTP_X_SESSION_TOKEN=token).status_code == 200
    assert api.get(f"{url}/nope", HTTP_X_SESSION_TOKEN=token).status_code == 404
    assert api.delete(url, HTTP_X_SESSION_TOKEN=token).status_code == 204
    return token


@pytest.mark.parametrize("log_format", LOG_FORMATS)
def test_logs_hold_no_resume_message_or_token_at_debug(api, runner_on_fake_gemini, captured_logs, settings):
    protected, raw = captured_logs
    token = _full_flow(api)
    secrets = fixture_markers() + [MESSAGE_MARKER, token]
    # Control: the libraries really do log the prompt at DEBUG, and the capture sees it.
    assert find_in_text(raw.getvalue(), fixture_markers()) != []
    assert "google_llm record redacted" in protected.getvalue()  # the protected handler saw the turn
    assert find_in_text(protected.getvalue(), secrets) == []
    assert "redact_library_records" in settings.LOGGING["handlers"]["console"]["filters"]


def test_tracing_spans_hold_no_content(api, runner_on_fake_gemini, telemetry):
    token = _full_flow(api)
    text = telemetry.text()
    assert "call_llm" in text or "generate_content" in text  # spans were recorded
    assert find_in_text(text, fixture_markers() + [MESSAGE_MARKER, token]) == []


def test_tracing_would_record_content_without_our_setting(telemetry):
    """Control: with content capture on, the same scan finds the resume in the spans."""
    service = InMemorySessionService()
    runner = Runner(app_name=APP_NAME, agent=build_agent(_fake_gemini()), session_service=service)

    async def turn():
        session = await service.create_session(app_name=APP_NAME, user_id="u", state={"resume_text": fixture_resume()})
        config = RunConfig(telemetry=TelemetryConfig(capture_message_content=ContentCapturingMode.SPAN_ONLY))
        message = types.Content(role="user", parts=[types.Part(text="plan")])
        async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message, run_config=config):
            pass

    asyncio.run(turn())
    assert find_in_text(telemetry.text(), fixture_markers()) != []


def test_debug_error_page_hides_resume_and_token(api, settings, creating_fails):
    settings.DEBUG = True
    creating_fails(RuntimeError("forced failure"))
    response = api.post(
        "/agent/sessions",
        {"resume_text": fixture_resume()},
        format="json",
        HTTP_X_SESSION_TOKEN="tok-" + MESSAGE_MARKER.encode().hex(),
    )
    assert response.status_code == 500
    page = response.content.decode()
    assert "forced failure" in page and "********************" in page
    assert find_in_text(page, fixture_markers() + [MESSAGE_MARKER.encode().hex()]) == []


def test_unexpected_error_without_debug_is_json_and_logs_no_message(api, settings, creating_fails, caplog):
    settings.DEBUG = False
    creating_fails(RuntimeError(f"failure quoting {MESSAGE_MARKER}"))
    with caplog.at_level(logging.DEBUG):
        response = api.post("/agent/sessions", {"resume_text": fixture_resume()}, format="json")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "伺服器發生錯誤，資料沒有遺失，請稍後再試"}
    # One line naming the exception's type, then where it happened, frame by frame.
    [logged] = [r.getMessage() for r in caplog.records if r.name == "sessions_app.api.errors"]
    head, *frames = logged.splitlines()
    assert head == "unhandled RuntimeError in API view"
    assert frames and all(line.startswith(("  File ", "    ")) for line in frames)
    assert frames[-2].endswith("in failing_token")
    assert find_in_text(caplog.text + response.content.decode(), fixture_markers() + [MESSAGE_MARKER]) == []


# --- LOG_FORMAT=json: the console handler as configured, over a whole run --------------------


def _console_handler(stream: io.StringIO, log_format: str, filtered: bool = True) -> logging.Handler:
    """settings.LOGGING's console handler writing to `stream`: its filters in order (none when not
    `filtered`, the control) and its formatter in `log_format`."""
    handler = logging.StreamHandler(stream)
    handler.setLevel(logging.DEBUG)
    for name in settings.LOGGING["handlers"]["console"]["filters"] if filtered else ():
        handler.addFilter(import_string(settings.LOGGING["filters"][name]["()"])())
    formatter = settings.LOGGING["formatters"]["json" if log_format == "json" else "plain"]
    handler.setFormatter(
        import_string(formatter["()"])() if "()" in formatter else logging.Formatter(formatter["format"])
    )
    return handler


@pytest.fixture
def json_console(captured_logs):
    """(as settings' console handler writes it in JSON, the same without its filters): every logger
    at DEBUG (captured_logs); the unfiltered control sees each record before the filters rewrite it."""
    configured, unfiltered = io.StringIO(), io.StringIO()
    handlers = [_console_handler(unfiltered, "json", filtered=False), _console_handler(configured, "json")]
    root = logging.getLogger()
    root.handlers.insert(0, handlers[0])
    root.addHandler(handlers[1])
    yield configured, unfiltered
    for handler in handlers:
        root.removeHandler(handler)


@pytest.fixture(params=["wsgi", "asgi"])
def any_client(request, api):
    """The test client (Django's WSGI-like handler) and Django's ASGI handler (AsyncClient)."""
    return api if request.param == "wsgi" else ASGIClient()


def test_json_logs_are_one_object_per_line_with_the_request_id_and_nothing_private(
    any_client, runner_on_fake_gemini, json_console, creating_fails, settings
):
    settings.DEBUG = False
    configured, unfiltered = json_console
    client = any_client
    created = client.post(
        "/agent/sessions", {"resume_text": fixture_resume()}, format="json", HTTP_X_REQUEST_ID="create-1.A_b"
    )
    session_id, token = created.json()["session_id"], created.json()["token"]
    url = f"/agent/sessions/{session_id}"
    forged = 'x\n{"level": "ERROR", "message": "forged"}'
    turn = client.post(
        f"{url}/messages",
        {"message": f"請幫我規劃求職 {MESSAGE_MARKER}"},
        format="json",
        HTTP_X_SESSION_TOKEN=token,
        HTTP_X_REQUEST_ID=forged,
    )
    missing = client.get(f"{url}/nope", HTTP_X_SESSION_TOKEN=token)
    deleted = client.delete(url, HTTP_X_SESSION_TOKEN=token, HTTP_X_REQUEST_ID="d" * 65)
    creating_fails(RuntimeError(f"failure quoting {MESSAGE_MARKER}"))
    failed = client.post("/agent/sessions", {"resume_text": fixture_resume()}, format="json")
    answers = {"create": created, "turn": turn, "404": missing, "delete": deleted, "500": failed}
    assert [answer.status_code for answer in answers.values()] == [201, 200, 404, 204, 500]
    ids = {name: answer.headers["X-Request-ID"] for name, answer in answers.items()}
    assert ids["create"] == "create-1.A_b"  # a well-formed id is kept
    assert all(WELL_FORMED.fullmatch(value) for value in ids.values())
    assert len(set(ids.values())) == len(ids)  # the forged and the over-long ones replaced, each anew

    lines = [json.loads(line) for line in configured.getvalue().splitlines()]
    assert lines and all(isinstance(line, dict) for line in lines)
    assert "forged" not in configured.getvalue()
    by_request = {name: [line for line in lines if line.get("request_id") == value] for name, value in ids.items()}
    assert {line["request_id"] for line in lines if "request_id" in line} <= set(ids.values())
    assert any(line["message"].startswith("Not Found: /agent/sessions/~") for line in by_request["404"])
    assert any(line["message"].startswith("unhandled RuntimeError in API view") for line in by_request["500"])
    assert any("record redacted" in line["message"] for line in by_request["turn"])  # the model's records

    secrets = fixture_markers() + [MESSAGE_MARKER, token, session_id]
    assert find_in_text(configured.getvalue(), secrets) == []
    # Control: without the handler's filters the same run's JSON holds the resume and the session id.
    assert find_in_text(unfiltered.getvalue(), fixture_markers()) != []
    assert session_id in unfiltered.getvalue()
