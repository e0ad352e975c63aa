"""How the API answers errors: JSON always, one identical 404 for every miss."""

import json
import logging
import traceback

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from ..crypto import DecryptionFailed
from ..integrity import record_failure
from ..repository import SessionMissing
from ..sealing import IntegrityCheckFailed
from ..turns import ModelFailure, SessionLimitReached, TurnInProgress
from .middleware import forbid_storing
from .parsers import BodyTooLarge

logger = logging.getLogger(__name__)


class SessionNotFound(exceptions.NotFound):
    """Missing, someone else's, expired, deleted or malformed: the caller can't tell which."""


def session_not_found_response() -> HttpResponse:
    """The one 404 answer, byte for byte the same whatever the reason.

    Built here rather than by DRF's renderer so that the API views and the
    project's 404 handler (paths no view matches) send the same bytes.
    """
    body = json.dumps({"detail": _("找不到這個 session，可能已過期或被刪除")}, ensure_ascii=False)
    # Marked here too, not only under /agent/: every 404 sends the same headers.
    return forbid_storing(HttpResponse(body.encode("utf-8"), status=404, content_type="application/json"))


_UPSTREAM = gettext_noop("模型服務暫時無法使用，請稍後再試；這次的訊息沒有被保存")
# A model failure's reason (turns.ModelFailure): its status and message.
_MODEL_FAILURE_ANSWERS = {
    "timeout": (504, gettext_noop("模型回應逾時，請稍後再試；這次的訊息沒有被保存")),
    "quota": (503, gettext_noop("模型服務目前額度不足，請稍後再試；這次的訊息沒有被保存")),
    "unavailable": (503, _UPSTREAM),
    "upstream": (502, _UPSTREAM),
    "bad_response": (502, gettext_noop("模型回應無法處理，請再試一次；這次的訊息沒有被保存")),
    "llm_calls_limit": (
        502,
        gettext_noop("模型在這一輪呼叫工具的次數超過上限，已停止；這次的訊息沒有被保存，請換個說法再試"),
    ),
}

# A full session takes no more turns: the client can export it and start a new one.
_SESSION_LIMIT_ANSWERS = {
    "turns": ("session_turn_limit", gettext_noop("這個 session 的對話輪數已達上限，請匯出後開始新的 session")),
    "bytes": ("session_size_limit", gettext_noop("這個 session 儲存的內容已達上限，請匯出後開始新的 session")),
}


# A stored value that does not open with the caller's token (a wrong key, or
# altered or moved ciphertext) is a session the caller cannot have: the same
# 404, never a 500 and never garbled text. (No token in context at all,
# KeyUnavailable, is a bug of ours: a logged 500, below.)
_NOT_FOUND = (SessionNotFound, SessionMissing, Http404, exceptions.NotFound, DecryptionFailed)


def api_exception_handler(exc, context):
    if isinstance(exc, _NOT_FOUND):
        if isinstance(exc, IntegrityCheckFailed):
            record_failure(exc)  # one log line and one count; the caller sees only the 404
        return session_not_found_response()
    if isinstance(exc, TurnInProgress):
        return Response(
            {"detail": _("這個 session 正在處理上一則訊息，請等它完成後再送出")}, status=status.HTTP_409_CONFLICT
        )
    if isinstance(exc, SessionLimitReached):
        code, message = _SESSION_LIMIT_ANSWERS[exc.limit]
        return Response({"detail": _(message), "code": code}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, ModelFailure):
        status_code, message = _MODEL_FAILURE_ANSWERS[exc.reason]
        response = Response({"detail": _(message)}, status=status_code)
        if exc.retry_after:
            response["Retry-After"] = str(exc.retry_after)
        return response
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
        response = Response(
            {"detail": _("伺服器發生錯誤，資料沒有遺失，請稍後再試")}, status=status.HTTP_500_INTERNAL_SERVER_ERROR
        )
    return response
