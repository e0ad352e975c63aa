"""The person's page at /: a strict Content-Security-Policy, no inline code or style, no cookie.

No browser: the HTML and headers as the server sends them (tests/page/test_page_browser.py
drives a real one). The API, the admin and the API docs carry the same policy; Swagger UI, at
/api/docs/try/, is left out.
"""

import json
import re
import uuid
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders

from sessions_app.infra.content_security_policy import in_fixed_order
from sessions_app.page.views import _script_strings

pytestmark = pytest.mark.django_db

STRICT_POLICY = {
    "default-src": ["'none'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "connect-src": ["'self'"],
    "img-src": ["'self'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
    "base-uri": ["'none'"],
}
SCRIPT = Path(__file__).resolve().parents[2] / "sessions_app" / "static" / "page" / "page.js"


def _policy(response) -> dict[str, list[str]]:
    header = response.headers.get("Content-Security-Policy")
    assert header, "no Content-Security-Policy header"
    directives = [part.split() for part in header.split(";") if part.strip()]
    return {name: values for name, *values in directives}


class _Inventory(HTMLParser):
    """Every tag, its attributes and the text of each <script>."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[tuple[dict, str]] = []
        self._in_script: dict | None = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag == "script":
            self._in_script = attributes
            self.scripts.append((attributes, ""))

    def handle_data(self, data):
        if self._in_script is not None:
            attributes, text = self.scripts[-1]
            self.scripts[-1] = (attributes, text + data)

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = None


def _page(client, language="en-US"):
    response = client.get("/", HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/html; charset=utf-8"
    return response


def _inventory(response) -> _Inventory:
    parser = _Inventory()
    parser.feed(response.content.decode("utf-8"))
    parser.close()
    return parser


def test_the_page_carries_the_strict_policy(client):
    assert _policy(_page(client)) == STRICT_POLICY


def test_the_policy_is_spelled_the_same_by_every_process(client):
    # django-csp orders directives by a set (per-process string hashing); the middleware sorts them.
    assert _page(client)["Content-Security-Policy"] == (
        "base-uri 'none'; connect-src 'self'; default-src 'none'; form-action 'self'; frame-ancestors 'none';"
        " img-src 'self'; script-src 'self'; style-src 'self'"
    )
    # A repeated directive keeps its place among its namesakes (the first one is the one in force).
    assert in_fixed_order("script-src b; default-src 'none'; script-src a") == (
        "default-src 'none'; script-src b; script-src a"
    )


def test_the_page_has_no_inline_script_handler_or_style(client):
    page = _inventory(_page(client))
    for tag, attributes in page.tags:
        assert "style" not in attributes, tag
        assert not [name for name in attributes if name.startswith("on")], (tag, attributes)
        for name in ("href", "src", "action", "formaction"):
            assert not (attributes.get(name) or "").strip().lower().startswith("javascript:"), (tag, name)
    assert "style" not in {tag for tag, _ in page.tags}
    code = [(attributes, text) for attributes, text in page.scripts if attributes.get("type") != "application/json"]
    # Static files only, no code inline: the page's script after the two libraries it renders Markdown with.
    assert code == [
        ({"src": f"/static/page/{name}", "defer": None}, "")
        for name in ("vendor/markdown-it.umd.min.js", "vendor/purify.min.js", "page.js")
    ]
    data = {attributes["id"]: json.loads(text) for attributes, text in page.scripts if "id" in attributes}
    assert set(data) == {"page-config", "page-strings"}  # json_script data blocks, which never run


def test_the_page_sets_no_cookie_and_needs_none(client):
    response = _page(client)
    assert not response.cookies
    assert "Set-Cookie" not in response.headers
    assert 'name="csrfmiddlewaretoken"' not in response.content.decode()
    # The API it calls takes no cookie and no CSRF token (a header-authenticated API).
    created = client.post("/agent/sessions", {"resume_text": "Lin Yu-Ching"}, content_type="application/json")
    assert created.status_code == 201
    assert not created.cookies
    assert not client.cookies


def test_the_page_loads_its_files_from_static(client):
    page = _inventory(_page(client))
    links = {attributes["rel"]: attributes["href"] for tag, attributes in page.tags if tag == "link"}
    assert links == {"stylesheet": "/static/page/page.css", "icon": "/static/page/favicon.svg"}
    assert finders.find("page/page.js") and finders.find("page/page.css") and finders.find("page/favicon.svg")


def test_the_page_links_the_api_docs(client):
    links = [attributes.get("href") for tag, attributes in _inventory(_page(client)).tags if tag == "a"]
    assert "/api/docs/" in links


@pytest.mark.parametrize("accept_language,lang", [("en-US,en;q=0.9", "en"), ("zh-TW,zh;q=0.9", "zh-hant")])
def test_the_page_follows_the_browsers_language(client, accept_language, lang):
    response = _page(client, accept_language)
    assert re.search(rf'<html lang="{lang}">', response.content.decode())
    assert "Accept-Language" in response["Vary"]


def test_every_string_the_script_shows_comes_from_the_page():
    used = set(re.findall(r"\bstrings\.(\w+)", SCRIPT.read_text(encoding="utf-8")))
    assert used, "the script reads no strings"
    assert used <= set(_script_strings()), used - set(_script_strings())


def test_only_the_root_is_the_page(client):
    assert client.post("/", {}).status_code in (403, 405)  # no form posts anywhere
    other = client.get("/index.html")
    assert other.status_code == 404
    assert other["Content-Type"] == "application/json"


def test_the_api_answers_carry_the_policy_too(client):
    missing = client.get(f"/agent/sessions/{uuid.uuid4()}", HTTP_X_SESSION_TOKEN="x" * 43)
    assert missing.status_code == 404
    assert _policy(missing) == STRICT_POLICY


def test_the_admin_carries_the_policy_too(client, admin_client):
    # Its pages run under it unchanged: tests/page/test_page_browser.py looks for violations in a browser.
    assert _policy(client.get("/admin/login/")) == STRICT_POLICY
    changelist = admin_client.get("/admin/sessions_app/agentsession/")
    assert changelist.status_code == 200
    assert _policy(changelist) == STRICT_POLICY


def test_swagger_ui_is_left_out_and_still_loads(client):
    # Swagger UI starts with an inline script and sets inline styles: no policy there, as before.
    docs = client.get("/api/docs/try/")
    assert docs.status_code == 200
    assert b"SwaggerUIBundle" in docs.content
    assert "Content-Security-Policy" not in docs.headers
    assert client.get("/api/schema/").status_code == 200


def test_the_api_docs_carry_the_policy(client):
    # The light page of the schema that links to Swagger UI (tests/page/test_api_docs.py).
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert _policy(docs) == STRICT_POLICY
