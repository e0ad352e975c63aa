"""A reply's and the plan's Copy buttons, and dark mode (issue 44, "Smaller"), in real Chromium:

* each reply and the current plan have a Copy button; what it copies is the text shown, and
  "Copied." appears beside it, in a polite status region;
* the page follows the system's colour scheme (`prefers-color-scheme`, emulated by Chromium), and
  in both every text the walk shows (the start form, the key panel, replies with their checks and
  tool calls, the plan and its earlier version, the phone's tabs, the delete dialog, an alert)
  keeps a WCAG AA contrast against what it stands on (4.5:1, 3:1 for large text).
"""

import json

import pytest
from django.utils import translation

from sessions_app.page.views import STORAGE_KEY, _script_strings
from tests.page.test_page_browser import RESUME, _new_page
from tests.support.browser import chromium, needs_chromium

pytestmark = [needs_chromium, pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.slow]

DESKTOP = {"viewport": {"width": 1280, "height": 900}}
PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 3, "is_mobile": True, "has_touch": True}
MESSAGES = ["Please draft my job-search plan", "Focus on remote roles"]

# Every visible element holding text of its own: its colour against the first opaque background
# behind it (its own or an ancestor's, as WCAG measures it), and the ratio it must reach. Disabled
# controls are exempt (WCAG 1.4.3), as is text that is out of sight (offscreen).
LOW_CONTRAST = """() => {
  const rgb = (value) => value.match(/[\\d.]+/g).map(Number);
  const luminance = ([r, g, b]) => {
    const [R, G, B] = [r, g, b].map((c) => {
      c /= 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * R + 0.7152 * G + 0.0722 * B;
  };
  const background = (node) => {
    for (let at = node; at; at = at.parentElement) {
      const color = rgb(getComputedStyle(at).backgroundColor);
      if (color.length === 3 || color[3] === 1) return color.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const found = [];
  for (const node of document.querySelectorAll("body *")) {
    const own = Array.from(node.childNodes).some((child) => child.nodeType === 3 && child.textContent.trim());
    if (!own || !node.getClientRects().length || node.closest(".offscreen, [disabled]")) continue;
    const box = node.getBoundingClientRect();
    if (box.right < 0 || box.bottom < 0 || box.width < 2) continue;
    const style = getComputedStyle(node);
    if (style.visibility === "hidden" || Number(style.opacity) === 0) continue;
    const [a, b] = [luminance(rgb(style.color).slice(0, 3)), luminance(background(node))];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const size = parseFloat(style.fontSize);
    const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
    if (ratio < (large ? 3 : 4.5)) {
      const name = `${node.tagName.toLowerCase()}#${node.id}.${node.className}`;
      found.push(`${name} ${ratio.toFixed(2)}: ${node.textContent.trim().slice(0, 40)}`);
    }
  }
  return found;
}"""


def _walk(page, base: str, phone: bool) -> list[str]:
    """The page's states, each measured: what is found low in contrast, by state."""
    from playwright.sync_api import expect

    found = []

    def measure(state):
        found.extend(f"{state}: {line}" for line in page.evaluate(LOW_CONTRAST))

    page.goto(f"{base}/")
    page.fill("#resume-text", RESUME)
    measure("start")
    page.click("#start-button")
    expect(page.locator("#key-value")).not_to_be_empty()
    measure("key")
    page.click("#key-done")
    for number, message in enumerate(MESSAGES, start=1):
        page.fill("#message-text", message)
        page.click("#send-button")
        expect(page.locator("#conversation > li.message-agent:not(.pending)")).to_have_count(number)
    page.locator("details.tool-calls summary").first.click()
    measure("conversation")
    if phone:
        page.click("#tab-plan")
    page.click("#plan-history-summary")
    measure("plan")
    page.click("#delete")
    measure("dialog")
    page.click("#delete-cancel")
    page.click("#close")
    page.fill("#open-key", "not-a-key")
    page.click("#open-button")
    expect(page.locator("#alert")).to_be_visible()
    measure("alert")
    return found


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_every_text_keeps_aa_contrast_in_light_and_dark_mode(asgi_live_server, tmp_path, scheme, size):
    with chromium(tmp_path, locale="en-US", color_scheme=scheme, **(PHONE if size == "phone" else DESKTOP)) as context:
        page = _new_page(context)
        found = _walk(page, asgi_live_server.url, phone=size == "phone")
        paper = page.evaluate("getComputedStyle(document.querySelector('main > section')).backgroundColor")
    assert paper == ("rgb(26, 30, 38)" if scheme == "dark" else "rgb(255, 255, 255)")  # the scheme is followed
    assert found == []


def _written(page, base: str) -> dict:
    """The replies and the current plan as the API keeps them, read with the tab's key."""
    stored = json.loads(page.evaluate(f"sessionStorage.getItem({json.dumps(STORAGE_KEY)})"))
    headers = {"X-Session-Token": stored["token"]}
    messages = page.request.get(f"{base}/agent/sessions/{stored['id']}/messages", headers=headers).json()["messages"]
    plan = page.request.get(f"{base}/agent/sessions/{stored['id']}/plan", headers=headers).json()
    return {"replies": [m["text"] for m in messages if m["role"] == "agent"], "plan": plan["current"]["plan"]}


@pytest.mark.parametrize("locale,lang", [("en-US", "en"), ("zh-TW", "zh-hant")])
def test_a_reply_and_the_plan_each_have_a_copy_button_that_says_it_copied(asgi_live_server, tmp_path, locale, lang):
    from playwright.sync_api import expect

    with translation.override(lang):
        strings = _script_strings()
    with chromium(tmp_path, locale=locale, **DESKTOP) as context:
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=asgi_live_server.url)
        page = _new_page(context)
        page.goto(f"{asgi_live_server.url}/")
        page.fill("#resume-text", RESUME)
        page.click("#start-button")
        page.click("#key-done")
        for number, message in enumerate(MESSAGES, start=1):
            page.fill("#message-text", message)
            page.click("#send-button")
            expect(page.locator("#conversation > li.message-agent:not(.pending)")).to_have_count(number)
        replies = page.locator("#conversation > li.message-agent")
        written = _written(page, asgi_live_server.url)
        for index in range(2):
            reply = replies.nth(index)
            button = reply.get_by_role("button", name=strings["copy_reply"])
            confirmation = reply.locator(".copied")
            expect(confirmation).to_have_attribute("role", "status")  # polite, there before it speaks
            expect(confirmation).to_have_text("")
            button.click()
            expect(confirmation).to_have_text(strings["copied"])
            expect(confirmation).to_be_visible()
            # The reply as written (its Markdown), as the API keeps it; shown rendered.
            assert page.evaluate("navigator.clipboard.readText()") == written["replies"][index]
        expect(page.locator("#status")).to_have_text("")  # said beside the button, not at the top
        plan = page.locator("#plan-current")
        plan.get_by_role("button", name=strings["copy_plan"]).click()
        expect(plan.locator(".copied")).to_have_text(strings["copied"])
        assert page.evaluate("navigator.clipboard.readText()") == written["plan"]
        expect(page.locator("#plan-versions .copy-button")).to_have_count(0)  # the current plan only
        page.reload()  # a reply read back has its button too
        expect(page.locator("#conversation > li.message-agent .copy-button")).to_have_count(2)
