"""Debian's Chromium for the browser tests, driven by Playwright (`make test` installs it where
missing; Playwright's own browser downloads are not used), and the ASGI server they talk to."""

import contextlib
import socket
import threading
from pathlib import Path

import pytest

from tests.support.waiting import wait_until

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="/usr/bin/chromium is not installed (`make browser` installs it when run as root)"
)


@contextlib.contextmanager
def chromium(tmp_path: Path, **options):
    """A browser context on a fresh profile (no cookies or storage from other runs), closed after.
    `options` are Playwright's (locale, viewport, accept_downloads, ...)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            user_data_dir=tmp_path / "profile",
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
            headless=True,
            **options,
        )
        try:
            yield context
        finally:
            context.close()


@contextlib.contextmanager
def chromium_browser():
    """One browser for several contexts (each a fresh profile, as another device is), closed after:
    `browser.new_context(**options)`."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


class ASGILiveServer:
    """The ASGI application `make run` serves (config.asgi: the guard in front of Django's ASGI
    handler), under uvicorn in a thread of the test process, so the test's settings, clock and
    scripted model are the server's; static files from the apps' folders, as pytest-django's
    server serves them (no collectstatic in tests). (pytest-django's `live_server` is Django's threaded WSGI
    server: a streamed turn, async from end to end, cannot be served there.)"""

    def __init__(self):
        import uvicorn
        from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

        from config.asgi import application

        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self.url = f"http://localhost:{self._socket.getsockname()[1]}"
        config = uvicorn.Config(
            ASGIStaticFilesHandler(application), lifespan="off", access_log=False, log_level="warning"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True)

    def start(self) -> None:
        self._thread.start()
        if not wait_until(lambda: self._server.started or not self._thread.is_alive(), timeout=30, interval=0.01):
            raise RuntimeError("the ASGI test server did not start")
        if not self._server.started:
            raise RuntimeError("the ASGI test server stopped as it started")

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(30)
        self._socket.close()


@pytest.fixture
def asgi_live_server(transactional_db):
    """A test's own server (what a browser test talks to); the database is the test's file, shared
    with the server's threads, so the test needs `transactional_db` as Django's LiveServerTestCase
    does."""
    server = ASGILiveServer()
    server.start()
    yield server
    server.stop()
