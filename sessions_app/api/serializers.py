"""Request and response shapes of the session API (also the OpenAPI schema).

What the schema says a request may hold is exactly what the server accepts:
the text rules are declared in JSON Schema (`api.schema.CleanTextSchema`)
and checked on the text as sent, so a client or a fuzzer that follows the
schema is never refused, and one that breaks it always is.
"""

import re

from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils.formats import number_format
from django.utils.functional import lazy
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agent.documents.lines import HIDDEN_REASONS, DocumentRefused
from agent.screening import KINDS, MODEL_FLAG_KIND
from sessions_app.api.flags import FlagLabel
from sessions_app.choices import CheckStatus, ReadinessCheck
from sessions_app.exceptions import ModelFailureReason
from sessions_app.model_provider import IDENTIFIER

# Python's whitespace (str.isspace, what str.strip removes), spelled out so the
# patterns mean the same in Python, ECMA (JSON Schema) and Rust regexes.
WHITESPACE_CLASS = r"\t-\r\x1c- \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# A text must match neither (the schema says so with `not`, the server with these).
BLANK_TEXT = rf"^[{WHITESPACE_CLASS}]*$"
NUL_CHARACTER = r"\x00"
_blank = re.compile(BLANK_TEXT)
_nul = re.compile(NUL_CHARACTER)


def _at_most(max_length: int) -> str:
    # DRF's own message puts the bare number in (50000); this one writes it as the language does.
    return gettext("Ensure this field has no more than %(max)s characters.") % {
        "max": number_format(max_length, force_grouping=True)
    }


_at_most_lazy = lazy(_at_most, str)


class CleanTextField(serializers.CharField):
    """A JSON string of 1 to `max_length` characters, some visible, none NUL.

    Checked on the text as sent, not trimmed: the length the schema declares
    is the length the server counts.
    """

    default_error_messages = {"nul": _("Text must not contain NUL characters.")}

    def __init__(self, **kwargs):
        if kwargs.get("max_length") is not None:  # in the request's language, when it is answered
            kwargs["error_messages"] = {
                "max_length": _at_most_lazy(kwargs["max_length"]),
                **kwargs.get("error_messages", {}),
            }
        super().__init__(trim_whitespace=False, min_length=1, **kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):  # CharField would accept numbers
            self.fail("invalid")
        if _nul.search(data):
            self.fail("nul")
        if _blank.match(data):
            self.fail("blank")
        return super().to_internal_value(data)


class CreateSessionRequest(serializers.Serializer):
    resume_text = CleanTextField(max_length=settings.RESUME_MAX_CHARS)


def _provider_id(**kwargs) -> serializers.RegexField:
    return serializers.RegexField(
        IDENTIFIER,
        help_text="`offline` (nothing leaves this server), `gemini-api-paid`, `gemini-api-unpaid`, `vertex-ai`, or"
        " a name the operator gave a provider it describes.",
        **kwargs,
    )


class ModelProviderNotice(serializers.Serializer):
    """Who receives what the person sends with each message, as the web page says it before a resume
    is pasted. The texts are in the client's language."""

    id = _provider_id()
    name = serializers.CharField()
    leaves_server = serializers.BooleanField(
        help_text="false: the offline model answers on this server and nothing is sent anywhere."
    )
    retention = serializers.CharField(help_text="How long the provider keeps what it receives.")
    review = serializers.CharField(help_text="Whether people at the provider may read it, and why.")
    terms_url = serializers.URLField(allow_null=True, help_text="The provider's terms; null for the offline model.")
    notice = serializers.CharField(
        help_text="All of it in plain words: what is sent, to whom, for how long, and that deleting the session"
        " here does not delete the provider's copy."
    )


@extend_schema_field({"type": "string", "format": "binary", "minLength": 1})
class ResumeFileField(serializers.FileField):
    """A file part; or a plain form value in the field (a part sent without a file name), taken as
    that text's UTF-8 bytes, held in memory like any upload."""

    def to_internal_value(self, data):
        if isinstance(data, str):
            if not data:
                self.fail("empty")
            return SimpleUploadedFile("resume", data.encode("utf-8"))  # no suffix: read as text
        return super().to_internal_value(data)


class CreateSessionUpload(serializers.Serializer):
    """A resume as a file: multipart/form-data with one file, in the field `file`."""

    file = ResumeFileField(
        allow_empty_file=False,
        help_text="A PDF, a Word file (.docx), plain text or Markdown (UTF-8), at most UPLOAD_MAX_BYTES"
        " (default 2 MiB). Read in memory, never stored: only the text read from it is kept, as pasted text is.",
    )

    def validate(self, attrs):
        files = self.context.get("files")
        if files is not None and (len(files) > 1 or len(files.getlist("file")) > 1):
            raise serializers.ValidationError({"file": [_("Send exactly one file, in the field named file.")]})
        return attrs


# Why a line of a file would not be seen by the person reading it (agent/documents/lines.py).
HIDDEN_REASON_LABELS = {
    "colour": _("white, or nearly the page's colour"),
    "tiny": _("type smaller than 4 points"),
    "off_page": _("outside the page"),
    "invisible": _("drawn invisible"),
    "under_image": _("covered by an image"),
    "hidden_run": _("marked hidden"),
}


class HiddenReasonLabel(serializers.CharField):
    def to_representation(self, value) -> str:
        return str(HIDDEN_REASON_LABELS[value])


class HiddenLine(serializers.Serializer):
    line = serializers.IntegerField(help_text="The line in `text` (1 = the first).")
    page = serializers.IntegerField(help_text="The page it is on (1 = the first).")
    reason = serializers.ChoiceField(choices=list(HIDDEN_REASONS), help_text="Why a reader would not see it.")
    label = HiddenReasonLabel(source="reason", help_text="`reason` in the client's language.")
    text = serializers.CharField()


class DocumentRead(serializers.Serializer):
    """What was read from a resume file, for the page to show before the first message."""

    kind = serializers.ChoiceField(choices=["pdf", "docx", "text"])
    pages = serializers.IntegerField()
    characters = serializers.IntegerField(help_text="The length of `text`.")
    lines_per_page = serializers.ListField(child=serializers.IntegerField(), help_text="Lines read on each page.")
    text = serializers.CharField(help_text="The resume as read, line by line: what the session holds.")
    hidden_lines = HiddenLine(
        many=True,
        help_text="Lines a reader of the file would not see. They are kept in `text`, and each is flagged"
        " (kind `concealed`, unless the screen names what it does): the agent treats them as untrusted.",
    )
    hidden_notice = serializers.CharField(
        allow_null=True, help_text='"This file holds N lines you cannot see; here they are." Null when none.'
    )


class CreateSessionResponse(serializers.Serializer):
    session_id = serializers.UUIDField()
    token = serializers.CharField(help_text="Shown once. Send it as X-Session-Token.")
    expires_at = serializers.DateTimeField()
    model_provider = ModelProviderNotice(
        help_text="Who this server sends the resume and the conversation to, with each message (its configuration"
        " now; the session's metadata later names the providers that did receive them)."
    )
    document = DocumentRead(required=False, help_text="Present when the resume was sent as a file: what was read.")


class MessageRequest(serializers.Serializer):
    message = CleanTextField(max_length=settings.MESSAGE_MAX_CHARS)


class ToolCall(serializers.Serializer):
    name = serializers.CharField()
    args = serializers.DictField()
    outcome = serializers.ChoiceField(
        choices=["ran", "failed", "unknown"],
        help_text="ran: the tool ran and answered; failed: it answered with an error; unknown: no tool of that"
        " name exists (the model was told so and nothing ran).",
    )


class ClaimCheck(serializers.Serializer):
    claim = serializers.CharField()
    supported = serializers.BooleanField()
    evidence = serializers.CharField(allow_blank=True)


class MessageResponse(serializers.Serializer):
    reply = serializers.CharField(allow_blank=True)
    tool_calls = ToolCall(many=True)
    verification = ClaimCheck(many=True)
    llm_calls = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    latency_ms = serializers.IntegerField()
    model = serializers.CharField()


class _SessionTimes(serializers.Serializer):
    """What the metadata and the export both start with."""

    session_id = serializers.UUIDField()
    created_at = serializers.DateTimeField()
    last_activity_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    turns = serializers.IntegerField()
    model_providers = serializers.ListField(
        child=_provider_id(),
        help_text="The model providers that received the resume and the conversation, in the order first used"
        " (one per configuration the turns ran under; a turn that failed counts, since it was sent). Empty"
        " before the first message: creating a session sends nothing to a model.",
    )


class SuspiciousFlag(serializers.Serializer):
    """A resume line that reads as an instruction to an AI: found by the screen when the session was
    created (`source` screen) or flagged by the model during a turn (`source` model)."""

    source = serializers.ChoiceField(choices=["screen", "model"])
    kind = serializers.ChoiceField(
        choices=[*KINDS, MODEL_FLAG_KIND],
        help_text="What the line does, the same in every language (`label` says it in the client's);"
        " `model` for a flag of the model's.",
    )
    label = FlagLabel(source="kind")
    excerpt = serializers.CharField(allow_blank=True, help_text="The flagged text, as it stands in the resume.")
    reason = serializers.CharField(
        allow_blank=True, help_text="The screen's kind, or the model's own words (not translated)."
    )
    line = serializers.IntegerField(allow_null=True, help_text="The resume line (1 = the first); null if not found.")
    flagged_at = serializers.DateTimeField()


class SessionMetadata(_SessionTimes):
    plan_versions = serializers.IntegerField()
    flags = SuspiciousFlag(
        many=True,
        help_text="Resume lines flagged as instructions aimed at an AI; the guards keep them out of replies,"
        " tool arguments and saved plans.",
    )


class ConversationMessage(serializers.Serializer):
    """A message of the person's (`user`) or a reply of the agent's (`agent`). A reply also carries
    what the turn's answer showed with it: the same claim checks, tool calls and model, so that a
    client shows a conversation read back as it showed it live. They are null in the person's
    messages, and in a reply stored before replies kept them."""

    role = serializers.ChoiceField(choices=["user", "agent"])
    text = serializers.CharField()
    timestamp = serializers.DateTimeField()
    verification = ClaimCheck(many=True, allow_null=True, help_text="The reply's claims, checked; null: see above.")
    tool_calls = ToolCall(many=True, allow_null=True, help_text="The turn's tool calls; null: see above.")
    model = serializers.CharField(allow_null=True, help_text="The model that answered; null: see above.")


class Conversation(serializers.Serializer):
    session_id = serializers.UUIDField()
    messages = ConversationMessage(many=True)


class PlanVersion(serializers.Serializer):
    version = serializers.IntegerField()
    plan = serializers.CharField(allow_blank=True)
    saved_at = serializers.DateTimeField()


class SessionPlan(serializers.Serializer):
    """The plan the agent saved last, and the versions kept (reading it saves nothing)."""

    session_id = serializers.UUIDField()
    current = PlanVersion(allow_null=True, help_text="The latest saved version; null until the agent saves one.")
    versions = PlanVersion(
        many=True,
        help_text="The kept versions, oldest first, the current one last: the newest PLAN_MAX_VERSIONS"
        " (default 20); `version` keeps counting when older ones are dropped.",
    )


class DeletionReceiptNotice(serializers.Serializer):
    """Where the receipt of the session's erasure will be: the log holds it, not the session."""

    url = serializers.CharField(
        help_text="The receipt's path, /deletions/{receipt lookup} (a value only the token gives, not the session id):"
        " 404 until the session is erased."
    )
    about = serializers.CharField(help_text="What the receipt is, in the client's language.")


class SessionExport(_SessionTimes):
    """Everything stored about a session: its metadata and all it holds, and where its erasure's
    receipt will be."""

    resume_text = serializers.CharField()
    conversation = ConversationMessage(many=True)
    plan_versions = PlanVersion(many=True)
    suspicious_flags = SuspiciousFlag(many=True)
    events = serializers.ListField(
        child=serializers.DictField(), help_text="The stored ADK events, tool calls and results included."
    )
    deletion_receipt = DeletionReceiptNotice()


class ErrorResponse(serializers.Serializer):
    detail = serializers.CharField()


class FileRefusedResponse(ErrorResponse):
    code = serializers.ChoiceField(
        choices=[f"file_{code}" for code in DocumentRefused.CODES],
        required=False,
        help_text="Why the file was not read: the same in every language (`detail` is in the client's). Absent"
        " from a 415 for a body that is neither JSON nor a form.",
    )


class SessionFullResponse(ErrorResponse):
    code = serializers.ChoiceField(
        choices=["session_turn_limit", "session_size_limit"],
        required=False,
        help_text="Present when the session is full; absent when another turn is running.",
    )


class ModelFailureResponse(ErrorResponse):
    code = serializers.ChoiceField(
        choices=[f"model_{reason}" for reason in ModelFailureReason],
        help_text="What the model did: the same in every language (`detail` is in the client's).",
    )


class TurnUnavailableResponse(ErrorResponse):
    code = serializers.ChoiceField(
        choices=["model_quota", "model_unavailable", "busy"],
        help_text="The model is out of quota or unavailable, or this server already runs as many turns as it may"
        " (`busy`, AGENT_MAX_TURNS_IN_FLIGHT): the same in every language.",
    )


class ThrottledResponse(ErrorResponse):
    code = serializers.ChoiceField(
        choices=["turns_in_flight"],
        required=False,
        help_text="`turns_in_flight`: this client (its address, or its network) already has as many turns in"
        " flight as it may (AGENT_MAX_TURNS_PER_CLIENT and the network bounds); absent when a rate limit is"
        " reached. Send it again after Retry-After.",
    )


class ServerBusyResponse(ErrorResponse):
    code = serializers.ChoiceField(
        choices=["busy"],
        help_text="Every database connection of this server process is in use (DATABASE_POOL_SIZE on PostgreSQL):"
        " nothing was done; send it again after Retry-After.",
    )


class StorageFullResponse(ErrorResponse):
    code = serializers.ChoiceField(
        choices=["storage_low", "storage_full"],
        help_text="`storage_low`: new content is refused while the service is short of storage space;"
        " `storage_full`: the database refused a write, its disk is full. Nothing of the request was stored;"
        " deleting a session still works.",
    )


def _error_messages(help_text: str) -> serializers.ListField:
    return serializers.ListField(child=serializers.CharField(), required=False, help_text=help_text)


class CreateSessionErrors(serializers.Serializer):
    """A 400 of POST /agent/sessions: the field's errors, or `detail` when the body is not JSON."""

    resume_text = _error_messages("Why resume_text was refused.")
    file = _error_messages("Why the file was refused: none, empty, or more than one.")
    non_field_errors = _error_messages("The body is JSON but not an object.")
    detail = serializers.CharField(required=False, help_text="The body is not valid JSON.")


class ConsistencyErrors(serializers.Serializer):
    """A 400 of GET /deletions/consistency: why `from` or `to` was refused."""

    to = _error_messages("Why to was refused.")


# `from` is a Python keyword: declared beside the class body.
ConsistencyErrors._declared_fields["from"] = _error_messages("Why from was refused.")


class MessageErrors(serializers.Serializer):
    """A 400 of POST .../messages: the field's errors, or `detail` when the body is not JSON."""

    message = _error_messages("Why message was refused.")
    non_field_errors = _error_messages("The body is JSON but not an object.")
    detail = serializers.CharField(required=False, help_text="The body is not valid JSON.")


# --- The probes: /healthz and /readyz (sessions_app/api/health.py) ---------------------------------


class HealthResponse(serializers.Serializer):
    status = serializers.ChoiceField(choices=[CheckStatus.OK.value], help_text="The process answers.")


class ReadinessChecks(serializers.Serializer):
    """One status per check, and nothing else: no count, no reason, no name of a file or a server."""


for _check in ReadinessCheck:
    ReadinessChecks._declared_fields[_check.value] = serializers.ChoiceField(
        choices=[status.value for status in CheckStatus],
        help_text=f"The {_check.value} check (`not_configured`: nothing to ask on this server).",
    )


class ReadinessResponse(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=[CheckStatus.OK.value, CheckStatus.FAILING.value], help_text="`failing` when a check is failing (503)."
    )
    checks = ReadinessChecks()
