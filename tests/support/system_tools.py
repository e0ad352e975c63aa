"""Programs from Debian the slow and system tests run (`make system-packages` installs them as
root): where one is missing such a test skips, saying why, except under CI (CI=true, or
REQUIRE_SCALE_OUT_BACKENDS=1 as .ci/run sets), where it fails: CI must never skip it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest


def must_not_skip() -> bool:
    """Whether this run is CI's, where a test that cannot run fails instead of skipping."""
    return os.environ.get("CI", "").strip().lower() == "true" or os.environ.get("REQUIRE_SCALE_OUT_BACKENDS") == "1"


def debian_program(name: str, path: str, package: str) -> Path:
    """`name`'s path (on PATH, else Debian's `path`); where it is missing, skips the test, or fails
    it under CI, naming `package`."""
    found = Path(shutil.which(name) or path)
    if not found.exists():
        reason = f"{name} is not installed (Debian's {package} package: `make system-packages` installs it as root)"
        if must_not_skip():
            pytest.fail(f"{reason}; under CI this test must run", pytrace=False)
        pytest.skip(reason)
    return found
