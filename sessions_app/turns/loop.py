"""One long-lived event loop per process, where every turn's Runner runs.

A sync view used to run each turn in `async_to_sync`, which makes a new event
loop per call. ADK's Gemini model caches its google-genai client (and its
connection pool) on the loop it was first used on, so every turn built a new
client, and the previous one's `aclose()` later ran on a closed loop ("Event
loop is closed", logged by asyncio). Here the loop lives as long as the
process, in one daemon thread, so clients and connections live across turns
under runserver, gunicorn and the test server alike.

A caller on another event loop (an ASGI server's) awaits a turn with `Running.finished()`,
holding no thread while the model thinks.

The coroutine runs with a copy of the caller's context variables (the token
in `crypto.token_context`, say). It must not touch the database: that thread
has no request's connection or transaction. A turn reads what it needs before
(`TurnSlot.take` reads the session) and writes after (`TurnSlot.keep`).

After a fork (gunicorn's workers) the child starts its own loop on first use:
threads do not survive a fork.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_THREAD_NAME = "agent-event-loop"
_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_loop_pid: int | None = None


def _start() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    started = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(started.set)
        loop.run_forever()

    threading.Thread(target=serve, name=_THREAD_NAME, daemon=True).start()
    started.wait()
    return loop


def process_loop() -> asyncio.AbstractEventLoop:
    """This process's loop, started on first use (again in a forked child)."""
    global _loop, _loop_pid
    with _lock:
        if _loop is None or _loop_pid != os.getpid() or _loop.is_closed():
            _loop, _loop_pid = _start(), os.getpid()
        return _loop


class Running:
    """A coroutine running on the process's loop, seen from a sync thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, T]):
        self._loop = loop
        self._future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._task: asyncio.Task | None = None
        context = contextvars.copy_context()

        def start() -> None:
            if self._future.cancelled():  # cancelled before it started
                coroutine.close()
                return
            self._task = loop.create_task(coroutine, context=context)
            self._task.add_done_callback(self._settle)

        loop.call_soon_threadsafe(start)

    def _settle(self, task: asyncio.Task) -> None:
        if self._future.done():
            return
        if task.cancelled():
            self._future.cancel()
        elif task.exception() is not None:
            self._future.set_exception(task.exception())
        else:
            self._future.set_result(task.result())

    def done(self) -> bool:
        return self._future.done()

    def add_done_callback(self, callback: Callable[[concurrent.futures.Future], None]) -> None:
        """`callback(future)` once it is done (at once if it is), in the thread that finished it."""
        self._future.add_done_callback(callback)

    async def finished(self) -> None:
        """Waits until it is done (result, exception or cancelled), on the caller's own event loop
        and without a thread: an asynchronous view awaits the model this way."""
        waited = asyncio.wrap_future(self._future)
        # Its outcome is read from `result()`: marked as seen, or asyncio would log an exception
        # "never retrieved" (with its text) when the copy is collected.
        waited.add_done_callback(lambda future: future.cancelled() or future.exception())
        await asyncio.wait([waited])

    def result(self, timeout: float | None = None) -> T:
        """Waits for the result (or raises its exception); TimeoutError if not done in `timeout`."""
        return self._future.result(timeout)

    def cancel(self) -> None:
        """Stops the coroutine at its next await (a disconnected client's turn, say)."""
        self._future.cancel()
        self._loop.call_soon_threadsafe(lambda: self._task is not None and self._task.cancel())


def submit(coroutine: Coroutine[Any, Any, T]) -> Running:
    """Starts `coroutine` on the process's loop with a copy of the caller's context variables.

    Call it from a sync thread, never from the loop's own thread (waiting there would wait for itself)."""
    if threading.current_thread().name == _THREAD_NAME:
        raise RuntimeError("event_loop.submit() called on the loop's own thread")
    return Running(process_loop(), coroutine)


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Runs `coroutine` on the process's loop and waits for its result (or exception)."""
    return submit(coroutine).result()
