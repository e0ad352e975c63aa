"""Text from the model libraries never reaches a log: not their DEBUG dumps,
not the message of a model error, not a traceback quoting it.

Each test also reads the raw control handler, which sees the records before
the filter rewrites them, so it can tell a protection from a quiet library.
"""

import asyncio
import gc
import logging

import httpx
import pytest
from django.conf import settings
from google.adk.models.google_llm import Gemini
from google.genai import Client
from google.genai import errors as genai_errors

from sessions_app.infra.redaction import CONTENT_LOGGING_LIBRARIES, RedactLibraryRecords
from tests.support.logs import exc_info_of
from tests.support.privacy import LOG_FORMATS, find_in_text

MARKER = "模型錯誤標記-Quillfeather"


def _genai_error(code: int = 503) -> genai_errors.APIError:
    cls = genai_errors.ServerError if code >= 500 else genai_errors.ClientError
    return cls(code, {"error": {"code": code, "message": f"upstream quoted {MARKER}", "status": "UNAVAILABLE"}})


def _format(record: logging.LogRecord) -> str:
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactLibraryRecords())
    return handler.format(record) if handler.filter(record) else ""


def _record(name: str, level: int, exc: BaseException | None = None, stack: bool = False) -> logging.LogRecord:
    return logging.getLogger(name).makeRecord(
        name,
        level,
        __file__,
        1,
        "request %s failed: %r",
        (MARKER, {"prompt": MARKER}),
        exc_info_of(exc),
        sinfo=f"Stack (most recent call last):\n  {MARKER}" if stack else None,
    )


LIBRARY_LOGGERS = [name for library in CONTENT_LOGGING_LIBRARIES for name in (library, f"{library}.sub.module")]


@pytest.mark.parametrize("name", LIBRARY_LOGGERS)
@pytest.mark.parametrize("level", [logging.INFO, logging.WARNING, logging.ERROR])
def test_library_records_keep_only_name_level_type_and_code(name, level):
    record = _record(name, level, _genai_error(503), stack=True)
    assert MARKER in logging.Formatter().format(_record(name, level, _genai_error(503)))  # control
    text = _format(record)
    assert find_in_text(text, [MARKER]) == []
    assert text == f"{logging.getLevelName(level)} {name}: {name} record redacted: ServerError 503"


@pytest.mark.parametrize("name", LIBRARY_LOGGERS)
def test_library_debug_records_are_dropped(name):
    assert _format(_record(name, logging.DEBUG)) == ""


def test_records_without_exception_keep_no_argument():
    text = _format(_record("google_adk.google.adk.runners", logging.INFO))
    assert text == "INFO google_adk.google.adk.runners: google_adk.google.adk.runners record redacted:"


@pytest.mark.parametrize("name", ["sessions_app.turns.service", "django.request", "django_q", ""])
def test_any_logger_carrying_a_library_exception_is_redacted(name):
    chained = RuntimeError(f"wrapper quoting {MARKER}")
    chained.__cause__ = _genai_error(429)
    assert find_in_text(_format(_record(name, logging.ERROR, _genai_error(429))), [MARKER]) == []
    assert find_in_text(_format(_record(name, logging.ERROR, chained)), [MARKER]) == []
    assert _format(_record(name, logging.ERROR, chained)).endswith("record redacted: RuntimeError")


def test_http_client_errors_keep_their_status_code():
    request = httpx.Request("POST", f"https://example.invalid/?q={MARKER}")
    error = httpx.HTTPStatusError(f"quoting {MARKER}", request=request, response=httpx.Response(502, request=request))
    text = _format(_record("httpx", logging.ERROR, error))
    assert text == "ERROR httpx: httpx record redacted: HTTPStatusError 502"


def test_asyncio_records_with_any_exception_are_redacted():
    assert find_in_text(_format(_record("asyncio", logging.ERROR, ValueError(MARKER))), [MARKER]) == []


def test_our_own_records_pass_untouched():
    """Control against over-redaction: our loggers never log content, and their text stays readable."""
    record = logging.getLogger("sessions_app.turns.service").makeRecord(
        "sessions_app.turns.service",
        logging.WARNING,
        __file__,
        1,
        "model turn failed: %s %s",
        ("ServerError", 503),
        None,
    )
    assert _format(record) == "WARNING sessions_app.turns.service: model turn failed: ServerError 503"


def test_settings_install_the_filter_on_the_console_handler():
    assert (
        settings.LOGGING["filters"]["redact_library_records"]["()"]
        == "sessions_app.infra.redaction.RedactLibraryRecords"
    )
    # First, so every other filter sees redacted records only (the second drops Django's own line of a 507).
    assert settings.LOGGING["handlers"]["console"]["filters"] == [
        "redact_library_records",
        "one_line_per_storage_refusal",
        "loggable_request_records",
    ]
    assert set(settings.LOGGING["loggers"]) == set(CONTENT_LOGGING_LIBRARIES)


@pytest.mark.parametrize("log_format", LOG_FORMATS)
def test_unretrieved_task_exception_is_redacted(captured_logs):
    """asyncio logs a failed task's exception repr in the message and its traceback."""
    protected, raw = captured_logs

    async def fail():
        raise _genai_error(503)

    async def main():
        task = asyncio.get_running_loop().create_task(fail())
        await asyncio.wait([task])  # it has failed (asyncio.wait does not retrieve its exception)
        del task
        gc.collect()

    asyncio.run(main())
    assert "Task exception was never retrieved" in raw.getvalue()
    assert find_in_text(raw.getvalue(), [MARKER]) != []  # control
    assert "asyncio record redacted: ServerError 503" in protected.getvalue()
    assert find_in_text(protected.getvalue(), [MARKER]) == []


# --- A real turn whose model fails with the marker in its error message ----------


def _failing_gemini(exc: Exception) -> Gemini:
    """ADK's real Gemini class whose google-genai transport raises `exc` (no network)."""
    client = Client(api_key="not-a-real-key")

    async def generate_content(*, model, contents, config=None):
        raise exc

    client.aio.models.generate_content = generate_content
    return Gemini(model="gemini-2.5-flash", client=client)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "error, status",
    [(_genai_error(503), 503), (_genai_error(429), 503), (_genai_error(400), 502), (RuntimeError(MARKER), 502)],
    ids=["server-error", "quota", "client-error", "plain-exception"],
)
@pytest.mark.parametrize("log_format", LOG_FORMATS)
def test_failed_turn_logs_no_model_error_text(api, new_session, turns_on, captured_logs, error, status):
    protected, raw = captured_logs
    turns_on(_failing_gemini(error))
    session_id, token = new_session()
    response = api.post(
        f"/agent/sessions/{session_id}/messages", {"message": "plan"}, format="json", HTTP_X_SESSION_TOKEN=token
    )
    assert response.status_code == status
    assert find_in_text(raw.getvalue(), [MARKER]) != []  # control: the library did log the text
    assert "google.adk.runners record redacted: " in protected.getvalue()
    assert find_in_text(protected.getvalue() + response.content.decode(), [MARKER]) == []


@pytest.mark.django_db
@pytest.mark.parametrize("log_format", LOG_FORMATS)
def test_failed_scripted_turn_logs_no_model_error_text(api, new_session, scripted_model, captured_logs):
    protected, raw = captured_logs
    scripted_model(_genai_error(503))
    session_id, token = new_session()
    response = api.post(
        f"/agent/sessions/{session_id}/messages", {"message": "plan"}, format="json", HTTP_X_SESSION_TOKEN=token
    )
    assert response.status_code == 503
    assert find_in_text(raw.getvalue(), [MARKER]) != []
    assert find_in_text(protected.getvalue(), [MARKER]) == []
