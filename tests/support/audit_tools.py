"""The page's audit tools from npm (tests/page/audit/package.json: Lighthouse, axe-core), which
`make page-audit-tools` (run by `make test`) installs where npm is. Where they are missing a test
that needs them skips, saying why, except under CI, where it fails (tests/support/system_tools.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.system_tools import must_not_skip

AUDIT = Path(__file__).resolve().parents[1] / "page" / "audit"


def audit_tool(relative: str) -> Path:
    """The installed file `relative` under tests/page/audit/node_modules/ (Node must be there to run it)."""
    path = AUDIT / "node_modules" / relative
    if shutil.which("node") is None or not path.exists():
        reason = f"{relative} is not installed (Node and npm, then `make page-audit-tools`)"
        if must_not_skip():
            pytest.fail(f"{reason}; under CI this test must run", pytrace=False)
        pytest.skip(reason)
    return path
