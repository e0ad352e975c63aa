"""The page shows a reply as it is written and keeps what it showed (issue 44, parts 1 and 2), in
real Chromium (Debian's, as tests/page/test_page_browser.py drives it), both languages, at desktop
and phone widths, against the Gemini REST double (tests/support/gemini_double.py) answering in
chunks a model's time apart:

* your message appears at once; the reply being written shows its progress and its first words
  before the turn ends (measured: from Send to the first words, and to the verified reply);
* the verified reply replaces the draft and is announced once to screen readers (a live region);
* Stop ends the turn: nothing of it is stored, and the message is back in the box;
* a reload shows the same claim checks, tool calls and model as the live page did.
"""

import json
import time

import pytest
from django.utils import translation
from django.utils.translation import gettext

from sessions_app.page.views import STORAGE_KEY, _script_strings
from tests.page.test_page_browser import RESUME, _fill, _new_page, _start_a_session, on_console_violation
from tests.support.browser import chromium, needs_chromium
from tests.support.gemini_double import call_answer, text_chunks

pytestmark = [needs_chromium, pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.slow]

LOCALES = [("en-US", "en"), ("zh-TW", "zh-hant")]
VIEWPORTS = {
    "desktop": {"viewport": {"width": 1280, "height": 900}},
    "phone": {
        "viewport": {"width": 390, "height": 844},
        "device_scale_factor": 3,
        "is_mobile": True,
        "has_touch": True,
    },
}
CLAIM = "Built a Python forecasting model that cut late deliveries by 15%."
# The reply, in the pieces the double sends, CHUNK_SECONDS apart (a model writing it).
CHUNKS = [
    "Thanks for sharing your resume. ",
    "You built a Python forecasting model that cut late deliveries by 15%. ",
    "You led a team of 40 engineers at Google from 2015 to 2019. ",
    "Next, apply to three logistics analytics teams a week.",
]
CHUNK_SECONDS = 0.8
STOPPED_MESSAGE = "Now tailor it to remote roles"
# The reply to the stopped message sent again: Markdown, as models write (a heading, bold, a list).
MARKDOWN_REPLY = "## Remote roles\n\n- **Tailor** your summary to remote work.\n- Name the tools you use every day."

# When the first words of the reply being written appear, and when the verified reply replaces them
# (performance.now(), from the click on Send); how often the live region speaks, and what.
MEASURE_TURN = """() => {
  window.turnTimes = { sent: performance.now(), firstWords: null, reply: null };
  window.announcements = [];
  const conversation = document.getElementById("conversation");
  new MutationObserver(() => {
    const draft = conversation.querySelector(".pending .draft");
    if (window.turnTimes.firstWords === null && draft && draft.textContent.trim()) {
      window.turnTimes.firstWords = performance.now();
      window.turnTimes.draftText = draft.textContent;
    }
    const last = conversation.lastElementChild;
    if (window.turnTimes.reply === null && last && last.matches(".message-agent:not(.pending)")) {
      window.turnTimes.reply = performance.now();
    }
  }).observe(conversation, { childList: true, subtree: true, characterData: true });
  new MutationObserver(() => {
    window.announcements.push(document.getElementById("reply-announcer").textContent);
  }).observe(document.getElementById("reply-announcer"), { childList: true, characterData: true, subtree: true });
}"""


def _shown_with(reply) -> dict:
    """What a reply shows beside its text: its claim checks, tool calls and model, as read on the page."""
    return {
        "checks": reply.locator(".checks").text_content(),
        "claims": reply.locator(".claim").count(),
        "tool_calls": reply.locator("details.tool-calls summary").text_content(),
        "tool_names": reply.locator("details.tool-calls li code").all_text_contents(),
        "tool_args": reply.locator("details.tool-calls li pre").all_text_contents(),
        "model": reply.locator("p.model").text_content(),
        "text": reply.locator(".text").text_content(),
    }


def _conversation(page, base: str) -> list[dict]:
    """The session's conversation as the API has it, read with the tab's key (not from the database:
    Playwright's loop runs in this thread)."""
    stored = json.loads(page.evaluate(f"sessionStorage.getItem({json.dumps(STORAGE_KEY)})"))
    answer = page.request.get(
        f"{base}/agent/sessions/{stored['id']}/messages", headers={"X-Session-Token": stored["token"]}
    )
    assert answer.status == 200
    return answer.json()["messages"]


@pytest.mark.parametrize("width", VIEWPORTS)
@pytest.mark.parametrize("locale,lang", LOCALES)
def test_a_reply_streams_stops_and_reads_back_as_shown(
    asgi_live_server, runner_on_gemini_double, tmp_path, locale, lang, width, capsys
):
    from playwright.sync_api import expect

    double = runner_on_gemini_double
    with translation.override(lang):
        strings = _script_strings()
        stop_label = gettext("Stop")
    violations: list[str] = []
    double.answer(
        call_answer("verify_claims", {"claims": [CLAIM]}),
        text_chunks(*CHUNKS, interval=CHUNK_SECONDS),
        # The turn that is stopped: its first words, then a model that takes its time.
        text_chunks("Remote roles suit your analytics work. ", "More soon.", interval=30),
        text_chunks(MARKDOWN_REPLY),
    )
    with chromium(tmp_path, locale=locale, **VIEWPORTS[width]) as context:
        page = _new_page(context)
        page.on("console", lambda message: on_console_violation(message) and violations.append(message.text))
        _start_a_session(page, asgi_live_server.url, RESUME)

        # 1. Send: the message at once, the reply being written below it with its progress, its first
        # words before the turn ends, then the verified reply in its place, announced once.
        page.fill("#message-text", "What stands out on my resume?")
        page.evaluate(MEASURE_TURN)
        page.click("#send-button")
        expect(page.locator("#conversation > li.message-user .text")).to_have_text(["What stands out on my resume?"])
        pending = page.locator("#conversation > li.pending")
        expect(pending.locator(".progress")).to_be_visible()
        expect(page.locator("#stop-button")).to_be_visible()
        expect(page.locator("#stop-button")).to_have_text(stop_label)
        expect(pending.locator(".draft")).to_contain_text(CHUNKS[0].strip())
        assert page.locator("#status").inner_text() == ""  # the progress is not at the top of the page
        progress_box, draft_box = pending.locator(".progress").bounding_box(), pending.locator(".draft").bounding_box()
        assert 0 <= draft_box["y"] - progress_box["y"] < 200  # the progress stands with the draft
        reply = page.locator("#conversation > li.message-agent").last
        expect(reply).not_to_have_class("message message-agent pending", timeout=30_000)
        expect(reply.locator(".text")).to_have_text("".join(CHUNKS).strip())
        expect(page.locator("#stop-button")).to_be_hidden()
        times = page.evaluate("window.turnTimes")
        first_words, whole = times["firstWords"] - times["sent"], times["reply"] - times["sent"]
        assert times["draftText"].strip() == CHUNKS[0].strip()
        # The rest of the reply came CHUNK_SECONDS apart after the first words: they were shown well before.
        assert first_words + 2 * CHUNK_SECONDS * 1000 <= whole, times
        announced = _fill(strings["reply_announcement"], reply="".join(CHUNKS).strip())
        assert page.evaluate("window.announcements") == [announced]
        live = _shown_with(reply)
        assert live["claims"] >= 2 and live["tool_names"] == ["verify_claims"]
        with capsys.disabled():
            print(f"\n[{lang} {width}] first words {first_words:.0f} ms, verified reply {whole:.0f} ms after Send")

        # 2. Stop, once the next reply's first words are shown: nothing of the turn is stored, the
        # message is back in the box, nothing is announced.
        page.fill("#message-text", STOPPED_MESSAGE)
        page.evaluate("window.announcements = []")
        page.click("#send-button")
        expect(page.locator("#conversation > li.pending .draft")).to_contain_text("Remote roles")
        page.click("#stop-button")
        expect(page.locator("#status")).to_have_text(strings["stopped"])
        expect(page.locator("#conversation > li")).to_have_count(2)
        expect(page.locator("#message-text")).to_have_value(STOPPED_MESSAGE)
        expect(page.locator("#message-text")).to_be_focused()
        assert page.evaluate("window.announcements") == []
        time.sleep(1)  # the server sees the hang-up and stops the turn
        said = [message["text"] for message in _conversation(page, asgi_live_server.url) if message["role"] == "user"]
        assert said == ["What stands out on my resume?"]

        # 3. A reload: the same reply, with the same claim checks, tool calls and model as live.
        page.reload()
        expect(page.locator("#session-view")).to_be_visible()
        expect(page.locator("#conversation > li")).to_have_count(2)
        assert _shown_with(page.locator("#conversation > li.message-agent").last) == live

        # 4. The stopped turn left no lock: the same message goes through now. Its reply is Markdown: the
        # page shows it rendered, and the screen reader hears that text, not the Markdown's markers.
        page.fill("#message-text", STOPPED_MESSAGE)
        page.evaluate(MEASURE_TURN)  # (the reload dropped the first one's observers)
        page.click("#send-button")
        expect(page.locator("#conversation > li.message-agent:not(.pending)")).to_have_count(2, timeout=30_000)
        said = [message["text"] for message in _conversation(page, asgi_live_server.url) if message["role"] == "user"]
        assert said == ["What stands out on my resume?", STOPPED_MESSAGE]  # once: the stopped turn was not kept
        markdown_reply = page.locator("#conversation > li.message-agent").last
        expect(markdown_reply.locator(".text strong")).to_have_text("Tailor")
        (announced,) = page.evaluate("window.announcements")
        assert announced == _fill(
            strings["reply_announcement"], reply=markdown_reply.locator(".text").text_content().strip()
        )
        assert "Tailor your summary to remote work." in announced and "Name the tools" in announced
        assert [marker for marker in ("**", "#", "- ") if marker in announced] == [], announced
    assert violations == []


@pytest.mark.parametrize(("locale", "lang"), LOCALES)
def test_deleting_while_a_reply_is_written_shows_the_deletion_and_its_receipt(
    asgi_live_server, runner_on_gemini_double, tmp_path, locale, lang
):
    """Delete, confirmed while a reply is being written: the page hangs up on the turn first and
    shows the deletion with its receipt, not the "not found" that the unfinished turn met once the
    session was erased (which sent the person back to the start, the receipt unseen)."""
    from playwright.sync_api import expect

    with translation.override(lang):
        deleted, receipt_heading = gettext("Session deleted"), gettext("Your deletion receipt")
    # The reply's end comes 3 s after its first words: after the deletion, while the page shows it.
    runner_on_gemini_double.answer(text_chunks("Remote roles suit your analytics work. ", "More soon.", interval=3))
    with chromium(tmp_path, locale=locale, **VIEWPORTS["desktop"]) as context:
        page = _new_page(context)
        _start_a_session(page, asgi_live_server.url, RESUME)
        page.fill("#message-text", STOPPED_MESSAGE)
        page.click("#send-button")
        expect(page.locator("#conversation > li.pending .draft")).to_contain_text("Remote roles")
        page.click("#delete")
        page.click("#delete-confirm")
        expect(page.locator("#deleted-heading")).to_have_text(deleted, timeout=30_000)
        expect(page.locator("#receipt h3")).to_have_text(receipt_heading, timeout=30_000)
        time.sleep(4)  # the turn's end, had the page not hung up on it
        expect(page.locator("#deleted-view")).to_be_visible()
        expect(page.locator("#alert")).to_be_hidden()
