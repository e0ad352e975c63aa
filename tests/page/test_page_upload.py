"""A person starts a session from a resume file on the page at / (issue 46), in real Chromium, in
both languages: a PDF dropped on the box and a DOCX picked, each read and shown before the first
message (the text, and "this file holds N lines you cannot see; here they are" with those lines),
then a message and the session deleted. Raw scans of the database's files and the cache then find
neither the markers the files' text held nor any piece of the files' bytes."""

import base64

import pytest
from django.utils import translation
from django.utils.translation import gettext, ngettext

from sessions_app.api.serializers import HIDDEN_REASON_LABELS
from sessions_app.page.views import _script_strings
from tests.erasure.test_erasure_e2e import _cache_text
from tests.page.test_page_browser import LOCALES, _fill, _new_page, on_console_violation
from tests.privacy.test_upload_leaks import files_found_in, pieces
from tests.support.browser import chromium, needs_chromium
from tests.support.documents import Text, content, docx, lines_at, pdf
from tests.support.privacy import find_in_text, find_markers

pytestmark = [needs_chromium, pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.slow]

PDF_MARKER, PDF_HIDDEN = "Fernhollow-Pdf-3318", "Gorsewick-Hidden-7402"
DOCX_MARKER, DOCX_HIDDEN = "Marrowby-Docx-5561", "Thistlecombe-Hidden-2290"
RESUME = ["Ada Brightwater", "Experience", "Logistics Analyst, Harbor Freight (2019-2024)"]

DROP = """([selector, name, type, data]) => {
  const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
  const transfer = new DataTransfer();
  transfer.items.add(new File([bytes], name, { type }));
  document.querySelector(selector).dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true }));
}"""


def resume_files() -> dict[str, tuple[bytes, str, str]]:
    """name: (bytes, the visible marker's line, the hidden line)."""
    visible = f"{RESUME[2]} {PDF_MARKER}"
    drawn = [*lines_at([*RESUME[:2], visible]), Text(PDF_HIDDEN, y=300, size=1)]
    word = docx([(RESUME[0], {"style": "Heading 1"}), (f"Analyst {DOCX_MARKER}", {}), (DOCX_HIDDEN, {"hidden": True})])
    return {
        "resume.pdf": (pdf([content(drawn)], compress=True), visible, PDF_HIDDEN),
        "resume.docx": (word, f"Analyst {DOCX_MARKER}", DOCX_HIDDEN),
    }


@pytest.mark.parametrize("locale,lang", LOCALES)
def test_a_file_is_read_shown_with_its_hidden_lines_talked_about_and_deleted(
    asgi_live_server, stored_files, tmp_path, locale, lang
):
    from playwright.sync_api import expect

    with translation.override(lang):
        strings = _script_strings()
        notice = ngettext(
            "This file holds %(count)d line you cannot see; here it is.",
            "This file holds %(count)d lines you cannot see; here they are.",
            1,
        ) % {"count": 1}
        heading = gettext("What was read from your file")
        reasons = {
            "resume.pdf": str(HIDDEN_REASON_LABELS["tiny"]),
            "resume.docx": str(HIDDEN_REASON_LABELS["hidden_run"]),
        }
    files = resume_files()
    violations = []
    with chromium(tmp_path, locale=locale, viewport={"width": 1280, "height": 900}) as context:
        page = _new_page(context)
        page.on("console", lambda message: violations.append(message.text) if on_console_violation(message) else None)
        for name, (data, visible, hidden) in files.items():
            page.goto(f"{asgi_live_server.url}/")
            if name.endswith(".pdf"):  # dropped on the box
                page.evaluate(DROP, ["#file-drop", name, "application/pdf", base64.b64encode(data).decode()])
            else:  # picked
                page.set_input_files(
                    "#resume-file", {"name": name, "mimeType": "application/octet-stream", "buffer": data}
                )
            expect(page.locator("#file-chosen")).to_have_text(_fill(strings["file_chosen"], name=name))
            page.click("#start-button")
            page.click("#key-done")
            # Under load a new reader worker's start and the read take seconds: wait as actions do.
            expect(page.locator("#document")).to_be_visible(timeout=30_000)
            expect(page.locator("#document-heading")).to_have_text(heading)
            expect(page.locator("#document-text")).to_contain_text(visible)
            expect(page.locator("#document-text")).to_contain_text(hidden)
            expect(page.locator("#hidden-notice")).to_have_text(notice)
            expect(page.locator("#hidden-lines > li")).to_have_count(1)
            expect(page.locator("#hidden-lines > li q")).to_have_text(hidden)
            expect(page.locator("#hidden-lines > li")).to_contain_text(reasons[name])
            expect(page.locator("#flags")).to_be_visible()  # the hidden line is flagged too

            page.fill("#message-text", "Please draft my job-search plan")
            page.click("#send-button")
            # The turn over, its reply and the session read again (Send is enabled last), not only begun: the
            # reply being written counts among the items, and a delete while the turn runs races the turn's
            # follow-up read of the session, which can then answer 404 over the deleted view.
            expect(page.locator("#conversation > li.message-agent:not(.pending)")).to_have_count(1, timeout=30_000)
            expect(page.locator("#send-button")).to_be_enabled(timeout=30_000)
            page.click("#delete")
            page.click("#delete-confirm")
            expect(page.locator("#deleted-view")).to_be_visible(timeout=30_000)  # an erasure under load
            expect(page.locator("#document")).to_be_hidden()
            expect(page.locator("#document-text")).to_have_text("")
    assert violations == []

    markers = [PDF_MARKER, PDF_HIDDEN, DOCX_MARKER, DOCX_HIDDEN]
    stored = stored_files()
    assert find_markers(stored, markers) == []
    assert files_found_in({name: data for name, (data, _v, _h) in files.items()}, stored) == []
    cache = _cache_text()
    assert find_in_text(cache, markers) == []
    assert [name for name, (data, _v, _h) in files.items() for p in pieces(data) if p.hex() in cache] == []
