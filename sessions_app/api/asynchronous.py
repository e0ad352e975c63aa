"""DRF's dispatch, awaited: an API view whose handlers are coroutines.

DRF has no asynchronous views. This is its `APIView.dispatch` step for step (initialize the
request; authentication, permissions, throttles and content negotiation in `initial`; the
handler; `handle_exception`; `finalize_response`), built from those public methods, with the
handler awaited and every step that may reach the database run in a thread
(`sync_to_async`, the request's own thread, so the request keeps one connection). Django calls
a view whose handlers are all coroutines on the server's event loop (ASGI, `make run`), or in an
event loop of its own under runserver and the test client. tests/infra/test_framework_internals.py fails
when DRF's dispatch takes a step this one does not.

(adrf does the same, but replaces DRF's Request with its own and runs its own permission
checks; this keeps DRF's.)
"""

from __future__ import annotations

import inspect

from asgiref.sync import sync_to_async
from rest_framework.views import APIView


class AwaitingAPIView(APIView):
    async def dispatch(self, request, *args, **kwargs):
        self.args, self.kwargs = args, kwargs
        request = self.initialize_request(request, *args, **kwargs)
        self.request = request
        self.headers = self.default_response_headers
        try:
            await sync_to_async(self.initial)(request, *args, **kwargs)
            method = request.method.lower()
            handler = getattr(self, method, None) if method in self.http_method_names else None
            response = (handler or self.http_method_not_allowed)(request, *args, **kwargs)
            if inspect.isawaitable(response):
                response = await response
        except Exception as exc:
            response = await sync_to_async(self.handle_exception)(exc)
        self.response = self.finalize_response(request, response, *args, **kwargs)
        return self.response
