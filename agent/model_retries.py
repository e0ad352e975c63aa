"""Retrying a failed Gemini call: backoff with jitter, the model's own Retry-After, the turn's deadline.

google-genai's own retry options know nothing of the wait the model asks for (a `Retry-After`
header, or the `RetryInfo` detail of a Google error) nor of the turn's deadline. `RetryingGemini`
is ADK's Gemini class with the retries done here instead: a call that fails with a status worth
another attempt, before any answer came, is tried again after the model's wait when it gave one,
else after a doubling delay with jitter, as long as the wait ends before the turn's deadline
(`turn_deadline`, set by whoever runs the turn). A wait that would not fit gives up at once, so
the caller's Retry-After stays what the model said.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import random
import re
from collections.abc import AsyncGenerator, Callable

from google.adk.models.google_llm import Gemini
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import errors as genai_errors

# Statuses worth another attempt: the model's quota (429) and its servers' failures.
RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
MAX_DELAY_SECONDS = 8.0
_RETRY_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")  # google.rpc.RetryInfo's retryDelay, e.g. "17s"

# Told of each call tried again, with the status that failed (the service counts them:
# sessions_app/turns/runner.py).
retry_listeners: list[Callable[[int], None]] = []

# The running loop's time by which the turn must end (None: no deadline).
turn_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("turn_deadline", default=None)


def requested_wait(exc: genai_errors.APIError) -> float | None:
    """Seconds the model asked us to wait: its Retry-After header (seconds), else the RetryInfo
    detail of a Google error; None when it said nothing readable."""
    headers = getattr(exc.response, "headers", None) or {}
    header = str(headers.get("retry-after") or "").strip()
    if header.isdigit():
        return float(header)
    details = exc.details.get("error", {}).get("details", []) if isinstance(exc.details, dict) else []
    for detail in details if isinstance(details, list) else []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            match = _RETRY_DELAY.match(str(detail.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


def whole_seconds(seconds: float) -> int:
    return max(1, math.ceil(seconds))


class RetryingGemini(Gemini):
    """ADK's Gemini, retrying failed calls as the module docstring says (`attempts` in all)."""

    attempts: int = 3
    initial_delay: float = 1.0

    def backoff(self, attempt: int) -> float:
        """The wait after failed attempt `attempt` (1, 2, ...): doubling, capped, with full jitter."""
        return random.uniform(0, min(MAX_DELAY_SECONDS, self.initial_delay * 2 ** (attempt - 1)))

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        attempt = 1
        while True:
            answered = False
            try:
                async for response in super().generate_content_async(llm_request, stream):
                    answered = True
                    yield response
                return
            except genai_errors.APIError as exc:
                if answered or attempt >= self.attempts or exc.code not in RETRIED_STATUSES:
                    raise
                wait = requested_wait(exc)
                wait = self.backoff(attempt) if wait is None else wait
                deadline = turn_deadline.get()
                if deadline is not None and asyncio.get_running_loop().time() + wait >= deadline:
                    raise
                for listener in retry_listeners:
                    listener(exc.code)
                await asyncio.sleep(wait)
                attempt += 1
