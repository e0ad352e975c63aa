"""A path no view answers (issue 44, part 8): outside the API a browser gets a page that says so,
in its language and under the page's strict CSP, and a program gets a short JSON answer; under
/agent/ every miss stays the session API's one 404, byte for byte (tests/api/test_api_ownership.py),
whoever asks; the other API paths answer JSON."""

import json
import re

import pytest

from sessions_app.api.errors import session_not_found_body
from tests.support.answers import comparable

pytestmark = pytest.mark.django_db

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"


@pytest.mark.parametrize("path", ["/no-such-page", "/favicon.ico", "/static-typo/x.css"])
@pytest.mark.parametrize("language,heading", [("en-US,en;q=0.9", "Page not found"), ("zh-TW,zh;q=0.9", "找不到網頁")])
def test_a_browser_gets_a_page_that_says_not_found(client, path, language, heading):
    response = client.get(path, HTTP_ACCEPT=BROWSER, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 404
    assert response["Content-Type"] == "text/html; charset=utf-8"
    html = response.content.decode()
    assert f"<h1>{heading}</h1>" in html
    assert re.search(r'<a href="/">', html) and '<a href="/api/docs/">' in html  # the way back
    assert '<link rel="icon" href="/static/page/favicon.svg"' in html
    assert "default-src 'none'" in response["Content-Security-Policy"]  # the page's strict policy
    assert "Accept" in response["Vary"] and "Accept-Language" in response["Vary"]


def test_an_operator_mistyping_an_admin_address_gets_the_page(client, django_user_model):
    # (Logged out, Django's admin sends any address under /admin/ to its login page.)
    client.force_login(django_user_model.objects.create_user("operator", is_staff=True))
    response = client.get("/admin/typo/", HTTP_ACCEPT=BROWSER, HTTP_ACCEPT_LANGUAGE="en")
    assert (response.status_code, response["Content-Type"]) == (404, "text/html; charset=utf-8")
    assert "<h1>Page not found</h1>" in response.content.decode()


@pytest.mark.parametrize("accept", [None, "*/*", "application/json"])
def test_a_program_gets_json_that_is_not_the_session_apis_404(client, accept):
    headers = {"HTTP_ACCEPT": accept} if accept else {}
    response = client.get("/no-such-path", HTTP_ACCEPT_LANGUAGE="en", **headers)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert json.loads(response.content) == {"detail": "There is nothing at this address."}
    assert json.loads(response.content) != session_not_found_body()


@pytest.mark.parametrize("path", ["/api/typo", "/deletions/a/b", "/.well-known/typo"])
def test_the_api_paths_answer_json_even_to_a_browser(client, path):
    response = client.get(path, HTTP_ACCEPT=BROWSER, HTTP_ACCEPT_LANGUAGE="en")
    assert (response.status_code, response["Content-Type"]) == (404, "application/json")
    assert json.loads(response.content) == {"detail": "There is nothing at this address."}


def test_under_agent_a_browser_gets_the_session_apis_one_404_byte_for_byte(client, settings):
    settings.DEBUG = False
    as_program = client.get("/agent/sessions/x/y/z")
    as_browser = client.get("/agent/sessions/x/y/z", HTTP_ACCEPT=BROWSER)
    assert as_program.status_code == 404 and json.loads(as_program.content) == session_not_found_body()
    assert comparable(as_browser) == comparable(as_program)


@pytest.mark.parametrize("accept", [BROWSER, None])
def test_metrics_without_its_token_is_the_unknown_paths_answer_to_a_browser_too(client, accept):
    headers = {"HTTP_ACCEPT": accept} if accept else {}
    metrics, unknown = client.get("/metrics", **headers), client.get("/no-such-path", **headers)
    assert (comparable(metrics)[0], comparable(metrics)[2]) == (comparable(unknown)[0], comparable(unknown)[2])
    assert comparable(metrics)[1] == comparable(unknown)[1]
