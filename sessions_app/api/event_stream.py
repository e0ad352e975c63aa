"""A turn as Server-Sent Events: progress while it runs, then the verified reply.

`POST /agent/sessions/{id}/messages` with `Accept: text/event-stream` answers 200 with a stream
once the turn has started (before that, errors are the usual JSON answers with their status):

    event: progress    data: {"stage": "checking_claims", "count": 3, "label": "Checking 3 claims"}
    event: reply       data: the same body as the plain answer, after the turn is stored
    event: error       data: {"status": 502, "code": "model_bad_response", "detail": "..."}

Progress gives stages and counts only, never the model's text: no claim is shown before it
is verified. The turn is stored only after its reply is verified, just before the `reply`
event. A client that goes away is noticed when a write to it fails (a comment line is sent
every STREAM_HEARTBEAT_SECONDS while the model works): the model is stopped, the lock freed,
and nothing of the turn is stored.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import queue
from collections.abc import AsyncIterator, Iterator

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
from sessions_app.runtime.turns import StartedTurn

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
        case "reading":
            return _("Reading your resume and the conversation")
        case "thinking":
            return _("Thinking")
        case "checking_claims":
            count = stage["count"]
            return ngettext("Checking %(count)d claim", "Checking %(count)d claims", count) % {"count": count}
        case "saving_plan":
            return _("Saving plan v%(version)d") % {"version": stage["version"]}
        case "checking_reply":
            return _("Checking the reply against your resume")
        case "saving":
            return _("Saving this turn")
    return stage["stage"]


def _event(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n".encode()


def _progress(stage: dict) -> bytes:
    return _event("progress", {**stage, "label": _label(stage)})


_DONE = object()  # put after the last stage, when the model has finished


def _turn_events(turn: StartedTurn, stages: queue.SimpleQueue) -> Iterator[bytes]:
    try:
        turn.running.add_done_callback(lambda _: stages.put(_DONE))
        yield _progress({"stage": "reading"})
        while True:
            try:
                stage = stages.get(timeout=settings.STREAM_HEARTBEAT_SECONDS)
            except queue.Empty:
                yield b": working\n\n"  # a write that fails tells us the client has gone
                continue
            if stage is _DONE:
                break
            yield _progress(stage)
        try:
            yield _progress({"stage": "checking_reply"})
            result = turn.answer()
            yield _progress({"stage": "saving"})
            yield _event("reply", MessageResponse(turn.keep(result)).data)
        except Exception as exc:  # the turn failed after the stream began: the error as an event
            status, body = error_answer(exc)
            yield _event("error", {"status": status, **body})
    finally:
        turn.close()  # a turn not kept (an error, a client gone) leaves nothing behind


class RequestScope:
    """The request's context variables (its token) and language, for the steps of a streamed
    body: it is produced after the view has returned, outside the context the view ran in, and
    maybe in another thread (Django's language is kept per thread, so it is carried by name)."""

    def __init__(self):
        self.context, self.language = contextvars.copy_context(), translation.get_language()

    def run(self, step, *args):
        return self.context.run(self._speaking, step, *args)

    def _speaking(self, step, *args):
        with translation.override(self.language):
            return step(*args)


def _in_scope(scope: RequestScope, events: Iterator[bytes]) -> Iterator[bytes]:
    """Iterates `events` in the request's scope."""
    try:
        while True:
            try:
                yield scope.run(next, events)
            except StopIteration:
                return
    finally:
        scope.run(events.close)


async def _turn_events_served(turn: StartedTurn, stages: asyncio.Queue, scope: RequestScope) -> AsyncIterator[bytes]:
    """The events for an ASGI server, produced on its event loop: no thread waits while the model
    thinks. The turn's stages arrive in `stages` (put there from the turn's loop); the steps that
    reach the database (the answer, storing it, freeing the lock) run in the request's thread,
    all in the request's context (its token, its language)."""

    def in_thread(step):
        return sync_to_async(scope.run, thread_sensitive=True)(step)

    finished = asyncio.ensure_future(turn.running.finished())
    try:
        yield scope.run(_progress, {"stage": "reading"})
        while True:
            stage = asyncio.ensure_future(stages.get())
            done, _ = await asyncio.wait(
                {stage, finished}, timeout=settings.STREAM_HEARTBEAT_SECONDS, return_when=asyncio.FIRST_COMPLETED
            )
            if stage in done:
                yield scope.run(_progress, stage.result())
                continue
            stage.cancel()
            if finished in done and stages.empty():  # the stages come before the end: in order
                break
            if not done:
                yield b": working\n\n"  # a write that fails tells us the client has gone
        try:
            yield scope.run(_progress, {"stage": "checking_reply"})
            result = await in_thread(turn.answer)
            yield scope.run(_progress, {"stage": "saving"})
            kept = await in_thread(lambda: MessageResponse(turn.keep(result)).data)
            yield _event("reply", kept)
        except Exception as exc:  # the turn failed after the stream began: the error as an event
            status, body = await in_thread(functools.partial(error_answer, exc))
            yield _event("error", {"status": status, **body})
    finally:  # also when the client disconnects and the server cancels the response
        finished.cancel()
        await in_thread(turn.close)


def turn_stream(turn: StartedTurn, stages, asynchronous: bool) -> StreamingHttpResponse:
    """The turn as a streamed answer: over ASGI read on the server's loop (`stages` an asyncio
    queue), elsewhere (WSGI, the test client) a thread's iterator (`stages` a SimpleQueue)."""
    scope = RequestScope()
    events = _turn_events_served(turn, stages, scope) if asynchronous else _in_scope(scope, _turn_events(turn, stages))
    response = TurnStreamResponse(turn, events, content_type=f"{MEDIA_TYPE}; charset=utf-8")
    response["X-Accel-Buffering"] = "no"  # a proxy in front must pass each event on at once
    return response


class TurnStreamResponse(StreamingHttpResponse):
    """Closing the answer closes its turn too: a client that hangs up before the first event
    leaves no lock and no place among the turns in flight (the events' own `finally` never runs
    for a stream that never started). The server closes every answer it was given."""

    def __init__(self, turn: StartedTurn, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.turn = turn

    def close(self):
        try:
            self.turn.close()
        finally:
            super().close()
