"""An operator purges expired sessions and verifies the deletion log in a real headless browser.

Playwright drives Debian's Chromium (`make browser` installs it); Playwright's
own browser downloads are not used. The walk runs in English and in
Traditional Chinese (the browser's language; the texts it expects come from
the catalogues); then it verifies the deletion log. It saves
docs/admin-purge-<language>.png and docs/admin-deletion-log-<language>.png when
missing or UPDATE_SCREENSHOTS=1, so a normal run leaves the committed pictures
alone.
"""

import datetime as dt
import os
import secrets
import shutil
from pathlib import Path

import pytest
from django.utils import timezone

from sessions_app.models import AgentSession, DeletionAudit
from tests.support.browser import chromium, needs_chromium
from tests.support.factories import make_session

DOCS = Path(__file__).resolve().parents[2] / "docs"
# Django's language code, and the browser's locale that asks for it.
LANGUAGES = {"en": "en-US", "zh-hant": "zh-TW"}

pytestmark = [needs_chromium, pytest.mark.browser, pytest.mark.slow]


def _make_session(owner_id, last_activity, events=2):
    make_session(owner_id, last_activity=last_activity, events=events)


@pytest.mark.parametrize("language", LANGUAGES)
def test_operator_purges_expired_sessions_in_the_browser(
    asgi_live_server, django_user_model, settings, tmp_path, language
):
    from django.utils import translation
    from django.utils.translation import gettext
    from playwright.sync_api import expect

    settings.PURGE_BATCH_PAUSE_SECONDS = 0
    with translation.override(language):
        texts = {
            "purge": gettext("Purge expired now"),
            "preview": gettext("%(sessions)s expired sessions with %(events)s events would be deleted now.")
            % {"sessions": 2, "events": 4},
            "confirm": gettext("Purge expired sessions"),
            "done": gettext("Purged %(sessions)s expired sessions and %(events)s events.")
            % {"sessions": 2, "events": 4},
            "verify": gettext("Verify the whole log"),
            "started": gettext("The check of the whole log has started: it shows below."),
            "verified": gettext("The deletion log verifies: %(entries)s entries and every signed checkpoint agree.")
            % {"entries": 2},
        }
    # Both languages really differ: a page left in English would fail the zh-hant walk.
    assert language == "en" or texts["purge"] != "Purge expired now"
    # Data first: Playwright's sync API runs an event loop in this thread, and
    # Django refuses ORM calls while one runs.
    password = secrets.token_urlsafe(16)
    django_user_model.objects.create_superuser("operator", password=password)
    now = timezone.now()
    _make_session("anon-expired-1", now - dt.timedelta(hours=30))
    _make_session("anon-expired-2", now - dt.timedelta(hours=48))
    _make_session("anon-live", now - dt.timedelta(hours=2), events=3)

    # The browser's locale is the Accept-Language it sends.
    with chromium(tmp_path, locale=LANGUAGES[language], viewport={"width": 1400, "height": 480}) as context:
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.goto(f"{asgi_live_server.url}/admin/sessions_app/agentsession/")
        page.fill("#id_username", "operator")
        page.fill("#id_password", password)
        page.click("input[type=submit]")

        expect(page.locator("#result_list tbody tr")).to_have_count(3)
        page.click(f"text={texts['purge']}")
        expect(page.locator("#purge-preview")).to_have_text(texts["preview"])
        page.click(f"input[value='{texts['confirm']}']")

        expect(page.locator("ul.messagelist")).to_contain_text(texts["done"])
        expect(page.locator("#result_list tbody tr")).to_have_count(1)
        page.screenshot(path=tmp_path / "admin-purge.png")

        # Then the deletion log: the purge's two entries, and "verify the whole log" starts the check,
        # whose outcome the page shows.
        page.goto(f"{asgi_live_server.url}/admin/sessions_app/deletionlogcheckpoint/")
        expect(page.locator("#log-size")).to_have_text("2")
        page.click(f"input[value='{texts['verify']}']")  # the task runs at once in tests (django-q2's sync)
        expect(page.locator("ul.messagelist")).to_contain_text(texts["started"])
        expect(page.locator("#log-verification")).to_contain_text(texts["verified"])
        page.screenshot(path=tmp_path / "admin-deletion-log.png", full_page=True)

    assert list(AgentSession.objects.values_list("owner_id", flat=True)) == ["anon-live"]
    audit = DeletionAudit.objects.get()
    assert (audit.trigger, audit.sessions_deleted, audit.events_deleted) == ("admin", 2, 4)
    for name in ("admin-purge", "admin-deletion-log"):
        assert (tmp_path / f"{name}.png").read_bytes().startswith(b"\x89PNG")
        screenshot = DOCS / f"{name}-{language}.png"
        if not screenshot.exists() or os.environ.get("UPDATE_SCREENSHOTS") == "1":
            DOCS.mkdir(exist_ok=True)
            shutil.copyfile(tmp_path / f"{name}.png", screenshot)
