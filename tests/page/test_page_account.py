"""The optional passkey account on the page, in a real Chromium (docs/ACCOUNTS.md, issue 45).

The passkey is the DevTools protocol's virtual authenticator (tests/support/virtual_authenticator.py),
a synced one (backup eligible and backed up), with PRF and without. One browser, two contexts: the
laptop registers, starts two sessions that talk and keeps both in the account; the phone gets the
same passkey (carried with WebAuthn.getCredentials / addCredential, as a passkey provider syncs it),
signs in with it, opens both sessions and deletes the account; then the raw scans find every row
and byte of both sessions gone (tests/support/privacy.py), in both languages.

The protocol cannot carry a passkey's PRF secret, so on the phone the carried passkey has no PRF:
there the page asks for the recovery code, and a wrong code opens nothing. With PRF, the laptop
signs out and in again, and opens both sessions with the PRF output alone.

Django is asked nothing in the test's own thread while Playwright's loop runs there (Django
refuses synchronous database calls beside an event loop): `_in_thread` does it in another.
"""

import json
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connections
from django.utils import translation
from django.utils.translation import gettext

from sessions_app.models import (
    Account,
    AccountCredential,
    AccountSession,
    AgentSession,
    DeletionAudit,
    DeletionLogEntry,
    SessionEvent,
    WrappedSessionToken,
)
from sessions_app.page.views import STORAGE_KEY, _script_strings
from sessions_app.security.passkeys import PRF_INPUT
from tests.erasure.test_erasure_e2e import _cache_text
from tests.page.test_page_browser import LOCALES, _fill, _new_page, _pattern, on_console_violation
from tests.support.account_client import unwrap
from tests.support.browser import chromium_browser, needs_chromium
from tests.support.passkey_authenticator import b64url
from tests.support.privacy import FIXTURES, find_chunks, find_in_text, find_markers, fixture_markers, sealed_chunks
from tests.support.virtual_authenticator import VirtualAuthenticator

RESUME = (FIXTURES / "resume_lin.txt").read_text(encoding="utf-8")
MESSAGES = ("Plan my move to platform work Numbat-4410", "請幫我準備面試 Numbat-8823")
KEY_PATTERN = re.compile(r"^([0-9a-f-]{36})\.([A-Za-z0-9_-]{43})$")
RECOVERY_PATTERN = re.compile(r"^[0-9a-f]{4}(?:-[0-9a-f]{4}){9}$")
VIEWPORT = {"width": 1280, "height": 900}

# Both legs of `make test`: the scans read that leg's database files (PostgreSQL's after a CHECKPOINT,
# its WAL included) and its cache (Redis).
pytestmark = [
    needs_chromium,
    pytest.mark.django_db(transaction=True),
    pytest.mark.browser,
    pytest.mark.both_backends,
    pytest.mark.slow,
]


# The PRF output the page's passkey gives (the PRF extension's first result), asked directly.
PRF_OUTPUT = """async ([rpId, input]) => {
  const publicKey = {
    rpId, challenge: crypto.getRandomValues(new Uint8Array(32)), userVerification: "required",
    extensions: { prf: { eval: { first: new TextEncoder().encode(input) } } },
  };
  const credential = await navigator.credentials.get({ publicKey });
  return Array.from(new Uint8Array(credential.getClientExtensionResults().prf.results.first));
}"""


def _in_thread(function):
    """`function()` in a thread of its own (its own database connection, closed after)."""

    def run():
        try:
            return function()
        finally:
            connections.close_all()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run).result()


def _texts(lang: str) -> dict:
    with translation.override(lang):
        return {
            "strings": _script_strings(),
            "refused": gettext("This recovery code opens no account. Check it and try again."),
        }


def _register(page, strings) -> str:
    """Creates the account; returns the recovery code the page shows once."""
    from playwright.sync_api import expect

    page.click("#account-register")
    expect(page.locator("#recovery-panel")).to_be_visible(timeout=20_000)
    expect(page.locator("#status")).to_have_text(strings["account_created"])
    code = page.locator("#code-value").text_content()
    assert RECOVERY_PATTERN.match(code), code
    page.click("#recovery-done")
    expect(page.locator("#recovery-panel")).to_be_hidden()
    expect(page.locator("#code-value")).to_have_text("")
    return code


def _start_talk_and_keep(page, strings, message: str) -> tuple[str, str]:
    """A session started on the resume, one message, kept in the account, closed in the tab."""
    from playwright.sync_api import expect

    page.fill("#resume-text", RESUME)
    page.click("#start-button")
    expect(page.locator("#key-view")).to_be_visible()
    session_id, token = KEY_PATTERN.match(page.locator("#key-value").text_content()).groups()
    page.click("#key-done")
    page.fill("#message-text", message)
    page.click("#send-button")
    expect(page.locator("#conversation > li.message-agent:not(.pending)")).to_have_count(1, timeout=30_000)
    page.click("#account-keep")
    expect(page.locator("#status")).to_have_text(strings["account_kept"])
    expect(page.locator("#account-keep")).to_be_hidden()
    page.click("#close")
    expect(page.locator("#start-view")).to_be_visible()
    return session_id, token


def _open_both(page, sessions: dict[str, str]) -> None:
    """Each kept session opened from the account's list: the conversation is back, and the tab
    holds the token the laptop had."""
    from playwright.sync_api import expect

    expect(page.locator("#account-sessions > li")).to_have_count(2)
    for index in range(2):
        page.locator("#account-sessions > li").nth(index).locator("button").first.click()
        expect(page.locator("#session-view")).to_be_visible()
        expect(page.locator("#conversation > li.message-user")).to_have_count(1)
        held = json.loads(page.evaluate(f"sessionStorage.getItem({json.dumps(STORAGE_KEY)})"))
        assert sessions[held["id"]] == held["token"]
        expect(page.locator("#conversation > li.message-user .text")).to_have_text(
            MESSAGES[list(sessions).index(held["id"])]
        )
        page.click("#close")


def _code_wrappings() -> list[tuple]:
    """(session id, salt, wrapped) of every token wrapped for the recovery code."""
    kept = WrappedSessionToken.objects.filter(credential=None)
    return list(kept.values_list("entry__agent_session__session_id", "salt", "wrapped"))


def _stored_now(stored_files) -> dict:
    """The sealed values and files of the database now (read in another thread)."""
    return _in_thread(lambda: {"chunks": sealed_chunks(), "files": stored_files()})


@pytest.mark.parametrize("locale,lang", LOCALES)
@pytest.mark.parametrize("prf", [True, False], ids=["prf", "no-prf"])
def test_an_account_opens_its_sessions_on_another_device_and_its_deletion_erases_them(
    asgi_live_server, settings, stored_files, captured_logs, tmp_path, locale, lang, prf
):
    from playwright.sync_api import expect

    settings.WEBAUTHN_ORIGINS = [asgi_live_server.url]
    settings.WEBAUTHN_RP_ID = "localhost"
    protected_logs, _raw = captured_logs
    texts = _texts(lang)
    strings = texts["strings"]
    base = f"{asgi_live_server.url}/"
    violations: list[str] = []

    sent: list[dict] = []  # every body the pages send to the account API

    def watch(page):
        page.on("console", lambda message: on_console_violation(message) and violations.append(message.text))
        page.on("request", lambda request: "/agent/account" in request.url and sent.append(request.post_data_json))
        return page

    with chromium_browser() as browser:
        # The laptop: register, two sessions that talk, both kept.
        laptop = watch(_new_page(browser.new_context(locale=locale, viewport=VIEWPORT)))
        laptop_passkey = VirtualAuthenticator.attach(laptop, prf=prf, synced=True)
        laptop.goto(base)
        expect(laptop.locator("#account-heading")).to_be_visible()
        code = _register(laptop, strings)
        sessions = dict(_start_talk_and_keep(laptop, strings, message) for message in MESSAGES)
        expect(laptop.locator("#account-summary")).to_have_text(_fill(strings["account_summary"], count=2))

        # Nothing of the account's secrets in the stores: tokens, the code, the content, and the
        # passkey's PRF output (asked of the authenticator here, as the page asks it).
        secrets = [*sessions.values(), code, code.replace("-", ""), *MESSAGES, *fixture_markers()]
        prf_output = bytes(laptop.evaluate(PRF_OUTPUT, [settings.WEBAUTHN_RP_ID, PRF_INPUT])) if prf else b""
        if prf:
            assert len(prf_output) == 32
            secrets += [b64url(prf_output), prf_output.hex()]
        # The page wraps as docs/ACCOUNTS.md says: what it sent for the code opens in Python too.
        for session_id, salt, wrapped in _in_thread(_code_wrappings):
            assert unwrap(code.replace("-", "").encode(), bytes(salt), bytes(wrapped)) == sessions[session_id]
        before = _stored_now(stored_files)
        assert find_markers(before["files"], secrets) == []
        assert prf_output == b"" or not any(prf_output in path.read_bytes() for path in before["files"])
        # The search works: every sealed value's first bytes are in the files now.
        assert {index for _, index in find_chunks(before["files"], before["chunks"])} == set(
            range(len(before["chunks"]))
        )
        assert find_in_text(protected_logs.getvalue(), secrets) == []
        assert find_in_text(_in_thread(_cache_text), secrets) == []

        if prf:  # signed out and in again, the PRF output alone opens both sessions
            laptop.click("#account-sign-out")
            expect(laptop.locator("#status")).to_have_text(strings["account_signed_out"])
            laptop.click("#account-sign-in")
            expect(laptop.locator("#status")).to_have_text(strings["account_signed_in"])
            expect(laptop.locator("#account-locked")).to_be_hidden()
            expect(laptop.locator("#recovery-form")).to_be_hidden()
            _open_both(laptop, sessions)

        # The phone: the same synced passkey (as it is now: its sign count goes on from the laptop's),
        # signed in; it gives no PRF here, so the code opens.
        passkey = laptop_passkey.credentials()
        assert len(passkey) == 1 and passkey[0]["backupEligibility"] and passkey[0]["backupState"]
        phone = watch(_new_page(browser.new_context(locale=locale, viewport=VIEWPORT)))
        VirtualAuthenticator.attach(phone, prf=prf, synced=True).add(passkey[0])
        phone.goto(base)
        phone.click("#account-sign-in")
        expect(phone.locator("#status")).to_have_text(strings["account_signed_in"])
        expect(phone.locator("#account-locked")).to_be_visible()
        expect(phone.locator("#account-sessions > li")).to_have_count(2)
        phone.locator("#account-sessions > li").first.locator("button").first.click()
        expect(phone.locator("#alert")).to_have_text(strings["account_cannot_open"])
        wrong = "0123-4567-89ab-cdef-0123-4567-89ab-cdef-0123-4567"
        phone.fill("#recovery-code", wrong)
        phone.click("#recovery-button")
        expect(phone.locator("#alert")).to_have_text(texts["refused"])
        expect(phone.locator("#session-view")).to_be_hidden()
        assert phone.evaluate(f"sessionStorage.getItem({json.dumps(STORAGE_KEY)})") is None
        phone.fill("#recovery-code", code.upper())  # typed back in any case
        phone.click("#recovery-button")
        expect(phone.locator("#account-locked")).to_be_hidden()
        _open_both(phone, sessions)

        # Delete the account from the phone: the dialog opens on Cancel.
        phone.locator("#account-sessions > li").first.locator("button").first.click()
        expect(phone.locator("#session-view")).to_be_visible()
        phone.click("#account-delete")
        expect(phone.locator("#account-delete-dialog")).to_be_visible()
        assert phone.evaluate("document.activeElement.id") == "account-delete-cancel"
        phone.click("#account-delete-confirm")
        expect(phone.locator("#status")).to_have_text(_pattern(strings["account_deleted"], sessions=2, passkeys=1))
        expect(phone.locator("#start-view")).to_be_visible()  # the open session was one of them
        expect(phone.locator("#account-signed-out")).to_be_visible()
        assert phone.evaluate(f"sessionStorage.getItem({json.dumps(STORAGE_KEY)})") is None
        # The laptop's sign-in went with the account.
        laptop.reload()
        expect(laptop.locator("#account-signed-out")).to_be_visible()
        assert violations == []
    # The passkey's answers went without their extension results: the PRF output never left the tab.
    credentials = [body["credential"] for body in sent if body and "credential" in body]
    assert len(credentials) == (3 if prf else 2)  # registering, signing in on the phone (and again on the laptop)
    assert all(credential["clientExtensionResults"] == {} for credential in credentials)

    # Every row of both sessions and of the account is gone, and every byte of their content.
    assert AgentSession.objects.filter(session_id__in=sessions).count() == 0
    assert SessionEvent.objects.count() == 0
    counts = [model.objects.count() for model in (Account, AccountCredential, AccountSession, WrappedSessionToken)]
    assert counts == [0, 0, 0, 0]
    assert list(DeletionAudit.objects.values_list("trigger", "sessions_deleted")) == [("account", 2)]
    assert DeletionLogEntry.objects.count() == 2  # one entry per session
    chunks = before["chunks"]
    from django.db import connection

    if connection.vendor == "sqlite":  # PostgreSQL keeps a deleted row's bytes until VACUUM (test_erasure_e2e)
        assert find_chunks(stored_files(), chunks) == []
    assert find_markers(stored_files(), secrets) == []
    assert find_in_text(protected_logs.getvalue(), secrets) == []
    assert find_in_text(_cache_text(), secrets) == []


def test_the_scan_finds_the_token_when_the_page_sends_it_unwrapped(asgi_live_server, settings, stored_files):
    """The control of the scans above: the page's wrapping switched off (the request the page sends
    to keep a session rewritten on its way, as a broken page would send it: the token itself behind
    a fake nonce), and the same database scan finds the session's token."""
    from playwright.sync_api import expect

    settings.WEBAUTHN_ORIGINS = [asgi_live_server.url]
    strings = _texts("en")["strings"]

    def unwrapped(route):
        if route.request.method != "POST":  # the list of kept sessions goes as it is
            route.continue_()
            return
        body = json.loads(route.request.post_data)
        token = route.request.headers["x-session-token"]
        for wrapping in body["wrapped_tokens"]:
            wrapping["wrapped"] = b64url(b"\0" * 12 + token.encode())
        route.continue_(post_data=json.dumps(body))

    with chromium_browser() as browser:
        page = _new_page(browser.new_context(locale="en-US", viewport=VIEWPORT))
        VirtualAuthenticator.attach(page, prf=True)
        page.goto(f"{asgi_live_server.url}/")
        _register(page, strings)
        page.route("**/agent/account/sessions", unwrapped)  # (routed from here: a route set before stalls the passkey)
        _session_id, token = _start_talk_and_keep(page, strings, MESSAGES[0])
        found = {marker for _file, marker, _encoding in find_markers(_in_thread(stored_files), [token])}
        expect(page.locator("#account-summary")).to_have_text(_fill(strings["account_summary"], count=1))
    assert found == {token}
