"""Middleware whose hooks run on the server's event loop under ASGI.

Django's MiddlewareMixin, under ASGI, calls each `process_request` and `process_response` in a
thread (`sync_to_async`) and waits for it: with thirteen middleware that was about twenty hand-offs
to a thread and back for every request. With the four below (and ours) on the loop, a small
request costs less CPU (the figures: benchmarks/results/request_cost.md).

The hooks of the classes below only read the request and set headers, lazy objects or a language;
they never wait on a database, a file or the network, so under ASGI they are called on the loop
directly. A hook that did reach the database there would raise
Django's SynchronousOnlyOperation, not block the loop. Under WSGI (runserver) nothing changes.
`__acall__` is not documented: tests/infra/test_framework_internals.py fails when Django's changes.

Django's security, CSRF, clickjacking and session middleware keep their hand-offs: `check --deploy`
looks for exactly their import paths in MIDDLEWARE, and would no longer check HSTS, secure cookies
or CSRF settings behind a subclass.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.contrib.auth import middleware as auth
from django.contrib.messages import get_messages
from django.contrib.messages import middleware as messages
from django.middleware import common, locale


class HooksOnTheLoop:
    """A MiddlewareMixin whose hooks compute only: under ASGI, called inline, not from a thread."""

    async def __acall__(self, request):
        response = None
        if hasattr(self, "process_request"):
            response = self.process_request(request)
        response = response or await self.get_response(request)
        if hasattr(self, "process_response"):
            if self.response_may_wait(request):
                return await sync_to_async(self.process_response)(request, response)
            response = self.process_response(request, response)
        return response

    def response_may_wait(self, request) -> bool:
        return False


class LocaleMiddleware(HooksOnTheLoop, locale.LocaleMiddleware):
    pass


class CommonMiddleware(HooksOnTheLoop, common.CommonMiddleware):
    pass


class AuthenticationMiddleware(HooksOnTheLoop, auth.AuthenticationMiddleware):
    pass


class MessageMiddleware(HooksOnTheLoop, messages.MessageMiddleware):
    def response_may_wait(self, request) -> bool:
        storage = get_messages(request)
        return storage.used or storage.added_new  # stored in the session when the cookie is full
