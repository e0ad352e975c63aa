"""The ASGI layer in front of Django (config/asgi.py): what the bare server refuses before
Django reads a byte of the request.

Django's ASGIHandler reads the whole body into a file before any middleware or view runs (a
SpooledTemporaryFile, on disk past FILE_UPLOAD_MAX_MEMORY_SIZE), so the API's own 413 came
after the body had reached the disk. Here a body is refused while it streams:

- by its Content-Length, before any of it is read (the limit is REQUEST_MAX_BODY_BYTES, or
  UPLOAD_MAX_BODY_BYTES for a resume file posted to create a session);
- by counting, for a chunked body: the chunk that would pass the limit is never handed on, and
  Django, told the request was aborted, drops the little it holds (in memory: the settings
  keep FILE_UPLOAD_MAX_MEMORY_SIZE at this limit, config/settings/base.py).

A body that takes longer than SERVER_BODY_TIMEOUT_SECONDS to arrive is answered 408; an upload
the client abandons is logged as such (one warning line, and 499 in the access line: nothing
failed), not as the 500 gunicorn writes for "no response"; and a
WebSocket handshake (Django serves none; handed to it, it raised a 500 with a traceback) is
refused: the server answers it 403. Each refusal writes one warning line, never a traceback.
"""

import asyncio
import json
import logging

from django.conf import settings
from django.core.exceptions import RequestAborted
from django.http import HttpRequest
from django.utils import translation
from django.utils.translation import gettext_lazy

from sessions_app.api.parsers import BodyTooLarge
from sessions_app.infra.access_log import CLIENT_WENT_AWAY
from sessions_app.infra.request_id import REQUEST_ID, request_id_from

logger = logging.getLogger(__name__)

REQUEST_TIMEOUT_DETAIL = gettext_lazy("The request body took too long to arrive; nothing was done.")


class _Refused(Exception):
    """The body was refused while it streamed: the answer's status and detail."""

    def __init__(self, status: int, detail: str, reason: str):
        super().__init__(reason)
        self.status, self.detail, self.reason = status, detail, reason


_REQUEST_ID_HEADER = b"x-request-id"


def _with_request_id(scope) -> dict:
    """The scope with the request's id (request_id.py) as its one X-Request-ID header, so that
    Django's middleware keeps the same id; the id also set for this layer's own log lines."""
    sent = [value for name, value in scope.get("headers", ()) if name == _REQUEST_ID_HEADER]
    request_id = request_id_from(sent[0].decode("latin-1") if len(sent) == 1 else None)
    REQUEST_ID.set(request_id)
    headers = [(name, value) for name, value in scope.get("headers", ()) if name != _REQUEST_ID_HEADER]
    return {**scope, "headers": [*headers, (_REQUEST_ID_HEADER, request_id.encode("ascii"))]}


def _declared_length(scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None


UPLOAD_PATH = "/agent/sessions"  # the one request that may carry a file (docs/UPLOADS.md)


def body_limit(scope) -> int:
    """REQUEST_MAX_BODY_BYTES, or UPLOAD_MAX_BODY_BYTES for a form posted to create a session."""
    if scope["method"] == "POST" and scope["path"] == UPLOAD_PATH:
        for name, value in scope.get("headers", ()):
            if name == b"content-type" and value.lower().startswith(b"multipart/form-data"):
                return settings.UPLOAD_MAX_BODY_BYTES
    return settings.REQUEST_MAX_BODY_BYTES


def _language(scope) -> str:
    """The language the answer is in: Django's choice for these headers (LocaleMiddleware's)."""
    request = HttpRequest()
    for name, value in scope.get("headers", ()):
        if name == b"accept-language":
            request.META["HTTP_ACCEPT_LANGUAGE"] = value.decode("latin-1")
    return translation.get_language_from_request(request)


async def _answer(scope, send, refusal: _Refused) -> None:
    """A JSON error in the API's form ({"detail": ...}), in the client's language; the server
    closes the connection after it, since the body was not read to its end."""
    language = _language(scope)
    with translation.override(language):
        body = json.dumps({"detail": str(refusal.detail)}, ensure_ascii=False).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": refusal.status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"content-language", language.encode()),
                (b"vary", b"Accept-Language"),
                (b"cache-control", b"no-store"),
                (b"x-content-type-options", b"nosniff"),
                (b"connection", b"close"),
                (_REQUEST_ID_HEADER, (REQUEST_ID.get() or "").encode("ascii")),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyMeter:
    """The request's `receive`, counting the body: a chunk that would pass `limit`, or one that
    comes after the deadline, raises _Refused and is never handed on."""

    def __init__(self, receive, limit: int, timeout: float):
        self.receive, self.limit, self.timeout = receive, limit, timeout
        self.received = 0
        self.deadline = asyncio.get_running_loop().time() + timeout

    async def __call__(self):
        remaining = self.deadline - asyncio.get_running_loop().time()
        try:
            async with asyncio.timeout(max(remaining, 0)):
                message = await self.receive()
        except TimeoutError:
            raise _Refused(408, REQUEST_TIMEOUT_DETAIL, f"body not received in {self.timeout:g} s") from None
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.limit:
                raise _Refused(413, BodyTooLarge.default_detail, f"body over {self.limit} bytes (streamed)")
            if not message.get("more_body", False):
                # The body is whole: from here on the app only listens for a disconnect.
                self.deadline = float("inf")
        return message


class ServerGuard:
    """ASGI middleware around Django's application."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket":
            return await self._refuse_websocket(scope, receive, send)
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        scope = _with_request_id(scope)
        limit = body_limit(scope)
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            return await self._refuse(scope, send, _Refused(413, BodyTooLarge.default_detail, "Content-Length"))
        meter = BodyMeter(receive, limit, settings.SERVER_BODY_TIMEOUT_SECONDS)
        refusal, started = None, False
        CLIENT_WENT_AWAY.set(False)

        async def metered():
            nonlocal refusal
            try:
                message = await meter()
            except _Refused as refused:
                refusal = refused
                # Django's own "the client went away": it closes the body it holds and returns.
                raise RequestAborted() from None
            if message["type"] == "http.disconnect" and not started:
                CLIENT_WENT_AWAY.set(True)
            return message

        async def watched(message):
            nonlocal started
            started = True
            await send(message)

        await self.app(scope, metered, watched)
        if refusal is not None:
            await self._refuse(scope, send, refusal)
        elif CLIENT_WENT_AWAY.get() and not started:
            logger.warning("request aborted: %s, the client went away before its body was whole", scope["method"])

    @staticmethod
    async def _refuse(scope, send, refusal: _Refused) -> None:
        logger.warning("request refused: %s %d (%s)", scope["method"], refusal.status, refusal.reason)
        await _answer(scope, send, refusal)

    @staticmethod
    async def _refuse_websocket(scope, receive, send) -> None:
        message = await receive()
        if message["type"] == "websocket.connect":
            logger.warning("request refused: WebSocket handshake (this service serves none)")
            # Before an accept, a close is an HTTP 403 from the server (ASGI's WebSocket spec).
            await send({"type": "websocket.close", "code": 1008})
