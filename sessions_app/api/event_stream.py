"""A turn as Server-Sent Events: progress and the reply's text while it runs, then the verified reply.

`POST /agent/sessions/{id}/messages` with `Accept: text/event-stream` answers 200 with a stream
once the turn has started (before that, errors are the usual JSON answers with their status):

    event: progress    data: {"stage": "checking_claims", "count": 3, "label": "Checking 3 claims"}
    event: text        data: {"text": "Here is ", "model_call": 2}
    event: reply       data: the same body as the plain answer, after the turn is stored
    event: error       data: {"status": 502, "code": "model_bad_response", "detail": "..."}

Progress gives stages and counts only. `text` events give the reply as the model writes it (ADK's
SSE streaming mode), each model call's draft in order: only what passed the guards' check
(agent/drafts.py), a draft whose claims are not yet verified. The `reply` event replaces it: the
whole reply, guarded and verified. The turn is stored only after its reply is verified, just
before the `reply` event. A client that goes away is noticed when a write to it fails (a comment line is sent
every STREAM_HEARTBEAT_SECONDS while the model works): the model is stopped, the lock freed,
and nothing of the turn is stored.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import functools
import json
import threading
from collections.abc import AsyncIterator

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import StreamingHttpResponse
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.mediatypes import media_type_matches, order_by_precedence

from sessions_app.api.errors import error_answer
from sessions_app.api.serializers import MessageResponse
from sessions_app.turns import service as turns
from sessions_app.turns.service import TurnSlot
from sessions_app.turns.stages import Stage

MEDIA_TYPE = "text/event-stream"


class JSONOrEventStream(DefaultContentNegotiation):
    """Content negotiation (DRF's `content_negotiation_class`) for sending a message: JSON, or the
    turn streamed. A client that asks for the stream is not refused (406) for accepting no JSON:
    the view answers it with a StreamingHttpResponse once the turn has started (`turn_stream`),
    and every answer before that, an error, is JSON whatever the client accepts."""

    def asks_for_stream(self, request) -> bool:
        """Whether the Accept header puts text/event-stream before application/json, in DRF's
        order (the more specific media types first; JSON on a tie)."""
        for media_types in order_by_precedence(self.get_accept_list(request)):
            if any(media_type_matches(JSONRenderer.media_type, accepted) for accepted in media_types):
                return False
            if any(media_type_matches(MEDIA_TYPE, accepted) for accepted in media_types):
                return True
        return False

    def select_renderer(self, request, renderers, format_suffix=None):
        if self.asks_for_stream(request):
            return renderers[0], renderers[0].media_type  # the view's renderer (JSON), for its errors
        return super().select_renderer(request, renderers, format_suffix)


def _label(stage: dict) -> str:
    match stage["stage"]:
        case Stage.READING:
            return _("Reading your resume and the conversation")
        case Stage.THINKING:
            return _("Thinking")
        case Stage.CHECKING_CLAIMS:
            count = stage["count"]
            return ngettext("Checking %(count)d claim", "Checking %(count)d claims", count) % {"count": count}
        case Stage.SAVING_PLAN:
            return _("Saving plan v%(version)d") % {"version": stage["version"]}
        case Stage.CHECKING_REPLY:
            return _("Checking the reply against your resume")
        case Stage.SAVING:
            return _("Saving this turn")
    return stage["stage"]


def _event(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n".encode()


def _progress(stage: dict) -> bytes:
    return _event("progress", {**stage, "label": _label(stage)})


def _reported(item: dict) -> bytes:
    """What the running turn reported: a piece of its text (TurnText), or a stage (TurnProgress)."""
    return _event("text", item) if "text" in item else _progress(item)


class Stages:
    """What a running turn reports (`report`, called on the turn's event loop), read by the stream
    on the loop that serves it (`next`): the server's under ASGI, the one Django makes to read a
    streamed body elsewhere (runserver, the test client). Bound to that loop on first read, so it
    holds no loop of the view's."""

    def __init__(self):
        self._kept: collections.deque[dict] = collections.deque()
        self._lock = threading.Lock()
        self._reader: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None

    def report(self, stage: dict) -> None:
        with self._lock:
            self._kept.append(stage)
            reader = self._reader
        if reader is not None:
            loop, arrived = reader
            loop.call_soon_threadsafe(arrived.set)

    def waiter(self) -> asyncio.Event:
        """Set whenever a stage arrives; the caller's loop is the one it wakes."""
        with self._lock:
            if self._reader is None:
                self._reader = (asyncio.get_running_loop(), asyncio.Event())
                if self._kept:
                    self._reader[1].set()
            return self._reader[1]

    def take(self) -> dict | None:
        with self._lock:
            return self._kept.popleft() if self._kept else None


class RequestScope:
    """The request's context variables (its token) and language, for the steps of a streamed
    body: it is produced after the view has returned, outside the context the view ran in
    (Django's language is kept per thread, so it is carried by name)."""

    def __init__(self):
        self.context, self.language = contextvars.copy_context(), translation.get_language()

    def run(self, step, *args):
        return self.context.run(self._speaking, step, *args)

    def _speaking(self, step, *args):
        with translation.override(self.language):
            return step(*args)


async def _turn_events(slot: TurnSlot, message: str, stages: Stages, scope: RequestScope) -> AsyncIterator[bytes]:
    """The events, produced on the serving event loop: no thread waits while the model thinks.
    The turn runs in the request's context (its token); its events are written in its language.
    The slot is freed when the events end, also when the client disconnects and the server
    cancels the response."""
    async with slot:
        turn = asyncio.create_task(turns.run(slot, message, stages.report), context=scope.context.copy())
        try:
            yield scope.run(_progress, {"stage": Stage.READING})
            arrived = stages.waiter()
            while True:
                arrived.clear()
                while (stage := stages.take()) is not None:
                    yield scope.run(_reported, stage)
                if turn.done():  # every stage was reported before the turn ended: all shown
                    break
                woken = asyncio.ensure_future(arrived.wait())
                done, _ = await asyncio.wait(
                    {woken, turn}, timeout=settings.STREAM_HEARTBEAT_SECONDS, return_when=asyncio.FIRST_COMPLETED
                )
                woken.cancel()
                if not done:
                    yield b": working\n\n"  # a write that fails tells us the client has gone
            try:
                yield _event("reply", MessageResponse(turn.result()).data)
            except Exception as exc:  # the turn failed after the stream began: the error as an event
                status, body = await sync_to_async(scope.run)(functools.partial(error_answer, exc))
                yield _event("error", {"status": status, **body})
        finally:
            turn.cancel()


def turn_stream(slot: TurnSlot, message: str) -> StreamingHttpResponse:
    """The taken `slot`'s turn of `message`, as a streamed answer read on the serving event loop."""
    stages = Stages()
    events = _turn_events(slot, message, stages, RequestScope())
    response = TurnStreamResponse(slot, events, content_type=f"{MEDIA_TYPE}; charset=utf-8")
    response["X-Accel-Buffering"] = "no"  # a proxy in front must pass each event on at once
    return response


class TurnStreamResponse(StreamingHttpResponse):
    """Closing the answer closes its turn too: a client that hangs up before the first event
    leaves no lock and no place among the turns in flight (the events' own `finally` never runs
    for a stream that never started). The server closes every answer it was given."""

    def __init__(self, slot: TurnSlot, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.slot = slot

    def close(self):
        try:
            self.slot.close()
        finally:
            super().close()
