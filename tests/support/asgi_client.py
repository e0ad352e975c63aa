"""Requests through Django's ASGI handler (its AsyncClient), as `make run` serves them, from a
synchronous test: each runs in `async_to_sync`, so the view's steps that reach the database run
in the test's thread, on its connection and inside its transaction.

`post`/`get`/`delete` take the test client's keywords (`HTTP_X_SESSION_TOKEN=...`,
`REMOTE_ADDR=...`); a streamed answer is read to its end on the loop that served it, and its
chunks are then the response's `streaming_content`. To act while a stream is still open, write
the steps as a coroutine on the `asgi` client and run them with `run(steps)`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TypeVar

from asgiref.sync import async_to_sync
from django.test import AsyncClient

T = TypeVar("T")


class ASGIClient:
    def __init__(self, address: str = "127.0.0.1"):
        self.address = address

    async def request(self, method: str, path: str, data=None, **extra):
        address = extra.pop("REMOTE_ADDR", self.address)
        headers = {name.removeprefix("HTTP_").replace("_", "-"): value for name, value in extra.items()}
        client = _AddressedClient(address)
        if method == "post":
            body = json.dumps(data) if data is not None else ""
            return await client.post(path, body, content_type="application/json", headers=headers)
        return await getattr(client, method)(path, headers=headers)

    def _read(self, method: str, path: str, data=None, **extra):
        async def whole():
            response = await self.request(method, path, data, **extra)
            if response.streaming:
                response.streaming_content = [chunk async for chunk in response.streaming_content]
            return response

        return async_to_sync(whole)()

    def post(self, path: str, data=None, format: str = "json", **extra):
        assert format == "json"
        return self._read("post", path, data, **extra)

    def get(self, path: str, **extra):
        return self._read("get", path, **extra)

    def delete(self, path: str, **extra):
        return self._read("delete", path, **extra)

    def opened(self, path: str, data=None, **extra):
        """The answer to a POST as the server has it before sending a byte: a stream not read."""
        return async_to_sync(self.request)("post", path, data, **extra)


class _AddressedClient(AsyncClient):
    """AsyncClient from `address` (the ASGI scope's client, which Django reads as REMOTE_ADDR)."""

    def __init__(self, address: str):
        super().__init__()
        self.address = address

    def _base_scope(self, **request):
        return {**super()._base_scope(**request), "client": [self.address, 0]}


def run(steps: Callable[[], Awaitable[T]]) -> T:
    """Runs the coroutine function `steps` as a view runs: its sync steps (`sync_to_async`) in
    the test's thread."""
    return async_to_sync(steps)()
