"""A request's id: on every log record written while the request is served, and in its answer's
`X-Request-ID` header, so that an operator can find a client's report in the logs.

The id a client (or nginx, config/nginx/) sends in `X-Request-ID` is kept only when it is well
formed: 1 to 64 characters of `[A-Za-z0-9._-]`. Anything else (longer, a space, a quote, a control
character, a second header) is replaced by a new random id, so that no stranger writes text of
their own into a log line through it.

The id lives in a context variable: set first thing for each request (the ASGI guard in front of
Django, sessions_app/api/asgi_guard.py, then `RequestIdMiddleware`), it is seen by the code of the
request's task and by Django's threads (`sync_to_async` copies the context), and by no other
request (each has its own task under ASGI; under WSGI the end of a request clears it).
"""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.core.handlers.asgi import ASGIHandler
from django.core.signals import request_finished

HEADER = "X-Request-ID"
META_KEY = "HTTP_X_REQUEST_ID"
MAX_LENGTH = 64
WELL_FORMED = re.compile(rf"[A-Za-z0-9._-]{{1,{MAX_LENGTH}}}")

REQUEST_ID: ContextVar[str | None] = ContextVar("request_id", default=None)


def request_id_from(sent: str | None) -> str:
    """The id a request goes by: the one sent if it is well formed, else a new random one."""
    if sent is not None and WELL_FORMED.fullmatch(sent):
        return sent
    return uuid.uuid4().hex


def current_request_id() -> str | None:
    return REQUEST_ID.get()


class RequestIdMiddleware:
    """First in MIDDLEWARE: every answer Django gives carries the id, errors and the uniform 404
    included (each layer inside turns its exceptions into an answer before this one sees it).
    Sync and async (Django's documented form): under ASGI it runs on the event loop, in the
    request's own task, with no hand-off to a thread.

    The context variable is not reset when the answer leaves this middleware: Django logs a
    4xx or 5xx answer after the whole middleware chain has run, gunicorn writes the access line
    after that, and both belong to the request. Under WSGI the thread's id is cleared once the
    answer is closed (`request_finished`); not under ASGI, where Django closes it through
    asgiref's `sync_to_async`, which brings the change back into the task that then writes the
    access line (and the task ends with the request anyway)."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request):
        if iscoroutinefunction(self):
            return self._acall(request)
        self._begin(request)
        return self._end(request, self.get_response(request))

    async def _acall(self, request):
        self._begin(request)
        return self._end(request, await self.get_response(request))

    @staticmethod
    def _begin(request) -> None:
        request.request_id = request_id_from(request.META.get(META_KEY))
        REQUEST_ID.set(request.request_id)

    @staticmethod
    def _end(request, response):
        response[HEADER] = request.request_id
        return response


def _forget_request_id(sender, **kwargs):
    if not (isinstance(sender, type) and issubclass(sender, ASGIHandler)):
        REQUEST_ID.set(None)


request_finished.connect(_forget_request_id, dispatch_uid="sessions_app.infra.request_id")
