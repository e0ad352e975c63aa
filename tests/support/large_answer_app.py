"""A stand-in for config.asgi:application that answers every request with LARGE_ANSWER_BYTES, in
64 KB pieces as Django's ASGI handler sends a response: a response larger than the kernel's
socket buffers in no time (a session export that large takes half a minute to create), for the
send timeout of `make run`'s worker (tests/test_bare_server.py)."""

import os

SIZE = int(os.environ.get("LARGE_ANSWER_BYTES", str(8 * 1024 * 1024)))
PIECE = 64 * 1024


async def application(scope, receive, send):
    if scope["type"] != "http":
        return
    body = os.urandom(SIZE)  # a new answer each time, held until it is sent or dropped
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", str(SIZE).encode())]})
    for start in range(0, SIZE, PIECE):
        await send({"type": "http.response.body", "body": body[start : start + PIECE], "more_body": True})
    await send({"type": "http.response.body", "body": b""})
