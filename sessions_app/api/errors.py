"""How the API answers errors: JSON always, one identical 404 for every miss."""

import json
import logging
import math
import traceback

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, OperationalError
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_cache_control, patch_vary_headers
from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext
from psycopg_pool import PoolTimeout
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from sessions_app import services
from sessions_app.api.parsers import BodyTooLarge
from sessions_app.exceptions import (
    CeremonyFailed,
    ClientTurnsBusy,
    LastWayIn,
    ModelFailure,
    ModelFailureReason,
    RecoveryRefused,
    SessionHeldElsewhere,
    SessionLimitReached,
    SessionMissing,
    TurnInProgress,
    TurnsBusy,
    UnknownPasskey,
)
from sessions_app.infra import metrics
from sessions_app.infra.disk_space import InsufficientStorage, is_disk_full
from sessions_app.security.crypto import DecryptionFailed
from sessions_app.security.sealing import IntegrityCheckFailed

logger = logging.getLogger(__name__)


def forbid_storing(response):
    """No cache may keep an answer of the session API (api/middleware.py says why)."""
    patch_cache_control(response, no_store=True)
    return response


class SessionNotFound(exceptions.NotFound):
    """Missing, someone else's, expired, deleted or malformed: the caller can't tell which."""


def session_not_found_body() -> dict:
    return {"detail": _("Session not found: it may have expired or been deleted.")}


def session_not_found_response() -> HttpResponse:
    """The one 404 answer, byte for byte the same whatever the reason.

    Built here rather than by DRF's renderer so that the API views and the
    project's 404 handler (paths no view matches) send the same bytes.
    """
    body = json.dumps(session_not_found_body(), ensure_ascii=False)
    # Marked here too, not only under /agent/: every 404 sends the same headers.
    return forbid_storing(HttpResponse(body.encode("utf-8"), status=404, content_type="application/json"))


# Paths whose misses are answered in JSON whoever asks: the session API (its one 404) and the
# other machine-read paths (the schema, the deletion log, its key).
SESSION_API_PREFIX = "/agent/"
JSON_PREFIXES = (SESSION_API_PREFIX, "/api/", "/deletions/", "/.well-known/")


def not_found_response(request) -> HttpResponse:
    """A path no view answers (Django's handler404; /metrics to a stranger): under /agent/ the
    session API's one 404, byte for byte; elsewhere an HTML page for a browser (its Accept prefers
    text/html) and a short JSON answer for anything else, as under the other API paths."""
    path = request.path_info
    if path.startswith(SESSION_API_PREFIX):
        return session_not_found_response()
    if not path.startswith(JSON_PREFIXES) and request.get_preferred_type(["application/json", "text/html"]) == (
        "text/html"
    ):
        response = render(request, "page/not_found.html", status=404)
    else:
        body = json.dumps({"detail": _("There is nothing at this address.")}, ensure_ascii=False)
        response = HttpResponse(body.encode("utf-8"), status=404, content_type="application/json")
    patch_vary_headers(response, ["Accept"])
    return response


def bad_request_response() -> HttpResponse:
    """What Django answers a request it refuses before any view (its handler400)."""
    body = json.dumps({"detail": _("This request could not be served: it is malformed.")}, ensure_ascii=False)
    return forbid_storing(HttpResponse(body.encode("utf-8"), status=400, content_type="application/json"))


_UPSTREAM = gettext_noop(
    "The model service is unavailable right now. Please try again later; this message was not saved."
)
# A model failure's reason (exceptions.ModelFailureReason): its status and message, for every reason.
_MODEL_FAILURE_ANSWERS: dict[ModelFailureReason, tuple[int, str]] = {
    ModelFailureReason.TIMEOUT: (
        504,
        gettext_noop("The model took too long to answer. Please try again later; this message was not saved."),
    ),
    ModelFailureReason.QUOTA: (
        503,
        gettext_noop("The model service is out of quota for now. Please try again later; this message was not saved."),
    ),
    ModelFailureReason.UNAVAILABLE: (503, _UPSTREAM),
    ModelFailureReason.UPSTREAM: (502, _UPSTREAM),
    ModelFailureReason.BAD_RESPONSE: (
        502,
        gettext_noop("The model's answer could not be used. Please try again; this message was not saved."),
    ),
    ModelFailureReason.LLM_CALLS_LIMIT: (
        502,
        gettext_noop(
            "The model called tools too many times in this turn and was stopped. This message was not saved;"
            " please rephrase it and try again."
        ),
    ),
    # The model ended the turn without an answer to show (turns/failures.py, without_answer).
    ModelFailureReason.BLOCKED: (
        422,
        gettext_noop("The model declined to answer this message. It was not saved; please rephrase it and try again."),
    ),
    ModelFailureReason.TRUNCATED: (
        502,
        gettext_noop(
            "The model's answer was cut off before any text. This message was not saved; please try again,"
            " perhaps with a shorter message."
        ),
    ),
    ModelFailureReason.EMPTY: (
        502,
        gettext_noop("The model gave an empty answer. This message was not saved; please try again."),
    ),
}

# A full session takes no more turns: the client can export it and start a new one.
_SESSION_LIMIT_ANSWERS = {
    "turns": (
        "session_turn_limit",
        gettext_noop("This session has reached its limit of turns. Export it and start a new session."),
    ),
    "bytes": (
        "session_size_limit",
        gettext_noop("This session has reached its storage limit. Export it and start a new session."),
    ),
}


# No room on the database's volume: 507 Insufficient Storage (RFC 4918), the same on every endpoint.
# `code` tells the two apart: refused before anything was written (under the headroom), or a write
# the database refused (its disk is full); either way nothing of the request was stored.
STORAGE_ANSWERS = {
    "storage_low": gettext_noop(
        "The service is short of storage space and takes no new content right now; nothing was saved."
        " Deleting a session still works. Please try again later."
    ),
    "storage_full": gettext_noop(
        "The service's storage is full; nothing of this request was saved. Deleting a session still works."
        " Please try again later."
    ),
}


# A resume file that cannot be read (agent/documents/): its code's message; 415 for a kind of file
# that is not read at all, 422 for a file of a kind read but not this one.
_FILE_ANSWERS = {
    "unsupported": gettext_noop(
        "This kind of file cannot be read. Send a PDF, a Word file (.docx), plain text or Markdown, or paste the text."
    ),
    "encrypted": gettext_noop("This PDF is protected by a password. Save a copy without one and send that."),
    "damaged": gettext_noop("This file is damaged and cannot be read. Nothing was saved."),
    "empty": gettext_noop(
        "No text was found in this file (a scanned page is a picture, not text). Paste the text instead."
    ),
    "too_many_pages": gettext_noop("This file has more pages than a resume has. Send the resume alone."),
    "too_complex": gettext_noop("This file is too large or too complex to read. Nothing was saved."),
    "too_slow": gettext_noop("This file took too long to read. Nothing was saved."),
    "too_long": gettext_noop("The text in this file is longer than a resume may be. Nothing was saved."),
}


def file_refused_response(code: str) -> Response:
    status_code = status.HTTP_415_UNSUPPORTED_MEDIA_TYPE if code == "unsupported" else 422
    return Response({"detail": _(_FILE_ANSWERS[code]), "code": f"file_{code}"}, status=status_code)


# The passkey accounts' refusals (sessions_app.exceptions): status, code and message.
_ACCOUNT_ANSWERS = {
    # 403, not 400: the request was well-formed (what a schema can say of it), the passkey's answer
    # or the code is what was refused.
    CeremonyFailed: (
        403,
        "passkey_refused",
        gettext_noop("The passkey's answer could not be verified, or it came too late. Please try again."),
    ),
    RecoveryRefused: (
        403,
        "recovery_refused",
        gettext_noop("This recovery code opens no account. Check it and try again."),
    ),
    SessionHeldElsewhere: (
        409,
        "session_in_another_account",
        gettext_noop("This session is already kept by another account."),
    ),
    LastWayIn: (
        409,
        "last_way_in",
        gettext_noop("This is your account's only way to sign in: add another passkey before removing this one."),
    ),
    UnknownPasskey: (400, "unknown_passkey", gettext_noop("A wrapped key names a passkey this account does not have.")),
}


def storage_full_response(code: str) -> Response:
    return Response({"detail": _(STORAGE_ANSWERS[code]), "code": code}, status=status.HTTP_507_INSUFFICIENT_STORAGE)


# A stored value that does not open with the caller's token (a wrong key, or
# altered or moved ciphertext) is a session the caller cannot have: the same
# 404, never a 500 and never garbled text. (No token in context at all,
# KeyUnavailable, is a bug of ours: a logged 500, below.)
_NOT_FOUND = (SessionNotFound, SessionMissing, Http404, exceptions.NotFound, DecryptionFailed)


def _view_name(context) -> str:
    view = context.get("view")  # DRF's context, or {} for a streamed turn's error
    return type(view).__name__ if view is not None else "?"


def wait_in_words(seconds: int) -> str:
    """How long until a refused client may try again, as a person says it: "in 40 seconds", "in
    about 47 minutes", "in about 3 hours" (rounded up, so never sooner than Retry-After)."""
    if seconds < 2 * 60:
        return ngettext("in %(count)s second", "in %(count)s seconds", seconds) % {"count": number_format(seconds)}
    if seconds < 2 * 60 * 60:
        minutes = math.ceil(seconds / 60)
        return ngettext("in about %(count)s minute", "in about %(count)s minutes", minutes) % {
            "count": number_format(minutes)
        }
    hours = math.ceil(seconds / 3600)
    return ngettext("in about %(count)s hour", "in about %(count)s hours", hours) % {
        "count": number_format(hours, force_grouping=True)
    }


_SERVER_ERROR = gettext_noop("Something went wrong on the server. No data was lost; please try again later.")


def api_exception_handler(exc, context):
    """DRF's EXCEPTION_HANDLER: the answer `exc` gets (`_answer`), the 404 as its one fixed answer."""
    response = _answer(exc, context)
    if response is not None and response.status_code == status.HTTP_404_NOT_FOUND:
        return session_not_found_response()
    return response


def error_answer(exc: Exception) -> tuple[int, dict]:
    """(status, body) of the answer `exc` gets, for a streamed turn's `error` event: the same
    status and JSON body as the answer the API gives when no stream has begun."""
    response = _answer(exc, {})
    if response is None:  # DEBUG: no debug page inside a stream
        return 500, {"detail": _(_SERVER_ERROR)}
    return response.status_code, dict(response.data)


BUSY_CAUSES = ("turns", "pool")  # the process's turns in flight; its PostgreSQL pool
for _cause in BUSY_CAUSES:
    metrics.BUSY_ANSWERS.labels(_cause)


def _busy(detail: str, cause: str) -> Response:
    metrics.BUSY_ANSWERS.labels(cause).inc()
    response = Response({"detail": detail, "code": "busy"}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
    response["Retry-After"] = str(TurnsBusy.retry_after)
    return response


def _answer(exc, context) -> Response | None:
    """The answer to `exc` (status, JSON body, headers); None: Django's debug page (DEBUG)."""
    if isinstance(exc, InsufficientStorage):
        return storage_full_response("storage_low")  # disk_space logged the one line
    if isinstance(exc, DatabaseError) and is_disk_full(exc):
        # One line, no message or traceback: neither says more than this, and a message may quote data.
        logger.error("database refused a write: disk full (%s in %s)", type(exc).__name__, _view_name(context))
        return storage_full_response("storage_full")
    if isinstance(exc, _NOT_FOUND):
        if isinstance(exc, IntegrityCheckFailed):
            services.integrity_failure_record(failure=exc)  # one log line and one count; the caller sees only the 404
        return Response(session_not_found_body(), status=status.HTTP_404_NOT_FOUND)
    for refusal, (status_code, code, message) in _ACCOUNT_ANSWERS.items():
        if isinstance(exc, refusal):
            return Response({"detail": _(message), "code": code}, status=status_code)
    if isinstance(exc, TurnInProgress):
        return Response(
            {
                "detail": _(
                    "This session is still answering the previous message. Wait until it is done, then send again."
                )
            },
            status=status.HTTP_409_CONFLICT,
        )
    if isinstance(exc, TurnsBusy):
        return _busy(
            _("The service is answering as many messages as it can right now. Please send it again soon."), "turns"
        )
    if isinstance(exc, ClientTurnsBusy):
        # A 429, not the 503: the client's own doing, and a 5xx would tell operators (and load
        # balancers that take a backend out on 5xx) that the server is failing.
        response = Response(
            {
                "detail": _(
                    "Too many messages from your network are being answered at once. Please send it again in a few"
                    " seconds."
                ),
                "code": "turns_in_flight",
            },
            status=status.HTTP_429_TOO_MANY_REQUESTS,
        )
        response["Retry-After"] = str(ClientTurnsBusy.retry_after)
        return response
    if isinstance(exc, OperationalError) and isinstance(exc.__cause__, PoolTimeout):
        # Every connection of the process's pool in use for the pool's timeout (PostgreSQL): a bound,
        # not an error of ours.
        return _busy(_("The service is busy right now; nothing was done. Please try again soon."), "pool")
    if isinstance(exc, SessionLimitReached):
        code, message = _SESSION_LIMIT_ANSWERS[exc.limit]
        return Response({"detail": _(message), "code": code}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, ModelFailure):
        status_code, message = _MODEL_FAILURE_ANSWERS[exc.reason]
        # `code` says what happened, in the same words in every language, for a client to act on.
        response = Response({"detail": _(message), "code": f"model_{exc.reason}"}, status=status_code)
        if exc.retry_after:
            response["Retry-After"] = str(exc.retry_after)
        return response
    if isinstance(exc, exceptions.Throttled):
        # DRF formats the wait into its message before translating it, so no catalogue can
        # translate DRF's; ours says when in words, in the client's language. Retry-After keeps
        # the exact seconds.
        wait = math.ceil(exc.wait or 1)
        exc = exceptions.Throttled(detail=_("Too many requests. Try again %(when)s.") % {"when": wait_in_words(wait)})
        exc.wait = wait  # DRF's handler turns it into Retry-After
    if isinstance(exc, RequestDataTooBig):
        # Django's own body limit (DATA_UPLOAD_MAX_MEMORY_SIZE), met when DRF
        # reads request.body before our parser sees it: the same 413.
        exc = BodyTooLarge()
    response = drf_exception_handler(exc, context)
    if response is None and settings.DEBUG:
        return None  # Django's debug page; the views mark what it must not show
    if response is None:
        # An unexpected error: answer JSON, log where it happened but not the
        # exception's message, which may quote a resume or a message.
        logger.error(
            "unhandled %s in API view\n%s", type(exc).__name__, "".join(traceback.format_tb(exc.__traceback__))
        )
        response = Response({"detail": _(_SERVER_ERROR)}, status=status.HTTP_500_INTERNAL_SERVER_ERROR)
    return response
