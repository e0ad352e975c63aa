"""Answers to different requests compared as the client sees them: "byte-identical" means the
status, the body and every header but those that are each request's own."""

from __future__ import annotations

# X-Request-ID: the request's own id (random where the client sent none,
# sessions_app/infra/request_id.py); it says nothing of what was asked or found.
REQUEST_ID_HEADER = "X-Request-ID"


def answer_headers(response, also: tuple[str, ...] = ()) -> dict:
    """The answer's headers but X-Request-ID (and `also`)."""
    return {key: value for key, value in response.headers.items() if key not in (REQUEST_ID_HEADER, *also)}


def comparable(response) -> tuple:
    """Status, headers and body, without X-Request-ID and Date (it moves with the clock)."""
    return response.status_code, answer_headers(response, also=("Date",)), response.content
