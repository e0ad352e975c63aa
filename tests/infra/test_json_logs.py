"""LOG_FORMAT=json (sessions_app/infra/json_logs.py) and the request's id (request_id.py): one
JSON object per line, every field in its redacted or loggable form, the id of the request on it.
A whole run through the settings' handler: tests/privacy/test_leaks.py; the settings themselves:
tests/config/test_settings.py."""

import asyncio
import contextvars
import datetime as dt
import io
import json
import logging

import pytest

from sessions_app.api.asgi_guard import ServerGuard
from sessions_app.infra.json_logs import JsonLines
from sessions_app.infra.log_lines import short_form
from sessions_app.infra.redaction import RedactLibraryRecords
from sessions_app.infra.request_id import REQUEST_ID, WELL_FORMED, current_request_id, request_id_from
from tests.infra.test_log_redaction import _genai_error
from tests.support.logs import access_logger, exc_info_of
from tests.support.privacy import find_in_text

MARKER = "日誌標記-Brightwater"
SESSION_ID = "0b3cbe4c-5d9e-4a53-9d43-7c4d1a2c9b11"


def _record(name: str, message: str = "plain %s", args=("text",), exc=None, **extra) -> logging.LogRecord:
    return logging.getLogger(name).makeRecord(
        name, logging.WARNING, __file__, 1, message, args, exc_info_of(exc), extra=extra
    )


def _line(record: logging.LogRecord, *filters: logging.Filter) -> dict:
    for each in filters:
        each.filter(record)
    text = JsonLines().format(record)
    assert "\n" not in text and text.isascii()
    return json.loads(text)


class _Shown:
    """An object whose text is whatever its repr says (as Django's request names its path)."""

    def __repr__(self):
        return f"<request /agent/sessions/{SESSION_ID} {MARKER}>"


def test_a_line_is_one_ascii_object_with_the_fields_named():
    line = _line(_record("sessions_app.x", "two\nlines %s", (MARKER,)))
    assert list(line) == ["time", "level", "logger", "message"]
    assert (line["level"], line["logger"], line["message"]) == ("WARNING", "sessions_app.x", f"two\nlines {MARKER}")
    assert dt.datetime.strptime(line["time"], "%Y-%m-%dT%H:%M:%S.%fZ")


def test_extra_fields_keep_scalars_in_their_loggable_form_and_drop_objects():
    record = _record(
        "sessions_app.x",
        status_code=404,
        path=f"/agent/sessions/{SESSION_ID}/export\x1b[2J",
        request=_Shown(),
        params=(MARKER,),
        content_redacted=False,
    )
    line = _line(record)
    assert line["status_code"] == 404
    assert line["path"] == f"/agent/sessions/{short_form(SESSION_ID)}/export\\x1b[2J"
    assert "request" not in line and "params" not in line and "content_redacted" not in line
    assert SESSION_ID not in json.dumps(line) and find_in_text(json.dumps(line), [MARKER]) == []


def test_a_redacted_library_record_keeps_no_extra_field_and_no_traceback():
    record = _record("google_adk.google.adk.models", "prompt %s", (MARKER,), exc=_genai_error(503), prompt=MARKER)
    control = JsonLines().format(_record("google_adk.x", "%s", (MARKER,), prompt=MARKER))
    assert find_in_text(control, [MARKER]) != []  # without the filter, message and extra hold it
    line = _line(record, RedactLibraryRecords())
    assert line == {
        "time": line["time"],
        "level": "WARNING",
        "logger": "google_adk.google.adk.models",
        "message": "google_adk.google.adk.models record redacted: ServerError 503",
    }


def test_our_tracebacks_and_stacks_are_fields_of_the_same_line():
    record = _record("sessions_app.x", exc=ValueError("ours"))
    record.stack_info = "Stack (most recent call last):\n  here"
    line = _line(record)
    assert line["exc_info"].startswith("Traceback (most recent call last):") and "ValueError: ours" in line["exc_info"]
    assert line["stack_info"].endswith("here")


def test_the_request_id_of_the_context_is_on_the_line():
    assert "request_id" not in _line(_record("sessions_app.x"))

    def in_a_request():
        REQUEST_ID.set("abc-1")
        return _line(_record("sessions_app.x", request_id="forged\n"))

    assert contextvars.copy_context().run(in_a_request)["request_id"] == "abc-1"


@pytest.mark.parametrize("sent", ["a", "A.b_c-9", "x" * 64, "550e8400-e29b-41d4-a716-446655440000"])
def test_a_well_formed_request_id_is_kept(sent):
    assert request_id_from(sent) == sent


@pytest.mark.parametrize(
    "sent", [None, "", "x" * 65, "a b", "a\nb", 'a"b', "a,b", "林", "a\x1b[2J", "../etc", "a;b"], ids=repr
)
def test_any_other_request_id_is_replaced_by_a_new_random_one(sent):
    made = request_id_from(sent)
    assert made != sent and WELL_FORMED.fullmatch(made) and made != request_id_from(sent)


# --- the ASGI guard in front of Django ---------------------------------------------------------


def _through_guard(headers: list[tuple[bytes, bytes]]):
    seen, sent = {}, []

    async def app(scope, receive, send):
        seen["headers"] = [value for name, value in scope["headers"] if name == b"x-request-id"]
        seen["context"] = REQUEST_ID.get()

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/agent/sessions", "headers": headers}
    asyncio.run(ServerGuard(app)(scope, receive, send))
    return seen, sent


def test_the_guard_hands_django_one_well_formed_id_and_sets_it_for_its_own_lines():
    seen, _ = _through_guard([(b"x-request-id", b"kept-1")])
    assert seen == {"headers": [b"kept-1"], "context": "kept-1"}
    seen, _ = _through_guard([(b"x-request-id", b"a b"), (b"x-request-id", b"c")])
    [made] = seen["headers"]
    assert WELL_FORMED.fullmatch(made.decode()) and seen["context"] == made.decode()


def test_the_guards_own_refusal_carries_the_id(settings):
    length = str(settings.REQUEST_MAX_BODY_BYTES + 1).encode()
    _, sent = _through_guard([(b"content-length", length), (b"x-request-id", b"refused-1")])
    assert sent[0]["status"] == 413 and (b"x-request-id", b"refused-1") in sent[0]["headers"]


# --- gunicorn's access line ----------------------------------------------------------------------


def test_the_access_line_in_json_has_each_value_loggable_and_the_request_id():
    lines = io.StringIO()
    logger = access_logger(lines)
    logger.lines_as_json()

    class Answer:
        status, sent, headers = "404 Not Found", 16, []

    path = f"/agent/sessions/{SESSION_ID}/x\n"
    environ = {
        "PATH_INFO": path,
        "RAW_URI": path + "?token=secret",
        "REQUEST_METHOD": "GET",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "::1",
        "HTTP_USER_AGENT": "agent\x1b[2J",
    }

    def in_a_request():
        REQUEST_ID.set("access-1")
        logger.access(Answer(), [], environ, dt.timedelta(milliseconds=3))

    contextvars.copy_context().run(in_a_request)
    [line] = [json.loads(text) for text in lines.getvalue().splitlines()]
    shortened = f"/agent/sessions/{short_form(SESSION_ID)}/x\\x0a"
    assert line["logger"] == "gunicorn.access" and line["request_id"] == "access-1"
    assert (line["method"], line["path"], line["status"], line["user_agent"]) == (
        "GET",
        shortened,
        404,
        "agent\\x1b[2J",
    )
    assert line["message"] == f"GET {shortened} 404" and (line["duration_ms"], line["bytes"]) == (3, 16)
    assert "secret" not in lines.getvalue() and SESSION_ID not in lines.getvalue()


@pytest.mark.django_db
def test_every_answer_has_an_id_and_none_is_left_behind_in_the_thread(api):
    answers = [api.get("/healthz"), api.get("/agent/sessions/nope"), api.post("/agent/sessions", {}, format="json")]
    assert [answer.status_code for answer in answers] == [200, 401, 400]
    assert all(WELL_FORMED.fullmatch(answer.headers["X-Request-ID"]) for answer in answers)
    assert current_request_id() is None  # the WSGI thread's id ends with its request
