"""Request and response shapes of the passkey accounts' API (docs/ACCOUNTS.md), also its schema.

Binary values travel as base64url without padding, as WebAuthn's JSON does. What the browser
wraps (a session's token under a passkey's or the recovery code's key) is only ever bytes here:
checked for its length, stored, and returned as it came.
"""

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from sessions_app.api.serializers import ErrorResponse
from sessions_app.security.passkeys import b64url, from_b64url

# base64url without padding: every length but 1 (mod 4), so whatever the pattern lets through decodes.
BASE64URL = r"^(?:[A-Za-z0-9_-]{4})*(?:[A-Za-z0-9_-]{2,3})?$"


class Base64UrlField(serializers.RegexField):
    """Bytes as base64url (no padding), from `min_bytes` to `max_bytes` once decoded."""

    default_error_messages = {"size": _("This value must be from {min} to {max} bytes, in base64url.")}

    def __init__(self, *, min_bytes: int, max_bytes: int, **kwargs):
        self.min_bytes, self.max_bytes = min_bytes, max_bytes
        # Base64url's length for that many bytes, padding left out.
        kwargs.setdefault("min_length", (min_bytes * 4 + 2) // 3)
        kwargs.setdefault("max_length", (max_bytes * 4 + 2) // 3)
        super().__init__(BASE64URL, **kwargs)

    def run_validation(self, data=serializers.empty):
        if data is not serializers.empty and data is not None and not isinstance(data, str):
            self.fail("invalid")  # CharField would take a number
        text = super().run_validation(data)  # the string checked as the schema says (length, pattern)
        if text is None or text is serializers.empty:
            return text
        try:
            value = from_b64url(text)
        except ValueError:
            self.fail("invalid")
        # A value the schema allows is never refused here: its length in characters bounds its bytes.
        if not self.min_bytes <= len(value) <= self.max_bytes:
            self.fail("size", min=self.min_bytes, max=self.max_bytes)
        return value

    def to_representation(self, value):
        return b64url(bytes(value))


class EmptyRequest(serializers.Serializer):
    """A ceremony's beginning takes nothing: `{}` (or no body)."""


class CeremonyOptions(serializers.Serializer):
    options = serializers.DictField(
        help_text="PublicKeyCredentialCreationOptions (registering, adding a passkey) or"
        " PublicKeyCredentialRequestOptions (signing in) as JSON, binary values in base64url: give them to"
        " PublicKeyCredential.parseCreationOptionsFromJSON / parseRequestOptionsFromJSON. The challenge"
        " answers one ceremony, once, within ACCOUNT_CHALLENGE_SECONDS."
    )


class PasskeyResponseField(serializers.DictField):
    """What navigator.credentials.create() or .get() gave, as PublicKeyCredential.toJSON() writes it."""

    def __init__(self, **kwargs):
        kwargs.setdefault(
            "help_text",
            "The PublicKeyCredential as PublicKeyCredential.toJSON() gives it (id, rawId, type, response, ...).",
        )
        super().__init__(**kwargs)


RECOVERY_VERIFIER_HELP = (
    "32 bytes the browser derives from the recovery code (HKDF-SHA256, info"
    ' "resume-agent/v1/recovery-verifier"), never the code itself; the server keeps their SHA-256.'
)


class RegistrationRequest(serializers.Serializer):
    credential = PasskeyResponseField()
    recovery_verifier = Base64UrlField(min_bytes=32, max_bytes=32, required=False, help_text=RECOVERY_VERIFIER_HELP)


class SignInRequest(serializers.Serializer):
    credential = PasskeyResponseField()


class RecoverySignInRequest(serializers.Serializer):
    recovery_verifier = Base64UrlField(min_bytes=32, max_bytes=32, help_text=RECOVERY_VERIFIER_HELP)


class SignedInResponse(serializers.Serializer):
    account_id = serializers.CharField()
    account_token = serializers.CharField(
        help_text="Shown once. Send it as X-Account-Token; it ends at expires_at or when you sign out."
    )
    expires_at = serializers.DateTimeField()


class PasskeyDescription(serializers.Serializer):
    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    transports = serializers.ListField(child=serializers.CharField())
    backup_eligible = serializers.BooleanField(help_text="A passkey that can be synced (to other devices).")
    backed_up = serializers.BooleanField(help_text="Synced, as its authenticator last said.")


class AccountDescription(serializers.Serializer):
    account_id = serializers.CharField()
    created_at = serializers.DateTimeField()
    last_sign_in_at = serializers.DateTimeField(allow_null=True)
    has_recovery_code = serializers.BooleanField()
    passkeys = PasskeyDescription(many=True)
    sessions = serializers.IntegerField(help_text="How many live sessions the account keeps.")


class KeptSession(serializers.Serializer):
    session_id = serializers.CharField()
    created_at = serializers.DateTimeField()
    last_activity_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    turns = serializers.IntegerField(help_text="The person's messages so far.")


class KeptSessions(serializers.Serializer):
    sessions = KeptSession(many=True)


class WrappedToken(serializers.Serializer):
    credential_id = serializers.RegexField(
        BASE64URL,
        allow_null=True,
        min_length=2,
        max_length=1400,
        help_text="The passkey whose PRF output the token is wrapped under (its credential id, base64url);"
        " null: wrapped under the recovery code.",
    )
    salt = Base64UrlField(
        min_bytes=16, max_bytes=64, help_text="The HKDF salt, random for each passkey (and for the recovery code)."
    )
    wrapped = Base64UrlField(
        min_bytes=28, max_bytes=512, help_text="AES-GCM's 12-byte nonce, then the ciphertext of the token and its tag."
    )


# The ids the API gives (UUIDs), and any id of the same letters, so an odd one is a miss (the one 404).
SESSION_ID = r"^[A-Za-z0-9._-]{1,128}$"


class KeepSessionRequest(serializers.Serializer):
    session_id = serializers.RegexField(
        SESSION_ID, max_length=128, help_text="The session's id, as POST /agent/sessions gave it."
    )
    wrapped_tokens = serializers.ListField(child=WrappedToken(), min_length=1, max_length=32)


class SessionEnvelope(serializers.Serializer):
    session_id = serializers.CharField()
    wrapped_tokens = WrappedToken(many=True)


class AccountErasedResponse(serializers.Serializer):
    sessions_erased = serializers.IntegerField()
    events_erased = serializers.IntegerField()
    passkeys_erased = serializers.IntegerField()
    session_ids = serializers.ListField(child=serializers.CharField(), help_text="The sessions erased, each for good.")


class AccountErrorResponse(ErrorResponse):
    code = serializers.ChoiceField(
        choices=["passkey_refused", "recovery_refused", "session_in_another_account", "last_way_in", "unknown_passkey"],
        required=False,
        help_text="What was refused, the same in every language: `passkey_refused` (the passkey's answer did not"
        " verify, or its challenge was used, expired or unknown: begin again), `recovery_refused`,"
        " `session_in_another_account`, `last_way_in` (the account's only way to sign in), `unknown_passkey`"
        " (a wrapped token names a passkey the account does not have).",
    )
