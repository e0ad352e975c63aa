"""Counters in the default cache, atomic across every process and server that shares it: what the
API's rate limits count requests with, and what bounds the turns a client has in flight.

Each is `cache.add(key, 0)` then `cache.incr(key)`, both atomic in our SQLite cache (one statement
each, sessions_app.infra.cache) and in Redis; the default cache is one file under var/, shared by
every gunicorn worker of the machine, and with CACHE_URL one Redis shared by every server.
"""

from __future__ import annotations

import contextlib
import time

from django.core.cache import cache


def increment(key: str, timeout: float) -> int:
    """Adds one to `key` (made at 0 for `timeout` seconds if absent) and gives its new value."""
    for _ in range(3):
        cache.add(key, 0, timeout)
        try:
            return cache.incr(key)
        except ValueError:  # removed between the two (a cache clear): start it again
            continue
    return 1  # the cache keeps losing the key: count this one alone rather than fail the request


class HeldCounts:
    """How many of something are held at once per key (turns in flight per client), at most
    `bound`, with no holder's count kept past two `lifetime`s.

    A holder that never releases (a worker killed mid-turn) must not keep its count forever, and a
    counter whose expiry every new holder pushed back would never expire for an active key. So a
    holder counts itself in the counter of the current `lifetime`-long window, which expires after
    the next one; the held count is the current window's plus the previous one's. A holder is
    counted for at least one lifetime (the longest a holder lives; one that lives longer stops being
    counted early), at most two, and a release after its counter expired changes nothing.

    Never more than `bound` holders at once, however many take at the same moment: each adds itself
    first, then reads, and gives its place back when the sum is over the bound (the last of any
    `bound + 1` holders to read would have seen them all).
    """

    def __init__(self, prefix: str, lifetime: float):
        self.prefix, self.lifetime = prefix, lifetime

    def take(self, key: str, bound: int) -> str | None:
        """The counter to release later, or None when `key` already has `bound` holders."""
        window = int(time.time() // self.lifetime)
        counter = f"{self.prefix}:{key}:{window}"
        held = increment(counter, 2 * self.lifetime + 1) + (cache.get(f"{self.prefix}:{key}:{window - 1}") or 0)
        if held > bound:
            self.release(counter)
            return None
        return counter

    @staticmethod
    def release(counter: str) -> None:
        # Expired (a holder that outlived its count): nothing is counted for it any more.
        with contextlib.suppress(ValueError):
            cache.decr(counter)
