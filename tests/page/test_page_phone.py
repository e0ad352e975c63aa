"""The page on a phone (issue 44, "Phone"), in real Chromium at 390 px: the conversation and the
plan are two tabs (role tablist/tab/tabpanel, aria-selected, arrow keys), their list stays in
sight while the conversation scrolls, and the plan is one tap away, not below the whole
conversation. At 1280 px both stand side by side, with no tabs."""

import pytest
from django.utils import translation
from django.utils.translation import gettext

from tests.page.test_page_browser import _new_page, _start_a_session
from tests.support.browser import chromium, needs_chromium

pytestmark = [needs_chromium, pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.slow]

PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 3, "is_mobile": True, "has_touch": True}
MESSAGES = ["Please draft my job-search plan", "Focus on remote roles", "Add a weekly schedule"]


def _top(locator) -> float:
    """Where an element starts on the page (not the viewport): scrolling does not change it."""
    return locator.evaluate("(node) => node.getBoundingClientRect().top + window.scrollY")


def _bottom(locator) -> float:
    return locator.evaluate("(node) => node.getBoundingClientRect().bottom + window.scrollY")


def _in_viewport(locator) -> bool:
    return locator.evaluate(
        "(node) => { const box = node.getBoundingClientRect(); return box.top >= 0 && box.bottom <= innerHeight; }"
    )


@pytest.mark.parametrize("locale,lang", [("en-US", "en"), ("zh-TW", "zh-hant")])
def test_on_a_phone_the_plan_is_a_tab_away_not_below_the_conversation(asgi_live_server, tmp_path, locale, lang):
    from playwright.sync_api import expect

    with translation.override(lang):
        names = [gettext("Conversation"), gettext("Your plan")]
    with chromium(tmp_path, locale=locale, **PHONE) as context:
        page = _new_page(context)
        _start_a_session(page, asgi_live_server.url)
        for number, message in enumerate(MESSAGES, start=1):
            page.fill("#message-text", message)
            page.click("#send-button")
            expect(page.locator("#conversation > li.message-agent:not(.pending)")).to_have_count(number)

        tablist = page.get_by_role("tablist")
        expect(tablist).to_be_visible()
        expect(tablist.get_by_role("tab")).to_have_text(names)
        conversation_tab, plan_tab = page.locator("#tab-conversation"), page.locator("#tab-plan")
        expect(conversation_tab).to_have_attribute("aria-selected", "true")
        expect(plan_tab).to_have_attribute("aria-selected", "false")
        expect(page.get_by_role("tabpanel")).to_have_count(1)  # the hidden one is out of the tree
        expect(page.locator("#panel-conversation")).to_have_attribute("aria-labelledby", "tab-conversation")
        expect(page.locator("#panel-plan")).to_be_hidden()
        conversation_end = _bottom(page.locator("#panel-conversation"))
        assert conversation_end > 2 * PHONE["viewport"]["height"]  # a long conversation: the case of the issue

        # At the end of the conversation, where the person types, the tabs are still in sight (sticky).
        page.locator("#message-text").scroll_into_view_if_needed()
        assert _in_viewport(plan_tab)
        plan_tab.tap()
        expect(plan_tab).to_have_attribute("aria-selected", "true")
        expect(page.locator("#panel-plan")).to_be_visible()
        expect(page.locator("#panel-plan")).to_have_attribute("role", "tabpanel")
        expect(page.locator("#panel-conversation")).to_be_hidden()
        expect(page.locator("#plan-current .plan-text")).to_be_visible()
        # The plan starts right under the tabs, where the conversation started, not after it.
        assert _top(page.locator("#plan-current")) < _top(tablist) + PHONE["viewport"]["height"] / 2
        assert _top(page.locator("#plan-current")) < conversation_end / 4

        # The keyboard: arrows move between the tabs, the selection following the focus.
        page.keyboard.press("ArrowLeft")
        expect(conversation_tab).to_be_focused()
        expect(conversation_tab).to_have_attribute("aria-selected", "true")
        expect(page.locator("#panel-conversation")).to_be_visible()
        expect(page.locator("#panel-plan")).to_be_hidden()
        page.keyboard.press("ArrowRight")
        expect(plan_tab).to_be_focused()
        expect(page.locator("#panel-plan")).to_be_visible()
        page.keyboard.press("Home")
        expect(conversation_tab).to_be_focused()
        page.keyboard.press("Tab")  # one stop in the tab list: the next Tab leaves it
        expect(plan_tab).not_to_be_focused()


def _marker(tab) -> dict:
    """The plan tab's change marker as seen (its dot: a pseudo-element) and as a screen reader hears it."""
    return tab.evaluate(
        """(tab) => ({
          dot: getComputedStyle(tab, "::after").content !== "none",
          description: tab.getAttribute("aria-describedby")
            ? document.getElementById(tab.getAttribute("aria-describedby")).textContent : null,
        })"""
    )


@pytest.mark.parametrize("locale,lang", [("en-US", "en"), ("zh-TW", "zh-hant")])
def test_on_a_phone_the_plan_tab_says_when_the_plan_changed_unseen(asgi_live_server, tmp_path, locale, lang):
    from playwright.sync_api import expect

    with translation.override(lang):
        name, description = gettext("Your plan"), gettext("The plan has a new version.")
    with chromium(tmp_path, locale=locale, **PHONE) as context:
        page = _new_page(context)
        _start_a_session(page, asgi_live_server.url)
        plan_tab = page.locator("#tab-plan")
        assert _marker(plan_tab) == {"dot": False, "description": None}  # no plan yet, nothing new

        # A turn saves a plan while the conversation is shown: the tab says so, in sight and to a screen reader.
        page.fill("#message-text", MESSAGES[0])
        page.click("#send-button")
        expect(page.locator("#conversation > li.message-agent:not(.pending)")).to_have_count(1)
        expect(plan_tab).to_have_class("updated")
        assert _marker(plan_tab) == {"dot": True, "description": description}
        expect(page.get_by_role("tab", name=name)).to_have_accessible_description(description)
        expect(plan_tab).to_have_text(name)  # the tab's name is unchanged

        # Looked at, it is no longer new; back on the conversation, the next change marks it again.
        plan_tab.tap()
        expect(plan_tab).not_to_have_class("updated")
        assert _marker(plan_tab) == {"dot": False, "description": None}
        page.locator("#tab-conversation").tap()
        page.fill("#message-text", MESSAGES[1])
        page.click("#send-button")
        expect(page.locator("#conversation > li.message-agent:not(.pending)")).to_have_count(2)
        expect(plan_tab).to_have_class("updated")

        # A reload draws the plan anew: nothing changed, so nothing is marked.
        page.reload()
        expect(page.locator("#conversation > li.message-agent")).to_have_count(2)
        expect(plan_tab).not_to_have_class("updated")


def test_on_a_wide_screen_both_stand_side_by_side_with_no_tabs(asgi_live_server, tmp_path):
    from playwright.sync_api import expect

    with chromium(tmp_path, locale="en-US", viewport={"width": 1280, "height": 900}) as context:
        page = _new_page(context)
        _start_a_session(page, asgi_live_server.url)
        expect(page.locator("#panel-tabs")).to_be_hidden()
        expect(page.locator("#panel-conversation")).to_be_visible()
        expect(page.locator("#panel-plan")).to_be_visible()
        expect(page.get_by_role("tabpanel")).to_have_count(0)
        expect(page.locator("#panel-plan")).to_have_attribute("aria-labelledby", "plan-heading")
        # Narrowed to a phone's width, the tabs come (a window resized, a phone turned).
        page.set_viewport_size({"width": 390, "height": 844})
        expect(page.locator("#panel-tabs")).to_be_visible()
        expect(page.locator("#panel-plan")).to_be_hidden()
        expect(page.get_by_role("tabpanel")).to_have_count(1)
