"""The page's language switch without a browser (issue 44, part 4; tests/page/test_page_keyboard_language.py
presses it in Chromium): Django's set_language keeps the choice in a cookie the page then follows,
whatever the browser's Accept-Language, and nothing else changes hands."""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

SWITCH = "/i18n/setlang/"


def test_the_page_offers_the_other_language_named_in_itself(client):
    chinese = client.get("/", HTTP_ACCEPT_LANGUAGE="zh-TW").content.decode()
    english = client.get("/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert f'action="{SWITCH}"' in chinese and 'name="next" value="/"' in chinese
    assert '<button type="submit" name="language" value="en" lang="en" id="language-en">English</button>' in chinese
    assert 'value="zh-hant" lang="zh-hant" id="language-zh-hant">繁體中文</button>' in english
    assert 'id="language-zh-hant"' not in chinese and 'id="language-en"' not in english


def test_switching_sets_one_cookie_that_the_page_then_follows():
    client = Client(enforce_csrf_checks=True)  # no CSRF token needed: the page has none to give
    switched = client.post(SWITCH, {"language": "en", "next": "/"}, HTTP_ACCEPT_LANGUAGE="zh-TW")
    assert (switched.status_code, switched["Location"]) == (302, "/")
    assert list(switched.cookies) == ["django_language"]
    cookie = switched.cookies["django_language"]
    assert (cookie.value, cookie["max-age"], cookie["httponly"], cookie["samesite"]) == ("en", 31536000, True, "Lax")
    page = client.get("/", HTTP_ACCEPT_LANGUAGE="zh-TW,zh;q=0.9")
    assert '<html lang="en">' in page.content.decode()
    assert "Cookie" in page["Vary"] and "Accept-Language" in page["Vary"]  # a cache keeps the two apart
    api = client.get("/agent/sessions/x", HTTP_ACCEPT_LANGUAGE="zh-TW", HTTP_X_SESSION_TOKEN="x" * 43)
    assert api.json() == {"detail": "Session not found: it may have expired or been deleted."}  # the API too


@pytest.mark.parametrize("language", ["de", "zh-hans", "", "../../etc"])
def test_a_language_the_service_does_not_have_changes_nothing(client, language):
    # Django's set_language keeps any language it has a catalogue of (de), which LocaleMiddleware then
    # passes over as one the service does not offer: the browser's language still decides.
    response = client.post(SWITCH, {"language": language, "next": "/"})
    assert response.status_code == 302
    page = client.get("/", HTTP_ACCEPT_LANGUAGE="zh-TW")
    assert '<html lang="zh-hant">' in page.content.decode()


@pytest.mark.parametrize("next_url", ["https://elsewhere.example/", "//elsewhere.example/", "javascript:alert(1)"])
def test_the_switch_sends_the_browser_nowhere_but_this_site(client, next_url):
    response = client.post(SWITCH, {"language": "en", "next": next_url}, HTTP_ACCEPT="text/html")
    assert (response.status_code, response["Location"]) == (302, "/")
