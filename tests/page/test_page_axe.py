"""axe-core (the npm package, tests/page/audit/) finds no violation, with every rule it runs by
default (WCAG 2.x A and AA, best practices), on each step of the person's page and on the admin's
pages, in both languages, at a desktop's and a phone's width, in Debian's Chromium. axe is put in
each page by Playwright (an init script, which the page's CSP does not govern: the page itself
still loads nothing else)."""

import secrets

import pytest

from tests.page.test_page_browser import RESUME, _new_page
from tests.page.test_page_streaming import VIEWPORTS as WIDTHS
from tests.support.audit_tools import audit_tool
from tests.support.browser import chromium, needs_chromium
from tests.support.factories import make_session

pytestmark = [needs_chromium, pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.slow]

LOCALES = ["en-US", "zh-TW"]
RUN_AXE = """async () => {
  const results = await axe.run(document, { resultTypes: ["violations"] });
  return results.violations.map((v) => `${v.id} (${v.impact}): ${v.help} ` +
    JSON.stringify(v.nodes.slice(0, 3).map((n) => n.target.join(" "))));
}"""


def _check(page, step: str, found: dict) -> None:
    page.wait_for_load_state("load")
    violations = page.evaluate(RUN_AXE)
    if violations:
        found[step] = violations


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("locale", LOCALES)
def test_every_step_of_the_page_has_no_axe_violation(asgi_live_server, tmp_path, locale, width):
    from playwright.sync_api import expect

    base, found = asgi_live_server.url, {}
    with chromium(tmp_path, locale=locale, **WIDTHS[width]) as context:
        context.add_init_script(path=str(audit_tool("axe-core/axe.min.js")))
        page = _new_page(context)
        page.goto(f"{base}/")
        _check(page, "1 start", found)
        page.fill("#resume-text", RESUME)
        _check(page, "2 resume pasted", found)
        page.click("#start-button")
        expect(page.locator("#key-view")).to_be_visible()
        _check(page, "3 key panel", found)
        key = page.locator("#key-value").text_content()
        page.click("#key-done")
        for number, message in enumerate(["Please draft my job-search plan", "Focus on remote roles"], start=1):
            page.fill("#message-text", message)
            page.click("#send-button")
            expect(page.locator("#conversation > li.message-agent:not(.pending)")).to_have_count(number)
        for details in page.locator("details.tool-calls").all():
            if details.is_visible():
                details.locator("summary").click()
        _check(page, "4 conversation", found)
        if width == "phone":
            page.locator("#tab-plan").tap()
        if page.locator("#plan-history").is_visible():
            page.locator("#plan-history summary").click()
        _check(page, "5 plan and its earlier version", found)
        page.click("#delete")
        expect(page.locator("#delete-dialog")).to_be_visible()
        _check(page, "6 delete dialog", found)
        page.click("#delete-confirm")
        expect(page.locator("#deleted-view")).to_be_visible()
        _check(page, "7 deleted, with its receipt", found)
        page.goto(f"{base}/")
        page.fill("#open-key", key)
        page.click("#open-button")
        expect(page.locator("#alert")).not_to_be_empty()
        _check(page, "8 the deleted key: not found", found)
        page.goto(f"{base}/no-such-page")
        _check(page, "9 the not-found page", found)
        page.goto(f"{base}/api/docs/")
        _check(page, "10 the API's documentation", found)
    assert found == {}, "\n".join(f"{step}: {v}" for step, vs in found.items() for v in vs)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("locale", LOCALES)
def test_the_admins_pages_have_no_axe_violation(asgi_live_server, django_user_model, tmp_path, locale, width):
    from playwright.sync_api import expect

    base, found = asgi_live_server.url, {}
    password = secrets.token_urlsafe(16)
    django_user_model.objects.create_superuser("operator", password=password)
    session = make_session("anon-live")
    pages = {
        "index": "/admin/",
        "sessions, searched": "/admin/sessions_app/agentsession/?q=anon",
        "a session": f"/admin/sessions_app/agentsession/{session.pk}/change/",
        "purge": "/admin/sessions_app/agentsession/purge/",
        "deletion log": "/admin/sessions_app/deletionlogcheckpoint/",
    }
    with chromium(tmp_path, locale=locale, **WIDTHS[width]) as context:
        context.add_init_script(path=str(audit_tool("axe-core/axe.min.js")))
        page = _new_page(context)
        page.goto(f"{base}/admin/login/")
        _check(page, "login", found)
        page.fill("#id_username", "operator")
        page.fill("#id_password", password)
        page.click("input[type=submit]")
        expect(page.locator("#user-tools")).to_be_visible()
        for step, path in pages.items():
            assert page.goto(f"{base}{path}").status == 200, path
            _check(page, step, found)
    assert found == {}, "\n".join(f"{step}: {v}" for step, vs in found.items() for v in vs)
