"""The process's one event loop for the Runner (sessions_app.turns.loop)."""

import asyncio
import contextvars
import threading

import pytest

from sessions_app.turns import loop as event_loop

pytestmark = pytest.mark.backend_independent

_caller_value = contextvars.ContextVar("caller_value", default=None)


async def _what_the_loop_sees():
    return asyncio.get_running_loop(), threading.current_thread().name, _caller_value.get()


def test_every_call_runs_on_the_same_loop_with_the_callers_context():
    _caller_value.set("token of this request")
    first_loop, thread, value = event_loop.run(_what_the_loop_sees())
    second_loop, *_ = event_loop.run(_what_the_loop_sees())
    assert first_loop is second_loop and not first_loop.is_closed()
    assert thread != threading.current_thread().name
    assert value == "token of this request"


def test_calls_from_several_threads_share_the_loop():
    loops = []
    threads = [
        threading.Thread(target=lambda: loops.append(event_loop.run(_what_the_loop_sees())[0])) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(loops) == 4 and len({id(loop) for loop in loops}) == 1


def test_an_exception_reaches_the_caller():
    async def fails():
        raise ValueError("from the loop")

    with pytest.raises(ValueError, match="from the loop"):
        event_loop.run(fails())


def test_a_forked_child_starts_a_loop_of_its_own(monkeypatch):
    parent = event_loop.process_loop()
    monkeypatch.setattr(event_loop.os, "getpid", lambda: -1)  # as after a fork: another pid
    child = event_loop.process_loop()
    assert child is not parent and child.is_running()
