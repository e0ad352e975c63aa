"""The page in a real headless browser (issue 44, parts 3, 4 and 5): the language switch, the
keyboard (Enter sends, Shift+Enter is a newline, never while an input method composes; the focus
back on the message box after each reply; the delete dialog opening on Cancel) and claims shown
in one pair of quotation marks. The fixtures are tests/page/test_page_browser.py's."""

import pytest
from django.utils import translation
from django.utils.translation import gettext

from sessions_app.models import AgentSession
from tests.page.test_page_browser import _new_page, _start_a_session
from tests.support.browser import chromium, needs_chromium

pytestmark = [needs_chromium, pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.slow]

VIEWPORT = {"width": 1280, "height": 900}


def _heading(lang: str) -> str:
    with translation.override(lang):
        return gettext("Your session")


@pytest.mark.parametrize(
    "locale,first,then",
    [("zh-TW", "zh-hant", "en"), ("fr-FR", "en", "zh-hant"), ("ja-JP", "en", "zh-hant"), ("zh-CN", "zh-hant", "en")],
)
def test_the_switch_changes_the_language_keeps_it_and_the_open_session(asgi_live_server, tmp_path, locale, first, then):
    from playwright.sync_api import expect

    with chromium(tmp_path, locale=locale, viewport=VIEWPORT) as context:
        page = _new_page(context)
        _start_a_session(page, asgi_live_server.url)
        expect(page.locator("html")).to_have_attribute("lang", first)
        assert context.cookies() == []  # none until the switch is pressed
        page.click(f"#language-{then}")
        expect(page.locator("html")).to_have_attribute("lang", then)
        expect(page.locator("#session-heading")).to_have_text(_heading(then))  # the tab's session again
        (cookie,) = context.cookies()
        assert (cookie["name"], cookie["value"], cookie["httpOnly"], cookie["sameSite"]) == (
            "django_language",
            then,
            True,
            "Lax",
        )
        page.goto(f"{asgi_live_server.url}/")  # kept, whatever the browser's language
        expect(page.locator("html")).to_have_attribute("lang", then)
        page.click(f"#language-{first}")
        expect(page.locator("html")).to_have_attribute("lang", first)


def _sent(page) -> int:
    return page.locator("#conversation > li.message-user").count()


def test_enter_sends_shift_enter_is_a_newline_and_composing_text_is_never_sent(asgi_live_server, tmp_path):
    from playwright.sync_api import expect

    with chromium(tmp_path, locale="zh-TW", viewport=VIEWPORT) as context:
        page = _new_page(context)
        _start_a_session(page, asgi_live_server.url)
        box = page.locator("#message-text")
        box.click()
        page.keyboard.type("請幫我規劃")
        page.keyboard.press("Shift+Enter")
        page.keyboard.type("求職")
        assert box.input_value() == "請幫我規劃\n求職" and _sent(page) == 0
        # An input method confirming its characters with Enter: the keydown says it is composing.
        for init in ({"key": "Enter", "isComposing": True}, {"key": "Enter", "keyCode": 229}):
            assert page.evaluate(
                """(init) => document.getElementById("message-text").dispatchEvent(
                       new KeyboardEvent("keydown", {...init, bubbles: true, cancelable: true}))""",
                init,
            )  # not cancelled: the input method has the Enter
        page.wait_for_timeout(300)
        assert _sent(page) == 0
        page.keyboard.press("Enter")
        expect(page.locator("#conversation > li.message-user")).to_have_count(1)
        expect(page.locator("#conversation > li.message-agent")).to_have_count(1)
        expect(box).to_be_focused()  # back in the box, ready for the next message
        expect(box).to_have_value("")
        page.keyboard.type("Focus on remote roles")
        page.keyboard.press("Enter")
        expect(page.locator("#conversation > li.message-agent")).to_have_count(2)
        expect(box).to_be_focused()


def test_the_delete_dialog_opens_on_cancel_so_enter_deletes_nothing(asgi_live_server, tmp_path):
    from playwright.sync_api import expect

    with chromium(tmp_path, locale="en-US", viewport=VIEWPORT) as context:
        page = _new_page(context)
        _start_a_session(page, asgi_live_server.url)
        page.click("#delete")
        expect(page.locator("#delete-dialog")).to_be_visible()
        expect(page.locator("#delete-cancel")).to_be_focused()
        page.keyboard.press("Enter")
        expect(page.locator("#delete-dialog")).to_be_hidden()
        page.keyboard.press("Enter")  # Enter, Enter: still nothing deleted
        page.wait_for_timeout(300)
        expect(page.locator("#session-view")).to_be_visible()
    assert AgentSession.objects.count() == 1


@pytest.mark.parametrize(
    "locale,quoted",
    [
        ("en-US", "“You led a team of 40 engineers at Google from 2015 to 2019.”"),
        ("zh-TW", "「You led a team of 40 engineers at Google from 2015 to 2019.」"),
    ],
)
def test_a_claim_is_shown_in_one_pair_of_quotation_marks(asgi_live_server, scripted_model, tmp_path, locale, quoted):
    from playwright.sync_api import expect

    from tests.support.scripted_llm import text_response

    scripted_model(text_response(quoted))
    with chromium(tmp_path, locale=locale, viewport=VIEWPORT) as context:
        page = _new_page(context)
        _start_a_session(page, asgi_live_server.url)
        page.fill("#message-text", "What stands out on my resume?")
        page.click("#send-button")
        # The claim without its marks: <q> adds the one pair, in the page's language.
        claim = page.locator("#conversation > li.message-agent .claim q").first
        expect(claim).to_have_text("You led a team of 40 engineers at Google from 2015 to 2019.")
