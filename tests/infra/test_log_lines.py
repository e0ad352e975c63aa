"""What a log line may say of a request (sessions_app/infra/log_lines.py), and the settings that
keep a body in memory. The same, against a real server: tests/serving/test_bare_server.py."""

import logging

import pytest
from django.conf import settings
from django.http import HttpResponse
from django.test import RequestFactory
from django.utils.log import log_response

from sessions_app.infra.log_lines import LoggableRequestRecords, escaped, loggable, loggable_path, short_form

SESSION_ID = "0b3cbe4c-5d9e-4a53-9d43-7c4d1a2c9b11"


@pytest.mark.parametrize(
    "character, written",
    [
        ("\n", "\\x0a"),
        ("\r", "\\x0d"),
        ("\x1b", "\\x1b"),
        ("\x00", "\\x00"),
        ("\x85", "\\x85"),
        ("\\", "\\x5c"),
        ("\u2028", "\\u2028"),
        ("\u202e", "\\u202e"),
        ("\U000e0041", "\\U000e0041"),
    ],
)
def test_non_printable_characters_are_escaped(character, written):
    assert escaped(f"a{character}b") == f"a{written}b"


def test_printable_text_is_kept():
    assert escaped("/agent/sessions 林語晴 é") == "/agent/sessions 林語晴 é"


@pytest.mark.parametrize(
    "path, expected",
    [
        (f"/agent/sessions/{SESSION_ID}", f"/agent/sessions/{short_form(SESSION_ID)}"),
        (f"/agent/sessions/{SESSION_ID}/export", f"/agent/sessions/{short_form(SESSION_ID)}/export"),
        ("/deletions/" + "ab" * 32, "/deletions/" + short_form("ab" * 32)),
        ("/deletions/checkpoint", "/deletions/checkpoint"),
        ("/deletions/consistency", "/deletions/consistency"),
        ("/deletions/checkpoint-not", "/deletions/" + short_form("checkpoint-not")),
        ("/agent/sessions", "/agent/sessions"),
        ("/admin/login/", "/admin/login/"),
    ],
)
def test_paths_name_no_session_and_no_receipt(path, expected):
    assert loggable_path(path) == expected


def test_a_segment_with_spaces_and_controls_is_shortened_whole():
    path = "/agent/sessions/\n127.0.0.1 - - forged\x1b[2J/export"
    assert loggable_path(path) == f"/agent/sessions/{short_form(path.split('/')[3])}/export"


def test_the_short_form_is_8_hex_digits_of_sha256():
    assert short_form("abc") == "~ba7816bf"


def _django_request_record(path: str, status: int = 404) -> logging.LogRecord:
    """The record Django's log_response writes for `path`, caught before any handler."""
    records = []

    class Catch(logging.Handler):
        def emit(self, record):
            records.append(record)

    logger = logging.getLogger("django.request")
    handler = Catch()
    logger.addHandler(handler)
    logger.propagate = False  # the console handler's filter would rewrite it first
    try:
        request = RequestFactory().get(path)
        log_response("%s: %s", "Not Found", request.path, response=HttpResponse(status=status), request=request)
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    return records[0]


def test_djangos_not_found_warning_names_no_session():
    record = _django_request_record(f"/agent/sessions/{SESSION_ID}/plan")
    assert SESSION_ID in record.getMessage()  # control
    LoggableRequestRecords().filter(record)
    assert record.getMessage() == f"Not Found: /agent/sessions/{short_form(SESSION_ID)}/plan"


def test_djangos_warning_of_a_forged_path_is_one_line_with_the_same_short_form():
    record = _django_request_record("/agent/sessions/%0A127.0.0.1 - - forged%1B[2J%00x/export")
    LoggableRequestRecords().filter(record)
    forged = "\n127.0.0.1 - - forged\x1b[2J\x00x"
    assert record.getMessage() == f"Not Found: /agent/sessions/{short_form(forged)}/export"


def test_a_refused_host_is_one_warning_line_without_traceback():
    try:
        raise ValueError("stand-in")
    except ValueError as exc:
        error = exc
    record = logging.getLogger("django.security.DisallowedHost").makeRecord(
        "django.security.DisallowedHost",
        logging.ERROR,
        __file__,
        1,
        "Invalid HTTP_HOST header: %r.",
        ("evil\x1b[2J",),
        (type(error), error, error.__traceback__),
    )
    LoggableRequestRecords().filter(record)
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert "\x1b" not in record.getMessage()


def test_a_record_is_rewritten_once_whatever_the_handlers():
    record = _django_request_record(f"/agent/sessions/{SESSION_ID}")
    LoggableRequestRecords().filter(record)
    LoggableRequestRecords().filter(record)
    assert record.getMessage() == f"Not Found: /agent/sessions/{short_form(SESSION_ID)}"


def test_other_records_pass_untouched():
    record = logging.getLogger("sessions_app.x").makeRecord(
        "sessions_app.x", logging.INFO, __file__, 1, "a\nb", (), None
    )
    LoggableRequestRecords().filter(record)
    assert record.getMessage() == "a\nb"


def test_loggable_text_shortens_a_quoted_path():
    assert loggable(f'"GET /agent/sessions/{SESSION_ID}/export HTTP/1.1"') == (
        f'"GET /agent/sessions/{short_form(SESSION_ID)}/export HTTP/1.1"'
    )


def test_a_body_the_guard_lets_through_stays_in_memory():
    """Django's ASGI handler spools a body past FILE_UPLOAD_MAX_MEMORY_SIZE to a temporary file:
    the guard's limit is no larger, so nothing that passes reaches the disk; uploads only in memory."""
    assert settings.FILE_UPLOAD_MAX_MEMORY_SIZE >= settings.REQUEST_MAX_BODY_BYTES
    assert settings.FILE_UPLOAD_MAX_MEMORY_SIZE >= settings.UPLOAD_MAX_BODY_BYTES  # a resume file (issue 46)
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE >= settings.API_MAX_BODY_BYTES
    assert settings.REQUEST_MAX_BODY_BYTES >= settings.API_MAX_BODY_BYTES
    assert settings.FILE_UPLOAD_HANDLERS == ["django.core.files.uploadhandler.MemoryFileUploadHandler"]
    # The largest legitimate body: every character of the longest resume JSON-escaped (\uXXXX).
    assert len('{"resume_text": ""}') + 6 * settings.RESUME_MAX_CHARS <= settings.API_MAX_BODY_BYTES
