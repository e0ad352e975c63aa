"""Lighthouse (the npm package, tests/page/audit/) on the service as `make run` serves it (gunicorn,
static files collected, compressed and hashed), in Debian's Chromium (CHROME_PATH), nothing fetched
from elsewhere: the page at `/` in both languages scores 100 for accessibility and for best
practices; the API docs at `/api/docs/` score at least 90 for performance on Lighthouse's phone
preset (a mid-range phone on a slow 4G link, simulated). Each run's failing audits are printed."""

import json
import os
import subprocess

import pytest

from tests.support.audit_tools import audit_tool
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, needs_chromium
from tests.support.servers import made_run_server

pytestmark = [needs_chromium, pytest.mark.slow, pytest.mark.browser]

CHROME_FLAGS = " ".join(arg for arg in CHROMIUM_ARGS if arg != "--headless") + " --headless=new"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with made_run_server(tmp_path_factory.mktemp("lighthouse")) as base:
        yield base


def lighthouse(url: str, out, categories: list[str], language: str = "en-US") -> dict:
    """Lighthouse's report on `url` (its phone preset, the default), `categories` only."""
    command = [
        "node",
        str(audit_tool("lighthouse/cli/index.js")),
        url,
        "--quiet",
        "--output=json",
        f"--output-path={out}",
        f"--only-categories={','.join(categories)}",
        f"--chrome-flags={CHROME_FLAGS}",
        f"--extra-headers={json.dumps({'Accept-Language': language})}",
        f"--locale={language.split('-')[0]}",
    ]
    env = {**os.environ, "CHROME_PATH": str(CHROMIUM)}
    subprocess.run(command, env=env, check=True, timeout=600, capture_output=True)
    return json.loads(out.read_text(encoding="utf-8"))


def scores(report: dict) -> dict[str, int]:
    return {name: round(100 * (category["score"] or 0)) for name, category in report["categories"].items()}


def failing(report: dict, category: str) -> list[str]:
    """The audits of `category` that count and did not pass, with what they found."""
    audits = report["audits"]
    found = []
    for ref in report["categories"][category]["auditRefs"]:
        audit = audits[ref["id"]]
        if ref["weight"] and audit["score"] is not None and audit["score"] < 1:
            items = (audit.get("details") or {}).get("items") or []
            nodes = [str((item.get("node") or {}).get("snippet") or item.get("description"))[:120] for item in items]
            found.append(f"{ref['id']}: {audit['title']} {nodes[:3]}")
    return found


@pytest.mark.parametrize("language", ["en-US", "zh-TW"])
def test_the_page_scores_100_for_accessibility_and_best_practices(served, tmp_path, language, capsys):
    report = lighthouse(f"{served}/", tmp_path / "page.json", ["accessibility", "best-practices"], language)
    assert report["finalDisplayedUrl"].rstrip("/") == served
    with capsys.disabled():
        print(f"\n[lighthouse / {language}] {scores(report)}")
    assert failing(report, "accessibility") == []
    assert failing(report, "best-practices") == []
    assert scores(report) == {"accessibility": 100, "best-practices": 100}


def test_the_api_docs_score_90_for_performance_on_a_phone(served, tmp_path, capsys):
    report = lighthouse(f"{served}/api/docs/", tmp_path / "docs.json", ["performance"])
    metrics = {
        name: report["audits"][name]["displayValue"]
        for name in ("first-contentful-paint", "largest-contentful-paint", "total-blocking-time", "speed-index")
    }
    with capsys.disabled():
        print(f"\n[lighthouse /api/docs/ phone] {scores(report)} {metrics}")
    assert scores(report)["performance"] >= 90, (metrics, failing(report, "performance"))
