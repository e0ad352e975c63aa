"""Request and response shapes of the session API (also the OpenAPI schema)."""

from django.conf import settings
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers


class CleanTextField(serializers.CharField):
    """Text that must be a JSON string with visible content and no NUL bytes."""

    default_error_messages = {"nul": _("文字不可包含 NUL 字元")}

    def to_internal_value(self, data):
        if not isinstance(data, str):  # CharField would accept numbers
            self.fail("invalid")
        if "\x00" in data:
            self.fail("nul")
        return super().to_internal_value(data)


class CreateSessionRequest(serializers.Serializer):
    resume_text = CleanTextField(max_length=settings.RESUME_MAX_CHARS)


class CreateSessionResponse(serializers.Serializer):
    session_id = serializers.UUIDField()
    token = serializers.CharField(help_text="Shown once. Send it as X-Session-Token.")
    expires_at = serializers.DateTimeField()


class MessageRequest(serializers.Serializer):
    message = CleanTextField(max_length=settings.MESSAGE_MAX_CHARS)


class ToolCall(serializers.Serializer):
    name = serializers.CharField()
    args = serializers.DictField()


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


class SessionMetadata(serializers.Serializer):
    session_id = serializers.UUIDField()
    created_at = serializers.DateTimeField()
    last_activity_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    turns = serializers.IntegerField()
    plan_versions = serializers.IntegerField()


class ConversationMessage(serializers.Serializer):
    role = serializers.ChoiceField(choices=["user", "agent"])
    text = serializers.CharField()
    timestamp = serializers.DateTimeField()


class Conversation(serializers.Serializer):
    session_id = serializers.UUIDField()
    messages = ConversationMessage(many=True)


class ErrorResponse(serializers.Serializer):
    detail = serializers.CharField()
