"""Numbers as each language writes them (issue 44, part 4): grouped by thousands in English and in
Traditional Chinese alike (50,000; Django's own zh_Hant formats write 50000), in templates, in the
API's messages and in the operators' messages."""

import io
from unittest import mock

import pytest
from django.core.management import call_command
from django.utils import translation
from django.utils.formats import number_format

from sessions_app.deletion_log.admin import verification_text
from sessions_app.deletion_log.verification import State, Verification
from sessions_app.erasure import ErasureCounts
from sessions_app.purge import PurgeResult

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("language", ["en", "zh-hant"])
def test_both_languages_group_thousands_with_a_comma(language):
    with translation.override(language):
        assert number_format(50000, force_grouping=True) == "50,000"
        assert number_format(1234567) == "1,234,567"  # USE_THOUSAND_SEPARATOR: templates too


def test_the_chinese_page_writes_its_limits_as_its_script_does(client):
    html = client.get("/", HTTP_ACCEPT_LANGUAGE="zh-TW").content.decode()
    assert "最多 50,000 字元" in html and "最多 4,000 字元" in html
    assert 'maxlength="50000"' in html  # an attribute keeps the bare number


@pytest.mark.parametrize(
    "language,said", [("en-US", "no more than 50,000 characters"), ("zh-TW", "這個欄位最多 50,000 個字元")]
)
def test_the_apis_too_long_message_groups_the_limit(api, language, said):
    api.defaults["HTTP_ACCEPT_LANGUAGE"] = language
    response = api.post("/agent/sessions", {"resume_text": "a" * 50_001}, format="json")
    assert response.status_code == 400
    assert said in response.json()["resume_text"][0]


@pytest.mark.parametrize("language,said", [("en", "12,345 entries and every signed"), ("zh-hant", "12,345")])
def test_the_admins_counts_are_grouped(language, said):
    verified = Verification(State.VERIFIED, checked=12345, size=12345, started_at="2030-01-01T00:00:00+00:00")
    with translation.override(language):
        assert said in verification_text(verified)


def test_the_purge_commands_counts_are_grouped(monkeypatch):
    monkeypatch.setenv("LANG", "zh_TW.UTF-8")
    result = PurgeResult(erased=ErasureCounts(sessions=12345, events=678901), batches=1, seconds=1.5, dry_run=True)
    out = io.StringIO()
    with mock.patch("sessions_app.management.commands.purge_sessions.purge_expired", return_value=result):
        call_command("purge_sessions", "--dry-run", stdout=out)
    assert "會刪除 12,345 個工作階段、678,901 個事件" in out.getvalue()
