"""Who else sees a resume (issue 30): the model provider, as the operator describes it, told to the
person before pasting (the page, the create answer) and recorded on the session for every provider
its turns went to (the metadata, the export); the system checks warn about an undescribed or
unpaid-quota provider. The browser shows the notice in tests/page/test_page_browser.py."""

import json
import re
from pathlib import Path

import pytest
from django.core import checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.utils import translation
from django.utils.html import escape

from sessions_app import model_provider
from sessions_app.models import AgentSession
from tests.support.gemini_double import text_answer
from tests.support.session_client import say

pytestmark = pytest.mark.django_db
DRAFT_MESSAGE = "Please draft my job-search plan"
INVENTORY = Path(__file__).resolve().parents[2] / "docs" / "DATA_INVENTORY.md"

CUSTOM = {
    "name": {"en": "Example Cloud (zero retention)", "zh-hant": "範例雲端（不保留）"},
    "retention": {"en": "Example Cloud keeps nothing.", "zh-hant": "範例雲端不保留任何內容。"},
    "review": {"en": "No one at Example Cloud reads it.", "zh-hant": "範例雲端沒有人會閱讀。"},
    "terms_url": "https://example.org/terms",
}


@pytest.fixture
def environment(monkeypatch, settings):
    """Configures the model's credentials and the operator's description of its provider."""

    def configure(*, key=False, vertex=False, provider="", description=None):
        for name in ("GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"):
            monkeypatch.delenv(name, raising=False)
        if key:
            monkeypatch.setenv("GOOGLE_API_KEY", "key-of-no-account")
        if vertex:
            monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
            monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "example-project")
        settings.MODEL_PROVIDER = provider
        settings.MODEL_PROVIDER_DESCRIPTION = "" if description is None else description

    return configure


def _metadata(api, session_id, token) -> dict:
    return api.get(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).json()


def _export(api, session_id, token) -> dict:
    return api.get(f"/agent/sessions/{session_id}/export", HTTP_X_SESSION_TOKEN=token).json()


# --- Which provider, described how ---------------------------------------------------------------


@pytest.mark.parametrize(
    "configuration,expected",
    [
        ({}, "offline"),
        ({"provider": "gemini-api-paid"}, "offline"),  # no credentials: nothing leaves, whatever is declared
        ({"key": True}, "gemini-api-unpaid"),  # a key does not tell its quota: the worse one
        ({"key": True, "provider": "gemini-api-paid"}, "gemini-api-paid"),
        ({"key": True, "provider": "gemini-api-unpaid"}, "gemini-api-unpaid"),
        ({"vertex": True}, "vertex-ai"),
        ({"key": True, "provider": "made-up"}, "gemini-api-unpaid"),  # undescribed: refused by the check
        ({"key": True, "provider": "Not A Name!", "description": json.dumps(CUSTOM)}, "gemini-api-unpaid"),
        ({"key": True, "provider": "example-cloud", "description": json.dumps(CUSTOM)}, "example-cloud"),
        ({"key": True, "provider": "example-cloud", "description": "{not json"}, "gemini-api-unpaid"),
    ],
)
def test_the_configured_provider(environment, configuration, expected):
    environment(**configuration)
    assert model_provider.configured().id == expected


def test_the_built_in_descriptions_follow_the_data_inventory(environment):
    """The facts docs/DATA_INVENTORY.md states, with its sources as the terms' addresses."""
    inventory = INVENTORY.read_text(encoding="utf-8")
    described = model_provider.DESCRIBED
    with translation.override("en"):
        for paid in ("gemini-api-paid", "gemini-api-unpaid"):
            assert "55 days" in str(described[paid].retention)
            assert described[paid].terms_url in inventory
        assert "human reviewers may read" in str(described["gemini-api-unpaid"].review)
        assert "human reviewers" not in str(described["gemini-api-paid"].review)
        assert "30 days" in str(described["vertex-ai"].retention)
        assert described["vertex-ai"].terms_url in inventory
        assert not described["offline"].leaves_server and described["offline"].terms_url == ""


@pytest.mark.parametrize("lang", ["en", "zh-hant"])
def test_an_operators_description_is_told_in_each_language(environment, lang):
    environment(key=True, provider="example-cloud", description=json.dumps(CUSTOM))
    with translation.override(lang):
        answer = model_provider.configured().answer()
    assert answer["name"] == CUSTOM["name"][lang]
    assert CUSTOM["retention"][lang] in answer["notice"] and CUSTOM["review"][lang] in answer["notice"]
    assert answer["terms_url"] == CUSTOM["terms_url"] and answer["leaves_server"] is True


def test_the_documented_description_is_accepted(environment):
    """docs/OPERATIONS.md's example, as an operator would paste it."""
    operations = (INVENTORY.parent / "OPERATIONS.md").read_text(encoding="utf-8")
    name = re.search(r"^MODEL_PROVIDER=(\S+)$", operations, re.MULTILINE).group(1)
    description = re.search(r"^MODEL_PROVIDER_DESCRIPTION='(.*?)'$", operations, re.MULTILINE | re.DOTALL).group(1)
    environment(key=True, provider=name, description=description)
    assert _check_ids(deploy=True) == []
    assert model_provider.configured().id == name


# --- The system checks ---------------------------------------------------------------------------


def _check_ids(deploy: bool = False) -> list[str]:
    found = checks.run_checks(tags=["model_provider"], include_deployment_checks=deploy)
    return sorted(message.id for message in found)


@pytest.mark.parametrize(
    "configuration,plain,deploy",
    [
        ({}, [], []),
        ({"key": True}, ["sessions_app.W002"], ["sessions_app.W002", "sessions_app.W007"]),
        ({"vertex": True}, ["sessions_app.W002"], ["sessions_app.W002"]),
        ({"key": True, "provider": "gemini-api-paid"}, [], []),
        ({"key": True, "provider": "gemini-api-unpaid"}, [], ["sessions_app.W007"]),
        ({"vertex": True, "provider": "vertex-ai"}, [], []),
        ({"vertex": True, "provider": "gemini-api-paid"}, ["sessions_app.W006"], ["sessions_app.W006"]),
        ({"key": True, "provider": "offline"}, ["sessions_app.E003"], ["sessions_app.E003", "sessions_app.W007"]),
        ({"key": True, "provider": "example-cloud"}, ["sessions_app.E005"], ["sessions_app.E005", "sessions_app.W007"]),
        ({"key": True, "provider": "example-cloud", "description": json.dumps(CUSTOM)}, [], []),
        (
            {"key": True, "provider": "example-cloud", "description": json.dumps({**CUSTOM, "review": {"en": "x"}})},
            ["sessions_app.E004"],
            ["sessions_app.E004", "sessions_app.W007"],
        ),
    ],
)
def test_the_checks_warn_about_an_undescribed_or_unpaid_provider(environment, configuration, plain, deploy):
    environment(**configuration)
    assert _check_ids() == plain
    assert _check_ids(deploy=True) == deploy


def test_manage_py_check_warns_for_a_real_model_without_a_provider_description(environment):
    """Registered: plain `manage.py check` reports it (and `serve` runs that check at start-up)."""
    environment(key=True)
    with pytest.raises(SystemCheckError, match="sessions_app.W002"):
        call_command("check", fail_level="WARNING")
    environment(key=True, provider="gemini-api-paid")
    call_command("check", fail_level="WARNING")


# --- The create answer, the page -----------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "zh-hant"])
def test_the_create_answer_says_who_receives_the_resume(api, environment, lang):
    environment(key=True, provider="gemini-api-paid")
    created = api.post(
        "/agent/sessions", {"resume_text": "Lin Yu\nData analyst"}, format="json", HTTP_ACCEPT_LANGUAGE=lang
    )
    assert created.status_code == 201
    with translation.override(lang):
        expected = model_provider.DESCRIBED["gemini-api-paid"].answer()
    assert created.json()["model_provider"] == expected
    assert expected["id"] == "gemini-api-paid" and expected["leaves_server"] is True
    assert "55" in expected["retention"] and expected["terms_url"].startswith("https://")


def test_the_create_answer_offline_says_nothing_leaves(api, in_english):
    created = api.post("/agent/sessions", {"resume_text": "Lin Yu\nData analyst"}, format="json").json()
    assert created["model_provider"]["id"] == "offline"
    assert created["model_provider"]["leaves_server"] is False and created["model_provider"]["terms_url"] is None
    assert created["model_provider"]["notice"].startswith("Nothing leaves this server")


@pytest.mark.parametrize("lang", ["en", "zh-hant"])
@pytest.mark.parametrize("configuration", [{}, {"key": True, "provider": "gemini-api-unpaid"}])
def test_the_page_tells_it_before_the_resume_box(client, environment, configuration, lang):
    environment(**configuration)
    page = client.get("/", HTTP_ACCEPT_LANGUAGE=lang).content.decode()
    with translation.override(lang):
        provider = model_provider.configured()
        notice = provider.notice()
    notice_at = page.find(f'<p id="provider-text">{escape(notice)}</p>')
    assert 0 < notice_at < page.find('<textarea id="resume-text"')
    assert (f'id="provider-terms" href="{provider.terms_url}"' in page) is provider.leaves_server


def test_the_page_tells_a_new_description_at_once(client, environment):
    """The page is rendered once a process (sessions_app/page/views.py): a changed description (here a
    setting, for an operator a restart) must not leave the old one on it."""
    environment(key=True, provider="gemini-api-unpaid")
    before = client.get("/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    environment(key=True, provider="example-cloud", description=json.dumps(CUSTOM))
    after = client.get("/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert CUSTOM["terms_url"] not in before and CUSTOM["terms_url"] in after


# --- The session records who received it ---------------------------------------------------------


def test_the_metadata_and_the_export_name_the_providers_that_received_the_turns(api, new_session, request):
    """A session outlives a configuration: offline first, then Gemini (the local double), then a
    failed Gemini turn, which was sent all the same. The row, the metadata and the export say so."""
    session_id, token = new_session()
    assert _metadata(api, session_id, token)["model_providers"] == []  # creating sends nothing to a model
    assert say(api, session_id, token, DRAFT_MESSAGE).status_code == 200
    assert _metadata(api, session_id, token)["model_providers"] == ["offline"]

    gemini_double = request.getfixturevalue("runner_on_gemini_double")  # the operator adds a key and restarts
    gemini_double.answer(text_answer("A first answer from Gemini."))
    assert say(api, session_id, token, "Focus on remote roles").status_code == 200
    gemini_double.answer((400, {"error": {"code": 400, "message": "refused", "status": "INVALID_ARGUMENT"}}))
    assert say(api, session_id, token, "And salary?").status_code == 502
    assert say(api, session_id, token, "Once more").status_code == 200

    seen = ["offline", "gemini-api-unpaid"]
    assert AgentSession.objects.get(session_id=session_id).model_provider_ids == seen
    assert _metadata(api, session_id, token)["model_providers"] == seen
    assert _export(api, session_id, token)["model_providers"] == seen


@pytest.mark.usefixtures("runner_on_gemini_double")
def test_a_failed_first_turn_still_names_its_provider(api, new_session, gemini_double):
    session_id, token = new_session()
    gemini_double.answer((400, {"error": {"code": 400, "message": "refused", "status": "INVALID_ARGUMENT"}}))
    assert say(api, session_id, token, DRAFT_MESSAGE).status_code == 502
    assert _metadata(api, session_id, token)["model_providers"] == ["gemini-api-unpaid"]


@pytest.mark.parametrize(
    ("description", "problem"),
    [
        ("not JSON", "it is not a JSON object"),
        ("[]", "it is not a JSON object"),
        (json.dumps({**CUSTOM, "name": "Example Cloud"}), "name must give a text in each of zh-hant, en"),
        (json.dumps({**CUSTOM, "review": {"en": "x", "zh-hant": " "}}), "review must give a text in each of"),
        (json.dumps({**CUSTOM, "terms_url": 7}), "terms_url must be the http(s) address of the provider's terms"),
        (json.dumps({**CUSTOM, "terms_url": "ftp://example.org/terms"}), "terms_url must be the http(s) address"),
    ],
)
def test_an_unusable_description_is_told_with_its_problem(environment, description, problem):
    """The operator's E004 says what is wrong, in the words of the check that found it."""
    environment(key=True, provider="example-cloud", description=description)
    with translation.override("en"):
        [error] = checks.run_checks(tags=["model_provider"])
    assert error.id == "sessions_app.E004" and problem in error.msg


@pytest.mark.parametrize(
    ("lang", "told"), [("en", "English"), ("en-gb", "English"), ("zh-hant", "中文"), ("fr", "English")]
)
def test_an_operators_text_is_read_in_the_language_or_its_base_or_the_default(settings, lang, told):
    """`en-gb` reads the `en` text; a language the service does not speak, LANGUAGE_CODE's (en)."""
    text = model_provider.InLanguages({"en": "English", "zh-hant": "中文"})
    with translation.override(lang):
        assert str(text) == told
