"""Bad input gets a clear 4xx JSON answer, never a 500, and never costs stored data."""

import io
import json
from types import SimpleNamespace

import pytest
from rest_framework.exceptions import ParseError

from sessions_app.api.parsers import BodyTooLarge, LimitedJSONParser
from tests.support.session_client import messages_path, say

pytestmark = pytest.mark.django_db

BAD_TEXT_VALUES = [
    ("empty", ""),
    ("whitespace only", "   \n\t "),
    ("number", 42),
    ("list", ["a"]),
    ("object", {"text": "a"}),
    ("null", None),
    ("bool", True),
    ("NUL byte", "Lin\x00Yu"),
]


@pytest.mark.parametrize("name,value", BAD_TEXT_VALUES, ids=[name for name, _ in BAD_TEXT_VALUES])
def test_bad_resume_text_is_a_field_error(api, name, value):
    response = api.post("/agent/sessions", {"resume_text": value}, format="json")
    assert response.status_code == 400
    assert "resume_text" in response.json()


def test_missing_field_and_wrong_body_shapes(api):
    assert "resume_text" in api.post("/agent/sessions", {}, format="json").json()
    for body in ("[]", '"text"', "3"):
        response = api.post("/agent/sessions", body, content_type="application/json")
        assert response.status_code == 400, body
        assert response["Content-Type"] == "application/json"


def test_invalid_json_is_400_json(api):
    response = api.post("/agent/sessions", '{"resume_text": "Lin', content_type="application/json")
    assert response.status_code == 400
    assert "detail" in response.json()


def test_wrong_content_type_is_415_json(api):
    response = api.post("/agent/sessions", "resume_text=Lin", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert "detail" in response.json()


def test_text_over_the_limit_is_a_field_error(api, settings):
    response = api.post("/agent/sessions", {"resume_text": "字" * (settings.RESUME_MAX_CHARS + 1)}, format="json")
    assert response.status_code == 400
    assert "resume_text" in response.json()
    at_limit = api.post("/agent/sessions", {"resume_text": "字" * settings.RESUME_MAX_CHARS}, format="json")
    assert at_limit.status_code == 201


def test_body_over_the_size_limit_is_413(api, settings):
    body = json.dumps({"resume_text": "a" * (settings.API_MAX_BODY_BYTES + 10)})
    response = api.post("/agent/sessions", body, content_type="application/json")
    assert response.status_code == 413
    assert "detail" in response.json()


def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_read(settings):
    """The parser refuses on the Content-Length header alone: a client announcing a huge body
    is never read. (Through the test client Django has read the body already; so, the parser.)"""

    class Unreadable(io.RawIOBase):
        def read(self, size=-1):
            raise AssertionError("the body was read")

    request = SimpleNamespace(META={"CONTENT_LENGTH": str(settings.API_MAX_BODY_BYTES + 1)})
    with pytest.raises(BodyTooLarge):
        LimitedJSONParser().parse(Unreadable(), "application/json", {"request": request})


class _CountingStream(io.BytesIO):
    """A body that records how much the parser asked for."""

    def read(self, size=-1):
        self.asked = size
        return super().read(size)


def _json_of_size(size: int) -> bytes:
    return b'{"resume_text": "' + b"a" * (size - 19) + b'"}'


def test_a_body_of_exactly_the_limit_parses_and_one_byte_more_does_not(settings):
    settings.API_MAX_BODY_BYTES = limit = 1000
    at_limit = {"request": SimpleNamespace(META={"CONTENT_LENGTH": str(limit)})}
    assert len(LimitedJSONParser().parse(io.BytesIO(_json_of_size(limit)), None, at_limit)["resume_text"]) == 981
    over = _CountingStream(_json_of_size(limit + 1))
    with pytest.raises(BodyTooLarge):
        LimitedJSONParser().parse(over, None, {"request": SimpleNamespace(META={})})
    assert over.asked == limit + 1  # never more than one byte past the limit, whatever is sent


def test_a_body_is_read_in_the_charset_its_content_type_declares(api):
    """DRF passes the declared charset on in the parser's context: a Latin-1 body keeps its ë."""
    body = json.dumps({"resume_text": "Zoë Lin, data analyst"}, ensure_ascii=False).encode("latin-1")
    response = api.post("/agent/sessions", body, content_type="application/json; charset=iso-8859-1")
    assert response.status_code == 201, response.content
    context = {"request": SimpleNamespace(META={}), "encoding": "iso-8859-1"}
    assert LimitedJSONParser().parse(io.BytesIO(body), None, context) == {"resume_text": "Zoë Lin, data analyst"}


def test_no_body_at_all_is_a_parse_error_not_a_crash():
    with pytest.raises(ParseError):
        LimitedJSONParser().parse(None, None, {"request": SimpleNamespace(META={})})


def _after_a_first_turn(api, new_session) -> tuple[str, str, dict, dict]:
    """A session after one turn: its id, its messages' URL, its token's header, and its messages then."""
    session_id, token = new_session()
    url = messages_path(session_id)
    headers = {"HTTP_X_SESSION_TOKEN": token}
    assert say(api, session_id, token, "first").status_code == 200
    return session_id, url, headers, api.get(url, **headers).json()


def test_bad_messages_keep_the_conversation(api, new_session):
    _, url, headers, before = _after_a_first_turn(api, new_session)
    for value in ["", "  ", None, 7, ["x"], "a\x00b", "x" * 5000]:
        response = api.post(url, {"message": value}, format="json", **headers)
        assert response.status_code == 400, value
        assert "message" in response.json()
    assert api.post(url, "{not json", content_type="application/json", **headers).status_code == 400
    assert api.get(url, **headers).json() == before


def test_session_creation_is_throttled_per_client(api, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"session_create": "2/min"}}
    for _ in range(2):
        assert api.post("/agent/sessions", {"resume_text": "Lin"}, format="json").status_code == 201
    throttled = api.post("/agent/sessions", {"resume_text": "Lin"}, format="json")
    assert throttled.status_code == 429
    assert "detail" in throttled.json()
    assert int(throttled["Retry-After"]) > 0
    # Another client address has its own budget.
    other = api.post("/agent/sessions", {"resume_text": "Lin"}, format="json", REMOTE_ADDR="10.9.8.7")
    assert other.status_code == 201


def test_openapi_schema_declares_the_token_header(api):
    response = api.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = response.json()
    assert {"/agent/sessions", "/agent/sessions/{session_id}/messages"} <= set(schema["paths"])
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            token = [p for p in operation.get("parameters", []) if p["name"] == "X-Session-Token"]
            if path.startswith("/agent/account"):
                # The passkey accounts (docs/ACCOUNTS.md): their own token, a header too; keeping a
                # session also proves the session's token, in its header.
                account = [p for p in operation.get("parameters", []) if p["name"] == "X-Account-Token"]
                public = path.startswith(("/agent/account/registration", "/agent/account/sign-in"))
                assert bool(account) != (public or path.endswith("/recovery-sign-in")), (method, path)
                assert all(p["in"] == "header" and p["required"] for p in account + token), (method, path)
                assert bool(token) == ((path, method) == ("/agent/account/sessions", "post")), (method, path)
                assert {"query", "cookie"}.isdisjoint(p["in"] for p in operation.get("parameters", []))
            elif "{session_id}" in path:
                assert token and token[0]["in"] == "header" and token[0]["required"], (method, path)
                assert {"query", "cookie"}.isdisjoint(p["in"] for p in operation.get("parameters", []))
            else:
                assert not token, (method, path)
    assert api.get("/api/docs/").status_code == api.get("/api/docs/try/").status_code == 200


def test_openapi_schema_declares_what_the_server_refuses_before_any_view(api):
    """The ASGI guard answers 413 on any operation (a GET's body too) and 408 where a body is read;
    Django's handler400 a Host not allowed (tests/serving/test_bare_server.py sends each)."""
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            statuses = set(operation["responses"])
            assert {"400", "413"} <= statuses, (method, path)
            assert ("408" in statuses) == ("requestBody" in operation), (method, path)


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


# Bodies a client could send by mistake or on purpose: all a 4xx JSON answer, never a 500.
MALFORMED_BODIES = {
    "[ x 100,000": b"[" * 100_000,
    '{"a": x 50,000': b'{"a":' * 50_000,
    '{"a": x 100,000 (over the size limit)': b'{"a":' * 100_000,
    "1,000 valid levels beside the text": b'{"TEXT_FIELD": "Lin", "extra": ' + _nested(1000) + b"}",
    "33 valid levels beside the text": b'{"TEXT_FIELD": "Lin", "extra": ' + _nested(32) + b"}",
    "invalid UTF-8": b'{"TEXT_FIELD": "Lin\xff\xfe"}',
    "UTF-16": '{"TEXT_FIELD": "Lin"}'.encode("utf-16"),
    "lone surrogate": b'{"TEXT_FIELD": "Lin \\ud800"}',
    "huge number as the text": b'{"TEXT_FIELD": 1e999999}',
    "huge integer beside the text": b'{"TEXT_FIELD": "Lin", "n": ' + b"9" * 5000 + b"}",
    "NaN": b'{"TEXT_FIELD": NaN}',
    "-Infinity beside the text": b'{"TEXT_FIELD": "Lin", "n": -Infinity}',
    "NUL byte": b"\x00",
    "trailing garbage": b'{"TEXT_FIELD": "Lin"} x',
    "10 MB string": b'{"TEXT_FIELD": "' + b"a" * 10_000_000 + b'"}',
}


def _post_each_malformed_body(api, url: str, field: str, **headers) -> None:
    api.raise_request_exception = False
    for name, body in MALFORMED_BODIES.items():
        response = api.post(
            url, body.replace(b"TEXT_FIELD", field.encode()), content_type="application/json", **headers
        )
        assert 400 <= response.status_code < 500, (name, response.status_code)
        assert response["Content-Type"] == "application/json", name
        assert response.json(), name


def test_malformed_bodies_on_create_are_4xx_json(api):
    from sessions_app.models import AgentSession

    _post_each_malformed_body(api, "/agent/sessions", "resume_text")
    assert AgentSession.objects.count() == 0


def test_malformed_bodies_on_messages_are_4xx_json_and_keep_the_conversation(api, new_session):
    session_id, url, headers, before = _after_a_first_turn(api, new_session)
    _post_each_malformed_body(api, url, "message", **headers)
    assert api.get(f"/agent/sessions/{session_id}", **headers).status_code == 200
    assert api.get(url, **headers).json() == before


@pytest.mark.parametrize(
    "body",
    [b"[" * 100_000, _nested(1000), b'{"resume_text": "Lin", "x": ' + _nested(33) + b"}"],
    ids=["unclosed", "1,000 levels", "34 levels beside the text"],
)
def test_deep_nesting_is_400_with_a_clear_message(api, body):
    response = api.post("/agent/sessions", body, content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"detail": "JSON 巢狀層數太多：最多 32 層"}


def test_nesting_within_the_limit_is_accepted(api):
    body = b'{"resume_text": "Lin", "x": ' + _nested(31) + b"}"
    assert api.post("/agent/sessions", body, content_type="application/json").status_code == 201


# Each answered 500 after seconds to a minute of CPU (a RecursionError in the screen, once per
# comment opener), or took 22.6 s per create and again per turn (issue 27).
HOSTILE_RESUMES = {
    "comment openers": "<!--" * 12_500,
    "jinja comment openers": "{#" * 2_000,
    "openers then text": "<!--" * 300 + "a" * 48_800,
}


@pytest.mark.parametrize("resume", HOSTILE_RESUMES.values(), ids=HOSTILE_RESUMES.keys())
def test_a_resume_of_unclosed_comment_openers_is_a_session_like_any_other(api, resume):
    created = api.post("/agent/sessions", {"resume_text": resume}, format="json")
    assert created.status_code == 201
    session_id, token = created.json()["session_id"], created.json()["token"]
    turn = api.post(
        f"/agent/sessions/{session_id}/messages", {"message": "Hi"}, format="json", HTTP_X_SESSION_TOKEN=token
    )
    assert turn.status_code == 200
