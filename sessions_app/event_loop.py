"""One long-lived event loop per process, where every turn's Runner runs.

A sync view used to run each turn in `async_to_sync`, which makes a new event
loop per call. ADK's Gemini model caches its google-genai client (and its
connection pool) on the loop it was first used on, so every turn built a new
client, and the previous one's `aclose()` later ran on a closed loop ("Event
loop is closed", logged by asyncio). Here the loop lives as long as the
process, in one daemon thread, so clients and connections live across turns
under runserver, gunicorn and the test server alike.

The coroutine runs with a copy of the caller's context variables (the token
in `crypto.token_context`, say). It must not touch the database: that thread
has no request's connection or transaction. A turn reads what it needs before
(`turns.run_turn` preloads the session) and writes after.

After a fork (gunicorn's workers) the child starts its own loop on first use:
threads do not survive a fork.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import os
import threading
from collections.abc import Coroutine
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


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Runs `coroutine` on the process's loop and waits for its result (or exception).

    Call it from a sync thread, never from the loop's own thread (it would wait for itself)."""
    loop = process_loop()
    if threading.current_thread().name == _THREAD_NAME:
        raise RuntimeError("event_loop.run() called on the loop's own thread")
    context = contextvars.copy_context()
    done: concurrent.futures.Future[T] = concurrent.futures.Future()

    def start() -> None:
        task = loop.create_task(coroutine, context=context)
        task.add_done_callback(lambda finished: _settle(done, finished))

    loop.call_soon_threadsafe(start)
    return done.result()


def _settle(done: concurrent.futures.Future, task: asyncio.Task) -> None:
    if task.cancelled():
        done.set_exception(concurrent.futures.CancelledError())
    elif task.exception() is not None:
        done.set_exception(task.exception())
    else:
        done.set_result(task.result())
