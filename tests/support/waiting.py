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


def let_go_together(script: str, argument: str, env: dict, cwd, processes: int = 4) -> list[int]:
    """Starts `processes` Pythons running `script` with `argument`; each prints "ready", waits for
    "go" on its standard input, works, and prints a count as its last line. All are let go at once
    (a race, not one after another); returns their counts, each having exited 0."""
    import subprocess
    import sys

    started = [
        subprocess.Popen(
            [sys.executable, "-c", script, argument],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    assert [process.stdout.readline() for process in started] == ["ready\n"] * processes
    for process in started:
        process.stdin.write("go\n")
        process.stdin.flush()
    outputs = [process.communicate(timeout=120) for process in started]
    assert all(process.returncode == 0 for process in started), [err for _, err in outputs]
    return [int(out.strip().splitlines()[-1]) for out, _ in outputs]
