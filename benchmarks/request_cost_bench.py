#!/usr/bin/env python3
"""What a small request costs in CPU under ASGI, with our middleware (hooks that only compute run
on the event loop, sessions_app/infra/loop_middleware.py) and with Django's own classes in their
place (every hook handed to a thread and back). In-process, no server, no network."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common  # noqa: E402

OURS = "sessions_app.infra.loop_middleware."
STOCK = {  # ours -> Django's
    OURS + "LocaleMiddleware": "django.middleware.locale.LocaleMiddleware",
    OURS + "CommonMiddleware": "django.middleware.common.CommonMiddleware",
    OURS + "AuthenticationMiddleware": "django.contrib.auth.middleware.AuthenticationMiddleware",
    OURS + "MessageMiddleware": "django.contrib.messages.middleware.MessageMiddleware",
}
PATHS = {"absent session (the uniform 404)": "/agent/sessions/00000000-0000-0000-0000-000000000000", "page": "/"}


def measure(middleware: str, path: str, requests: int) -> float:
    """CPU ms per request through Django's ASGI handler (run in a child process: settings are global)."""
    import django
    from django.conf import settings

    django.setup()
    if middleware == "django":
        settings.MIDDLEWARE = [STOCK.get(name, name) for name in settings.MIDDLEWARE]
    from django.core.handlers.asgi import ASGIHandler
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    application = ASGIHandler()
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "", "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80), "headers": [(b"host", b"127.0.0.1"), (b"x-session-token", b"not-a-token")],
    }  # fmt: skip

    async def one():
        received = []

        async def receive():
            if received:
                await asyncio.Event().wait()  # the client stays connected
            received.append(True)
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            pass

        await application(scope, receive, send)

    async def run() -> float:
        for _ in range(50):  # warm-up
            await one()
        started = time.process_time()
        for _ in range(requests):
            await one()
        return 1000 * (time.process_time() - started) / requests

    return asyncio.run(run())


def run(args) -> tuple[list[str], dict]:
    requests = 200 if args.quick else 2000
    results = {}
    with tempfile.TemporaryDirectory(prefix="request-cost-") as tmp:
        env = _common.clean_env(DJANGO_VAR_DIR=tmp)
        for label, path in PATHS.items():
            for middleware in ("ours", "django"):
                cost, _ = _common.run_child(__file__, ["--measure", middleware, path, str(requests)], env)
                results.setdefault(label, {})[middleware] = cost
    rows = [
        [label, f"{r['ours']:.2f}", f"{r['django']:.2f}", f"{r['ours'] / r['django']:.2f}x"]
        for label, r in results.items()
    ]
    lines = [
        f"{requests} requests each, one at a time, through Django's ASGIHandler in one process (SQLite).",
        "",
        *_common.md_table("request | CPU ms, ours | CPU ms, Django's four back | ours / Django's", rows),
    ]
    return lines, {"requests": requests, "cpu_ms_per_request": results}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--measure"]:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        print(json.dumps(measure(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
        sys.exit(0)
    sys.exit(_common.main("request_cost", "What a small request costs under ASGI", ["Django", "asgiref"], run))
