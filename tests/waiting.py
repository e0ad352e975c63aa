"""Waiting for a state instead of for a fixed time: poll a condition until it holds or a deadline passes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout: float, interval: float = 0.05) -> T:
    """Calls `condition` every `interval` seconds until it returns something true, and returns
    that; after `timeout` seconds, its last (false) answer. A condition may fail the test at
    once by raising (e.g. `assert process.poll() is None`: the server it waits for has died)."""
    deadline = time.monotonic() + timeout
    while not (answer := condition()) and time.monotonic() < deadline:
        time.sleep(interval)
    return answer


async def wait_until_async(condition: Callable[[], T], timeout: float, interval: float = 0.05) -> T:
    """`wait_until` on an event loop, which runs its other tasks while this one waits."""
    deadline = time.monotonic() + timeout
    while not (answer := condition()) and time.monotonic() < deadline:
        await asyncio.sleep(interval)
    return answer
