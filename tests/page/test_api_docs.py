"""The API's documentation at /api/docs/ (issue 44): a light page of the OpenAPI schema, with no
script, under the person's page's strict policy, in the reader's language; Swagger UI one link away
at /api/docs/try/, left out of the policy as before (tests/page/test_page_csp.py). Lighthouse
measures its speed on a phone (tests/page/test_page_lighthouse.py); a browser follows its link to
Swagger UI (tests/page/test_page_browser.py)."""

import html
import re

import pytest
import yaml
from django.urls import reverse
from drf_spectacular.generators import SchemaGenerator

from sessions_app.page import api_docs
from tests.page.test_page_csp import STRICT_POLICY, _inventory, _policy

pytestmark = pytest.mark.django_db

METHODS = {"get", "post", "put", "patch", "delete", "head", "options", "trace"}
EN = "en-US,en;q=0.9"
ZH = "zh-TW,zh;q=0.9"


@pytest.fixture(autouse=True)
def fresh_pages():
    """Each test builds the pages afresh (the view keeps them per language for the process)."""
    api_docs.rendered_docs.cache_clear()


def _docs(client, language=EN):
    response = client.get(reverse("docs"), HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/html; charset=utf-8"
    return response


def _text(response) -> str:
    return html.unescape(response.content.decode())


def test_every_operation_of_the_schema_is_on_the_page_with_its_summary_and_statuses(client):
    # The schema /api/schema/ serves, as a client downloads it.
    schema = yaml.safe_load(client.get(reverse("schema")).content)
    page = _text(_docs(client))
    operations = [
        (path, method, item[method]) for path, item in schema["paths"].items() for method in METHODS & set(item)
    ]
    assert len(operations) >= 25
    for path, method, operation in operations:
        found = re.search(
            rf'<article class="operation" id="{re.escape(operation["operationId"])}">(.*?)</article>', page, re.S
        )
        assert found, (method, path)
        block = found.group(1)
        assert f'<code class="method">{method.upper()}</code>' in block, (method, path)
        assert operation["summary"] in block, (method, path)
        statuses = re.findall(r"<li><code>(\w+)</code>", block)
        assert statuses == sorted(operation["responses"]), (method, path)
        for status, response in operation["responses"].items():
            assert response["description"] in block, (method, path, status)
        # ...under its path, and in the contents.
        assert f'<a href="#{operation["operationId"]}"><code>{method.upper()} {path}</code></a>' in page
    headings = re.findall(r'<section class="api-path">\s*<h2><code>([^<]+)</code></h2>', page)
    assert headings == list(schema["paths"])


def test_the_page_links_the_schema_and_swagger_ui(client):
    anchors = [attributes for tag, attributes in _inventory(_docs(client)).tags if tag == "a"]
    links = {attributes["id"]: attributes for attributes in anchors if "id" in attributes}
    assert links["schema-yaml"]["href"] == "/api/schema/" and links["schema-yaml"]["download"]
    assert links["try"]["href"] == reverse("docs-try") == "/api/docs/try/"
    assert "/" in [attributes["href"] for attributes in anchors]  # the way back to the person's page


def test_the_page_runs_no_script_under_the_pages_policy_with_its_stylesheet(client):
    response = _docs(client)
    assert _policy(response) == STRICT_POLICY
    inventory = _inventory(response)
    assert inventory.scripts == []
    assert not any(name.startswith("on") or name == "style" for _, attributes in inventory.tags for name in attributes)
    links = {attributes["rel"]: attributes["href"] for tag, attributes in inventory.tags if tag == "link"}
    assert links == {"stylesheet": "/static/page/page.css", "icon": "/static/page/favicon.svg"}


@pytest.mark.parametrize(
    "language,lang,title,try_it",
    [(EN, "en", "API documentation", "Try the API interactively"), (ZH, "zh-hant", "API 文件", "互動試用 API")],
)
def test_the_page_is_in_the_readers_language_and_says_what_stays_english(client, language, lang, title, try_it):
    response = _docs(client, language)
    page = _text(response)
    assert f'<html lang="{lang}">' in page and f"<h1>{title}</h1>" in page and try_it in page
    assert "Accept-Language" in response["Vary"] and "Cookie" in response["Vary"]
    # The schema's own texts are English, and marked so (a screen reader reads them as English).
    assert '<span lang="en">Session metadata</span>' in page
    # A Chinese reader is told so; an English one needs no note.
    assert ("本頁中 API 本身的文字（摘要、說明與回應）為英文。" in page) == (lang == "zh-hant")
    assert "are in English" not in page


def test_the_page_is_built_once_per_language(client, monkeypatch):
    built = []
    real = SchemaGenerator.get_schema

    def counted(self, *args, **kwargs):
        built.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SchemaGenerator, "get_schema", counted)
    first = [_docs(client, language).content for language in (EN, ZH, EN, ZH)]
    assert len(built) == 2
    assert first[0] == first[2] and first[1] == first[3] and first[0] != first[1]


def test_swagger_ui_moved_and_still_loads_the_schema(client):
    response = client.get(reverse("docs-try"))
    assert response.status_code == 200
    assert b"SwaggerUIBundle" in response.content and b"/api/schema/" in response.content
