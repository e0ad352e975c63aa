"""Request threads kept between requests, under ASGI.

Django's ASGI handler runs each request in a `ThreadSensitiveContext` of its own: the request's
synchronous code (the middleware that keep their hand-off, sync views, signal receivers) runs on
one thread, made for that request and joined by yet another thread at its end, two threads started
and stopped a request. Whatever a thread keeps (the throttle cache's SQLite connection,
`sessions_app/infra/cache.py`) was opened again by every request.

Here each HTTP request takes a single-thread executor from a stack of idle ones (a new one when
none is idle) and enters asgiref's public `ThreadSensitiveContext(executor=...)` with it, so
Django's own context inside becomes a no-op; at the end of the request the executor goes back, or
is shut down when `keep` executors are idle already. Many requests at once (turns awaiting the
model hold their context, not a thread) still get a thread each, as before.

What this does not change: the request's database connection. Django keeps it per request
context, not per thread, and closes it at the request's end as before, so a turn still gives it
back before the model runs (PostgreSQL) and nothing of a request stays with the thread.
Threads do not survive a fork: a forked child starts with no idle executor.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext


class RequestThreads:
    """ASGI middleware: an HTTP request's thread-sensitive work runs on a thread kept for the next request."""

    def __init__(self, app, keep: int):
        self.app, self.keep = app, keep
        self._idle: list[ThreadPoolExecutor] = []
        self._pid = os.getpid()

    def idle(self) -> int:
        """Threads kept for the next requests now."""
        return len(self._idle) if self._pid == os.getpid() else 0

    def _take(self) -> ThreadPoolExecutor:
        if self._pid != os.getpid():  # a forked child: the parent's threads are not here
            self._idle, self._pid = [], os.getpid()
        if self._idle:
            return self._idle.pop()  # the one idle the shortest time
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix="request")

    def _give_back(self, executor: ThreadPoolExecutor) -> None:
        if len(self._idle) < self.keep and self._pid == os.getpid():
            self._idle.append(executor)
        else:
            executor.shutdown(wait=False)  # its thread ends once what it was given has run

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or self.keep <= 0:
            return await self.app(scope, receive, send)
        executor = self._take()
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.app(scope, receive, send)
        finally:
            self._give_back(executor)
