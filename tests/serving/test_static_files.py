"""Static files as a served service sends them (issue 44, part 8): collected by `collectstatic`
(`make run`) into WhiteNoise's compressed manifest storage, so every page names them by a hash of
their content, and WhiteNoise's middleware serves those names gzip-compressed to a client that
accepts it, cacheable for a year and immutable. (The tests' own process serves plain names from
the apps' folders: config/settings/test.py; the servers tests start get the files collected once:
tests/support/servers.py.)"""

import gzip
import re

import httpx
import pytest

from tests.support.servers import made_run_server

pytestmark = pytest.mark.slow

YEAR_IMMUTABLE = "max-age=315360000, public, immutable"


@pytest.fixture
def server(tmp_path):
    with made_run_server(tmp_path) as base:
        yield base


def _static_urls(html: str) -> list[str]:
    return re.findall(r'(?:href|src)="(/static/[^"]+)"', html)


def test_pages_name_hashed_files_served_compressed_and_cached_for_a_year(server):
    with httpx.Client(base_url=server, timeout=30) as client:
        page = client.get("/", headers={"Accept-Language": "en"})
        assert page.status_code == 200
        urls = _static_urls(page.text)
        names = {re.sub(r"\.[0-9a-f]{12}\.", ".", url) for url in urls}
        assert names == {
            "/static/page/page.css",
            "/static/page/page.js",
            "/static/page/favicon.svg",
            "/static/page/vendor/markdown-it.umd.min.js",
            "/static/page/vendor/purify.min.js",
        }
        assert all(re.search(r"\.[0-9a-f]{12}\.(css|js|svg)$", url) for url in urls), urls
        for url in urls:
            plain = client.get(url, headers={"Accept-Encoding": "identity"})
            compressed = client.get(url, headers={"Accept-Encoding": "gzip"})
            assert plain.status_code == compressed.status_code == 200, url
            assert compressed.headers["Cache-Control"] == plain.headers["Cache-Control"] == YEAR_IMMUTABLE, url
            assert compressed.headers["Content-Encoding"] == "gzip", url
            assert "Content-Encoding" not in plain.headers, url
            assert "Accept-Encoding" in compressed.headers["Vary"], url
            # httpx undoes the gzip; the bytes sent were fewer (a JS file: about a third).
            assert int(compressed.headers["Content-Length"]) < len(plain.content), url
            assert compressed.content == plain.content, url
        docs = client.get("/api/docs/try/")  # Swagger UI (the light /api/docs/ has no script)
        scripts = [url for url in _static_urls(docs.text) if url.endswith(".js")]
        assert scripts and all(re.search(r"\.[0-9a-f]{12}\.js$", url) for url in scripts), scripts
        for url in scripts:  # Swagger UI's 1.5 MB bundle among them
            answer = client.get(url, headers={"Accept-Encoding": "gzip"})
            assert answer.headers["Content-Encoding"] == "gzip" and answer.headers["Cache-Control"] == YEAR_IMMUTABLE


def test_gzip_copies_are_what_collectstatic_made(server):
    """The compressed copy is a valid gzip of the file (WhiteNoise serves the .gz collectstatic wrote)."""
    with httpx.Client(base_url=server, timeout=30) as client:
        (script,) = [url for url in _static_urls(client.get("/").text) if re.match(r"/static/page/page\.\w+\.js$", url)]
        with httpx.stream("GET", server + script, headers={"Accept-Encoding": "gzip"}) as raw:
            body = b"".join(raw.iter_raw())
        assert gzip.decompress(body) == client.get(script, headers={"Accept-Encoding": "identity"}).content
