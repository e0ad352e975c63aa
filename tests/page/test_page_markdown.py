"""Replies, their drafts and the plan are Markdown rendered safely (issue 44, part 7), in real
Chromium against the Gemini REST double: headings, lists, emphasis, code and links are rendered;
the model's own HTML (<script>, <img onerror>, an element with a handler, a raw HTML block) and a
javascript: link are shown inert, as text; the draft as it streams, the verified reply and the
reply read back after a reload render the same, and the page's strict CSP sees no violation.
"""

import pytest

from tests.page.test_page_browser import RESUME, _new_page, _start_a_session, on_console_violation
from tests.support.browser import chromium, needs_chromium
from tests.support.gemini_double import call_answer, text_answer, text_chunks

pytestmark = [needs_chromium, pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.slow]

POST = "https://jobs.example.com/123"
MESSAGE = f"Here is the job post: {POST} What should I do next?"
# The reply in the pieces the double sends (each piece ends a line: the draft shows whole lines).
REPLY = [
    "## Your next steps\n\n",
    "1. **Apply** to *three* teams a week.\n2. Keep `notes.md` current.\n\n",
    f"Read [the post]({POST}) and [this one](javascript:window.pwned=4).\n\n",
    '<script>window.pwned = 1</script>\n\n<img src=x onerror="window.pwned = 2">\n\n',
    '<div onclick="window.pwned = 3">a raw block</div>\n\nGood luck.',
]
PLAN = (
    "# Plan\n\n1. **Apply** to three teams a week.\n2. Practise `SQL` daily.\n\n"
    '<script>window.pwned = 5</script> <a href="javascript:window.pwned=6">click</a>'
)
INERT = ["<script>window.pwned = 1</script>", '<img src=x onerror="window.pwned = 2">', "a raw block"]

# The draft's rendered HTML, the last time it changed before the verified reply took its place.
WATCH_DRAFT = """() => {
  window.lastDraft = null;
  new MutationObserver(() => {
    const draft = document.querySelector("#conversation .pending .draft");
    if (draft && draft.innerHTML) window.lastDraft = draft.innerHTML;
  }).observe(document.getElementById("conversation"), { childList: true, subtree: true, characterData: true });
}"""


def _rendered(block) -> dict:
    """What a rendered block holds: its elements by kind, and the ones that must never be there."""
    return block.evaluate(
        """(node) => ({
          headings: [...node.querySelectorAll("h1, h2, h3, h4, h5, h6")].map((h) => h.tagName + ":" + h.textContent),
          items: [...node.querySelectorAll("ol > li")].map((li) => li.textContent),
          strong: [...node.querySelectorAll("strong")].map((e) => e.textContent),
          em: [...node.querySelectorAll("em")].map((e) => e.textContent),
          code: [...node.querySelectorAll("code")].map((e) => e.textContent),
          links: [...node.querySelectorAll("a")].map((a) => [a.textContent, a.getAttribute("href"), a.rel]),
          unsafe: [...node.querySelectorAll("script, img, iframe, object, embed, style, div, [style]")].length,
          handlers: [...node.querySelectorAll("*")].flatMap((e) => [...e.attributes].map((a) => a.name))
            .filter((name) => name.startsWith("on")),
          text: node.textContent,
          html: node.innerHTML,
        })"""
    )


@pytest.mark.parametrize("locale", ["en-US", "zh-TW"])
def test_replies_and_the_plan_render_markdown_and_never_the_models_html(
    asgi_live_server, runner_on_gemini_double, tmp_path, locale
):
    from playwright.sync_api import expect

    double = runner_on_gemini_double
    double.answer(
        text_chunks(*REPLY, interval=0.4), call_answer("save_plan", {"plan": PLAN}), text_answer("I saved your plan.")
    )
    violations: list[str] = []
    with chromium(tmp_path, locale=locale, viewport={"width": 1280, "height": 900}) as context:
        page = _new_page(context)
        page.on("console", lambda message: on_console_violation(message) and violations.append(message.text))
        _start_a_session(page, asgi_live_server.url, RESUME)
        page.evaluate(WATCH_DRAFT)
        page.fill("#message-text", MESSAGE)
        page.click("#send-button")
        reply = page.locator("#conversation > li.message-agent:not(.pending)").last
        expect(reply).to_be_visible(timeout=30_000)
        live = _rendered(reply.locator(".text"))
        assert live["headings"] == ["H4:Your next steps"]  # under the conversation's own h3
        assert live["items"] == ["Apply to three teams a week.", "Keep notes.md current."]
        assert live["strong"] == ["Apply"] and live["em"] == ["three"] and live["code"] == ["notes.md"]
        # The javascript: link is no link: its Markdown stays text.
        assert live["links"] == [["the post", POST, "noopener noreferrer nofollow"]]
        assert "[this one](javascript:window.pwned=4)" in live["text"]
        assert live["unsafe"] == 0 and live["handlers"] == []
        for shown in INERT:
            assert shown in live["text"]  # the model's HTML, shown as the text it is
        # The draft rendered the same way as it streamed (its last piece ends no line: the reply shows it).
        draft = page.evaluate("window.lastDraft")
        assert draft and draft in live["html"] and "<h4>Your next steps</h4>" in draft and "<ol>" in draft

        page.fill("#message-text", "Please save a plan.")
        page.click("#send-button")
        plan = page.locator("#plan-current .plan-text")
        expect(plan).to_contain_text("Apply to three teams a week.", timeout=30_000)
        shown_plan = _rendered(plan)
        assert shown_plan["headings"] == ["H4:Plan"] and shown_plan["strong"] == ["Apply"]
        assert shown_plan["code"] == ["SQL"] and shown_plan["links"] == []
        assert shown_plan["unsafe"] == 0 and shown_plan["handlers"] == []
        assert "<script>window.pwned = 5</script>" in shown_plan["text"]

        # Read back: the conversation and the plan as the API gives them render exactly as live.
        page.reload()
        expect(page.locator("#session-view")).to_be_visible()
        read_back = page.locator("#conversation > li.message-agent").first.locator(".text")
        expect(read_back).to_contain_text("Your next steps")
        assert _rendered(read_back) == live
        assert _rendered(page.locator("#plan-current .plan-text")) == shown_plan
        assert page.evaluate("window.pwned") is None
    assert violations == []
