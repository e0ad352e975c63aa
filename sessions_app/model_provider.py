"""Who else receives what a person sends: the model provider, described for the person.

With a real model configured, every turn sends the resume and the conversation to the model's
provider, which keeps its own copy under its own terms (docs/DATA_INVENTORY.md, "Outside the
service", has the facts and their sources). The page says so before a resume is pasted, the
create answer says so too (`ModelProvider.answer`), and each session records which providers
received its turns (`AgentSession.model_providers`, noted before a turn calls the model).

The provider is known by a short identifier, stored in clear on the session (it is not personal
data): `offline` (no credentials: the offline model answers here and nothing leaves the server),
`gemini-api-paid`, `gemini-api-unpaid` or `vertex-ai` (each described here), or a name of the
operator's own, described by MODEL_PROVIDER_DESCRIPTION. Which service the credentials choose is
`agent.environment.model_service`; which terms apply is the operator's to say (MODEL_PROVIDER):
the Gemini API's paid and unpaid quotas share one key, so an undescribed key is described as
unpaid quota, the worse of the two, and the system checks below warn.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

from django.conf import settings
from django.core import checks
from django.utils.translation import get_language, gettext
from django.utils.translation import gettext_lazy as _

from agent.environment import GEMINI_API, OFFLINE, VERTEX_AI, model_service

GEMINI_API_PAID = "gemini-api-paid"
GEMINI_API_UNPAID = "gemini-api-unpaid"
# What a provider's identifier may be: it is stored on sessions and named in the API.
IDENTIFIER = r"^[a-z0-9][a-z0-9-]{0,39}$"
_identifier = re.compile(IDENTIFIER)
# The fields a description gives in every language of settings.LANGUAGES; and its terms' address.
TEXT_FIELDS = ("name", "retention", "review")


class InLanguages:
    """An operator's text in each language of the service, read in the current one."""

    def __init__(self, texts: dict[str, str]):
        self.texts = texts

    def __str__(self) -> str:
        language = (get_language() or settings.LANGUAGE_CODE).lower()
        return self.texts.get(language) or self.texts.get(language.split("-")[0]) or self.texts[settings.LANGUAGE_CODE]


@dataclass(frozen=True)
class ModelProvider:
    """A provider as the person is told about it; the texts read in the current language."""

    id: str
    name: object  # a lazy translation or InLanguages: str() gives the current language's
    retention: object
    review: object
    terms_url: str  # "" for the offline model

    @property
    def leaves_server(self) -> bool:
        return self.id != OFFLINE

    def notice(self) -> str:
        """In plain words: what is sent, to whom, for how long, and that deleting here leaves their copy."""
        if not self.leaves_server:
            return gettext(
                "Nothing leaves this server: the offline model answers here, and your resume and messages are sent"
                " to no one else."
            )
        return gettext(
            "Each time you send a message, this server sends your resume and the whole conversation so far to"
            " %(name)s. %(retention)s %(review)s Deleting your session here does not delete what %(name)s has kept."
        ) % {"name": self.name, "retention": self.retention, "review": self.review}

    def answer(self) -> dict:
        """What the create answer says about it (api.serializers.ModelProviderNotice)."""
        return {
            "id": self.id,
            "name": str(self.name),
            "leaves_server": self.leaves_server,
            "retention": str(self.retention),
            "review": str(self.review),
            "terms_url": self.terms_url or None,
            "notice": self.notice(),
        }


_GEMINI_API_TERMS = "https://ai.google.dev/gemini-api/terms"
_GEMINI_API_RETENTION = _("Google keeps what it receives for up to 55 days, to detect abuse.")
# From docs/DATA_INVENTORY.md ("The model provider"), which names the sources.
DESCRIBED = {
    OFFLINE: ModelProvider(
        id=OFFLINE,
        name=_("this server's offline model"),
        retention=_("Nothing is sent anywhere, so nothing is kept anywhere else."),
        review=_("No one outside this server receives it."),
        terms_url="",
    ),
    GEMINI_API_PAID: ModelProvider(
        id=GEMINI_API_PAID,
        name=_("Google (Gemini API, paid quota)"),
        retention=_GEMINI_API_RETENTION,
        review=_("Authorized Google employees may read what its abuse detection flags."),
        terms_url=_GEMINI_API_TERMS,
    ),
    GEMINI_API_UNPAID: ModelProvider(
        id=GEMINI_API_UNPAID,
        name=_("Google (Gemini API, unpaid quota)"),
        retention=_GEMINI_API_RETENTION,
        review=_("Google may use it to improve its products, and human reviewers may read it."),
        terms_url=_GEMINI_API_TERMS,
    ),
    VERTEX_AI: ModelProvider(
        id=VERTEX_AI,
        name=_("Google Cloud (Vertex AI)"),
        retention=_("Google Cloud may keep prompts its abuse detection flags for up to 30 days."),
        review=_("Authorized Google employees may read the flagged prompts."),
        terms_url="https://cloud.google.com/vertex-ai/generative-ai/docs/learn/abuse-monitoring",
    ),
}
# Without MODEL_PROVIDER: the Gemini API's key does not tell its quota, so the worse one.
UNDESCRIBED = {GEMINI_API: GEMINI_API_UNPAID, VERTEX_AI: VERTEX_AI}
# The service each described provider runs on.
SERVICE_OF = {GEMINI_API_PAID: GEMINI_API, GEMINI_API_UNPAID: GEMINI_API, VERTEX_AI: VERTEX_AI}


def _parse(raw: str) -> ModelProvider | str:
    """MODEL_PROVIDER_DESCRIPTION read: a provider (its id left blank), or what is wrong with it."""
    try:
        given = json.loads(raw)
    except ValueError:
        given = None
    if not isinstance(given, dict):
        return gettext("it is not a JSON object")
    languages = [code for code, _name in settings.LANGUAGES]
    texts = {}
    for field in TEXT_FIELDS:
        value = given.get(field)
        if not isinstance(value, dict) or not all(_is_text(value.get(code)) for code in languages):
            problem = gettext("%(field)s must give a text in each of %(languages)s")
            return problem % {"field": field, "languages": ", ".join(languages)}
        texts[field] = InLanguages({code: value[code].strip() for code in languages})
    terms_url = given.get("terms_url")
    if not isinstance(terms_url, str) or not re.match(r"^https?://\S+$", terms_url):
        return gettext("terms_url must be the http(s) address of the provider's terms")
    return ModelProvider(id="", terms_url=terms_url, **texts)


def _is_text(value) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _description() -> ModelProvider | str | None:
    raw = settings.MODEL_PROVIDER_DESCRIPTION
    return _parse(raw) if raw else None


def configured() -> ModelProvider:
    """The provider this server's turns go to now. A MODEL_PROVIDER the checks refuse is ignored:
    the description then is the one for an undescribed service."""
    service = model_service()
    if service == OFFLINE:
        return DESCRIBED[OFFLINE]
    declared = settings.MODEL_PROVIDER
    if declared != OFFLINE and _identifier.match(declared):
        description = _description()
        if isinstance(description, ModelProvider):
            return replace(description, id=declared)
        if declared in DESCRIBED:
            return DESCRIBED[declared]
    return DESCRIBED[UNDESCRIBED[service]]


# --- System checks (`manage.py check`, which `serve` runs; the unpaid quota with `--deploy`) ---


@checks.register("model_provider")
def check_model_provider(app_configs=None, **kwargs) -> list:
    service = model_service()
    if service == OFFLINE:
        return []
    declared, description = settings.MODEL_PROVIDER, _description()
    hint = gettext(
        "Set MODEL_PROVIDER to gemini-api-paid, gemini-api-unpaid or vertex-ai, or to a name of your own"
        " described by MODEL_PROVIDER_DESCRIPTION (docs/OPERATIONS.md)."
    )
    if not declared:
        told = DESCRIBED[UNDESCRIBED[service]]
        message = gettext(
            "A real model is configured (%(service)s) but MODEL_PROVIDER does not describe its provider: people"
            " are told the terms of %(name)s."
        ) % {"service": service, "name": told.name}
        return [checks.Warning(message, hint=hint, id="sessions_app.W002")]
    if declared == OFFLINE or not _identifier.match(declared):
        message = gettext("MODEL_PROVIDER=%(value)s is not a provider's name (lowercase letters, digits and dashes).")
        return [checks.Error(message % {"value": declared}, hint=hint, id="sessions_app.E003")]
    if isinstance(description, str):
        message = gettext("MODEL_PROVIDER_DESCRIPTION cannot be used: %(problem)s.") % {"problem": description}
        return [checks.Error(message, hint=hint, id="sessions_app.E004")]
    if description is None and declared not in DESCRIBED:
        message = gettext("MODEL_PROVIDER=%(value)s names no provider this service describes.")
        return [checks.Error(message % {"value": declared}, hint=hint, id="sessions_app.E005")]
    if description is None and SERVICE_OF[declared] != service:
        message = gettext("MODEL_PROVIDER=%(value)s, but the credentials configure %(service)s.")
        return [checks.Warning(message % {"value": declared, "service": service}, hint=hint, id="sessions_app.W006")]
    return []


@checks.register("model_provider", deploy=True)
def check_unpaid_quota(app_configs=None, **kwargs) -> list:
    if configured().id != GEMINI_API_UNPAID:
        return []
    message = gettext(
        "The model runs on the Gemini API's unpaid quota: Google may use what people send to improve its products,"
        " and human reviewers may read it (docs/DATA_INVENTORY.md). Do not serve real people on it."
    )
    hint = gettext("Use a paid quota (a Cloud Billing account) and set MODEL_PROVIDER=gemini-api-paid.")
    return [checks.Warning(message, hint=hint, id="sessions_app.W007")]
