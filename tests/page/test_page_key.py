"""Keeping the session key (issue 44, "Keeping the key"), in real Chromium: the key panel offers
the browser's password manager (a real form, stored by the Credential Management API), a text
file made in the tab, and the clipboard; the tab asks before it closes until the key went to
one of them; the open-key field is one a password manager fills. And the key goes nowhere
else: no URL, no header but X-Session-Token, no request body, no cookie, no localStorage, no
console line, no server log line."""

import logging
from pathlib import Path

import pytest
from django.utils import translation
from django.utils.translation import gettext

from sessions_app.page.views import KEY_FILE_NAME, _script_strings
from sessions_app.security.tokens import TOKEN_HEADER
from tests.page.test_page_browser import KEY_PATTERN, RESUME, _fill, _new_page
from tests.support.browser import chromium, needs_chromium

pytestmark = [needs_chromium, pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.slow]

VIEWPORT = {"width": 1280, "height": 900}

# What the page hands the password manager, recorded instead of Chromium's own prompt (which a
# headless browser has no window for).
RECORD_CREDENTIALS = """
window.storedCredentials = [];
if (navigator.credentials) {
  navigator.credentials.store = async (credential) => {
    window.storedCredentials.push({ type: credential.type, id: credential.id, password: credential.password });
    return credential;
  };
}
"""

# Whether the tab would ask before closing: its beforeunload handler cancels the event.
WOULD_ASK = """() => {
  const event = new Event("beforeunload", { cancelable: true });
  window.dispatchEvent(event);
  return event.defaultPrevented;
}"""


def _start(page) -> tuple[str, str, str]:
    """A new session from the start view; its key, id and token, from the key panel."""
    from playwright.sync_api import expect

    page.fill("#resume-text", RESUME)
    page.click("#start-button")
    expect(page.locator("#key-value")).to_have_text(KEY_PATTERN)
    expect(page.locator("#session-view")).to_be_visible()  # opened: its requests done
    key = page.locator("#key-value").text_content()
    session_id, token = KEY_PATTERN.match(key).groups()
    return key, session_id, token


def _close(page) -> None:
    page.click("#key-done")
    page.click("#close")


def test_the_key_is_kept_by_the_password_manager_a_file_or_the_clipboard_and_goes_nowhere_else(
    asgi_live_server, caplog, tmp_path
):
    from playwright.sync_api import expect

    caplog.set_level(logging.DEBUG)
    with translation.override("en"):
        strings = _script_strings()
    requests, console, tokens = [], [], []
    with chromium(tmp_path, locale="en-US", viewport=VIEWPORT, accept_downloads=True) as context:
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=asgi_live_server.url)
        context.add_init_script(RECORD_CREDENTIALS)
        page = _new_page(context, leave_without_asking=False)
        page.on("request", lambda request: requests.append(request))
        page.on("console", lambda message: console.append(message.text))
        page.goto(f"{asgi_live_server.url}/")
        # The open-key field is one a password manager fills (no autocomplete="off").
        expect(page.locator("#open-key")).to_have_attribute("autocomplete", "current-password")

        # 1. The password manager: the panel's form, the session id as the username, the key as the password.
        key, session_id, token = _start(page)
        tokens.append(token)
        assert page.evaluate(WOULD_ASK) is True  # not saved yet: the tab asks before closing
        expect(page.locator("#key-username")).to_have_attribute("autocomplete", "username")
        expect(page.locator("#key-password")).to_have_attribute("autocomplete", "current-password")
        expect(page.locator("#key-store")).to_be_visible()  # Chromium has PasswordCredential on localhost
        page.click("#key-store")
        expect(page.locator("#status")).to_have_text(strings["key_stored"])
        assert page.evaluate("window.storedCredentials") == [{"type": "password", "id": session_id, "password": key}]
        assert page.evaluate(WOULD_ASK) is False
        _close(page)

        # 2. A text file, made in the tab: no request while it is made.
        key, session_id, token = _start(page)
        tokens.append(token)
        assert page.evaluate(WOULD_ASK) is True
        before = len(requests)
        with page.expect_download() as download_info:
            page.click("#key-download")
        download = download_info.value
        assert download.suggested_filename == KEY_FILE_NAME  # no session id in a downloads folder's list
        text = Path(download.path()).read_text(encoding="utf-8")
        assert text.endswith(f"\n\n{key}\n")
        assert text.startswith(_fill(strings["key_file"], address=f"{asgi_live_server.url}/"))
        assert [request.url for request in requests[before:] if not request.url.startswith("blob:")] == []
        expect(page.locator("#status")).to_have_text(_fill(strings["exported"], filename=KEY_FILE_NAME))
        assert page.evaluate(WOULD_ASK) is False
        _close(page)

        # 3. The clipboard, from the session's toolbar once the panel is put away.
        key, session_id, token = _start(page)
        tokens.append(token)
        page.click("#key-done")
        expect(page.locator("#key-value")).to_have_text("")
        expect(page.locator("#key-password")).to_have_value("")
        assert page.evaluate(WOULD_ASK) is True  # "I have saved it" alone is the person's word, not a save
        page.click("#copy-key")
        expect(page.locator("#status")).to_have_text(strings["copied"])
        assert page.evaluate("navigator.clipboard.readText()") == key
        assert page.evaluate(WOULD_ASK) is False

        # A message, a reload, and the key typed into the open form: the usual ways the key travels.
        page.fill("#message-text", "Please draft my job-search plan")
        page.click("#send-button")
        expect(page.locator("#conversation > li.message-agent:not(.pending)")).to_have_count(1)
        page.reload()
        expect(page.locator("#session-view")).to_be_visible()
        page.click("#close")
        page.fill("#open-key", key)
        page.click("#open-button")
        expect(page.locator("#session-view")).to_be_visible()

        # 4. A new key not yet kept anywhere: closing the tab (here, a reload) brings the browser's question.
        page.click("#close")
        _, _, token = _start(page)
        tokens.append(token)
        asked = []
        page.once("dialog", lambda dialog: (asked.append(dialog.type), dialog.accept()))
        page.reload()
        expect(page.locator("#session-view")).to_be_visible()
        assert asked == ["beforeunload"]

        # Nowhere else: cookies, localStorage, URLs, other headers, bodies, the console, the server's logs.
        assert page.evaluate("document.cookie") == "" and context.cookies() == []
        local = page.evaluate("JSON.stringify(Object.entries(localStorage))")
        sent = []
        for request in requests:
            headers = {name: value for name, value in request.all_headers().items() if name != TOKEN_HEADER.lower()}
            sent.append((request.url, str(headers), request.post_data or ""))
        shown_elsewhere = list(console)
    assert len(set(tokens)) == 4
    assert any(request.headers.get(TOKEN_HEADER.lower()) == tokens[0] for request in requests)  # the one way in
    for token in tokens:
        assert token not in local
        assert [what for what in sent if any(token in part for part in what)] == []
        assert [line for line in shown_elsewhere if token in line] == []
        assert token not in caplog.text


@pytest.mark.parametrize("locale,lang", [("en-US", "en"), ("zh-TW", "zh-hant")])
def test_the_page_says_what_it_does_with_the_key(asgi_live_server, tmp_path, locale, lang):
    """No "shown once" beside a Copy button that stays; the open form is not "Resume" (résumé)."""
    from playwright.sync_api import expect

    with translation.override(lang):
        opened, kept = gettext("Open a saved session"), gettext("Copy session key")
    with chromium(tmp_path, locale=locale, viewport=VIEWPORT) as context:
        page = _new_page(context, leave_without_asking=False)
        page.goto(f"{asgi_live_server.url}/")
        expect(page.locator("#open-heading")).to_have_text(opened)
        _start(page)
        expect(page.locator("#key-view .explain")).to_contain_text(kept)
        assert "once" not in page.locator("#key-view").inner_text()


def test_the_language_switch_does_not_ask_the_tab_keeps_the_key_across_it(asgi_live_server, tmp_path):
    """The switch reloads the page in the same tab, whose sessionStorage keeps the key: no question."""
    from playwright.sync_api import expect

    with chromium(tmp_path, locale="en-US", viewport=VIEWPORT) as context:
        page = _new_page(context, leave_without_asking=False)
        page.goto(f"{asgi_live_server.url}/")
        _start(page)
        assert page.evaluate(WOULD_ASK) is True
        asked = []
        page.on("dialog", lambda dialog: (asked.append(dialog.type), dialog.accept()))
        page.click("#language-zh-hant")
        expect(page.locator("html")).to_have_attribute("lang", "zh-hant")
        expect(page.locator("#session-view")).to_be_visible()  # the tab's session, opened again
        assert asked == []
        assert page.evaluate(WOULD_ASK) is True  # the key is still in no safe place: the tab still asks
        page.click("#copy-key")  # the Clipboard API, or the selection where it is refused
        # The copy resolves after the click returns (a loaded machine shows it): wait for the tab to stop asking.
        page.wait_for_function(f"() => !({WOULD_ASK})()", timeout=10_000)
        assert page.evaluate(WOULD_ASK) is False
