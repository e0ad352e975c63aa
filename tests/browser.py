"""Debian's Chromium for the browser tests, driven by Playwright (`make test` installs it where
missing; Playwright's own browser downloads are not used)."""

import contextlib
from pathlib import Path

import pytest

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
