"""`make run`'s web worker: gunicorn's own ASGI worker with the bounds it lacks.

gunicorn's ASGI worker (27.0.1, read in its source) times out only an idle kept-alive
connection (--keep-alive) and a body chunk that does not come within --timeout; it counts
connections but never checks --worker-connections. So a new connection that sends nothing, or
half its headers, stayed open for ever, as did one whose client stopped reading a response
(its whole answer kept in memory); each worker accepted connections until the descriptors ran
out, and then every request hung, with nothing logged. Here, per connection:

- the request headers must arrive within SERVER_HEADER_TIMEOUT_SECONDS of the connection's
  opening (later requests on it: gunicorn's --keep-alive bounds the wait and the headers);
- a response that makes no progress for SERVER_SEND_TIMEOUT_SECONDS (the client reads none of
  it) drops the connection, and with it the buffered answer;
- past --worker-connections, a new connection is closed at once, with one warning line a
  burst (at most one each WARNING_INTERVAL seconds, with the count refused).

(The whole body's deadline and the body limit are the ASGI guard's,
sessions_app/api/asgi_guard.py: they answer a JSON error.) Only the asyncio Protocol's own
methods are extended: gunicorn has no setting for the protocol class, so `init_process` names
this one where gunicorn's worker looks it up (gunicorn is pinned; tests/serving/test_bare_server.py
fails if the bounds stop holding).
"""

import logging
import resource
import time

from django.conf import settings
from gunicorn.asgi.protocol import ASGIProtocol
from gunicorn.workers import gasgi

logger = logging.getLogger(__name__)

WARNING_INTERVAL = 10.0
# Descriptors a worker needs besides its connections: the database, logs, the agent's client.
SPARE_DESCRIPTORS = 200


class _RefusedConnections:
    """Counts connections refused at the cap; one warning line per WARNING_INTERVAL."""

    def __init__(self):
        self.count = 0
        self.last_warning = float("-inf")

    def refused(self, cap: int) -> None:
        self.count += 1
        now = time.monotonic()
        if now - self.last_warning >= WARNING_INTERVAL:
            logger.warning("connection refused: %d open, the cap (worker_connections); %d refused", cap, self.count)
            self.last_warning, self.count = now, 0


REFUSED = _RefusedConnections()


class BoundedProtocol(ASGIProtocol):
    def __init__(self, worker):
        super().__init__(worker)
        self.refused = False
        self.header_timer = None
        self.send_timer = None
        self.app = self._marking_headers_complete(self.app)

    def _marking_headers_complete(self, app):
        async def call(scope, receive, send):
            self._cancel("header_timer")  # gunicorn calls the app once the headers are whole
            return await app(scope, receive, send)

        return call

    def _cancel(self, name: str) -> None:
        timer = getattr(self, name)
        if timer is not None:
            timer.cancel()
            setattr(self, name, None)

    def _drop(self, reason: str) -> None:
        logger.debug("connection dropped: %s", reason)
        self.transport.abort()  # close() would wait, for ever, to flush what the client does not read

    def connection_made(self, transport):
        cap = self.worker.worker_connections
        if self.worker.nr_conns >= cap:
            self.refused = True
            REFUSED.refused(cap)
            transport.abort()
            return
        super().connection_made(transport)
        self.header_timer = self.worker.loop.call_later(
            settings.SERVER_HEADER_TIMEOUT_SECONDS, self._drop, "request headers not received in time"
        )

    def connection_lost(self, exc):
        if self.refused:
            return  # never counted
        self._cancel("header_timer")
        self._cancel("send_timer")
        super().connection_lost(exc)
        # A response waiting for the client to read goes on at once (and is dropped: the
        # connection is closed), instead of after gunicorn's grace period.
        super().resume_writing()

    def pause_writing(self):
        super().pause_writing()
        if self.send_timer is None:
            self.send_timer = self.worker.loop.call_later(
                settings.SERVER_SEND_TIMEOUT_SECONDS, self._drop, "the client read none of the response in time"
            )

    def resume_writing(self):
        self._cancel("send_timer")
        super().resume_writing()


class BoundedASGIWorker(gasgi.ASGIWorker):
    def init_process(self):
        gasgi.ASGIProtocol = BoundedProtocol  # the name gunicorn's worker builds each connection from
        if settings.LOG_FORMAT == "json" and hasattr(self.log, "lines_as_json"):
            self.log.lines_as_json()  # sessions_app/infra/access_log.py
        self._descriptors_for_connections()
        super().init_process()

    def _descriptors_for_connections(self) -> None:
        """Enough descriptors for the cap: at the limit, accept() fails and requests hang unlogged."""
        needed = self.cfg.worker_connections + SPARE_DESCRIPTORS
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < needed:
            raised = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            if raised < needed:
                logger.warning(
                    "%d descriptors allowed, fewer than worker_connections (%d) needs: lower it",
                    raised,
                    self.cfg.worker_connections,
                )
