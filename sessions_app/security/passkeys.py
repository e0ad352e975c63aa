"""WebAuthn's two ceremonies, verified with py_webauthn: options to send, responses checked.

Nothing here stores anything: the account's use cases (sessions_app.account_services) keep the
challenge and the credential. What this module checks, each in one named place:

- the challenge the client data carries is the one the server issued (the caller finds and
  consumes that challenge: single use, unexpired, for this ceremony: `challenge_of`);
- the origin is one of WEBAUTHN_ORIGINS (a page on another origin is refused);
- the authenticator data's RP id hash is WEBAUTHN_RP_ID's (a passkey of another site is refused);
- the signature, under the credential's public key;
- the sign count: 0 is accepted (synced passkeys never count), a non-zero count that does not
  grow is refused (a cloned authenticator), as WebAuthn Level 3 allows.

User verification is required (a passkey stands for the person, with no password beside it).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from django.conf import settings
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import parse_authentication_credential_json, parse_registration_credential_json
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    CredentialDeviceType,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

CHALLENGE_BYTES = 32
# The header a signed-in request carries its account token in (never a cookie: docs/ACCOUNTS.md).
ACCOUNT_TOKEN_HEADER = "X-Account-Token"

# What the page's script derives its wrapping keys with (docs/ACCOUNTS.md, "What the browser does"),
# handed to it by the page: the server never derives anything with them, it only stores the results.
PRF_INPUT = "resume-agent/v1/prf"
WRAP_INFO = "resume-agent/v1/session-token-wrap"
RECOVERY_VERIFIER_INFO = "resume-agent/v1/recovery-verifier"


class CeremonyRefused(Exception):
    """The response does not verify (or is not a WebAuthn response at all). Its message is for
    the logs of a developer, never shown: the client is told only that it was refused."""


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def from_b64url(text: str) -> bytes:
    """base64url (padding optional) to bytes; ValueError for anything else."""
    if not isinstance(text, str) or not text.isascii():
        raise ValueError("not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ValueError("not base64url") from exc


def origins() -> list[str]:
    return list(settings.WEBAUTHN_ORIGINS)


def rp_id() -> str:
    return settings.WEBAUTHN_RP_ID


def challenge_of(credential: dict) -> bytes:
    """The challenge a response's client data carries, before anything is verified: the caller
    looks it up among the challenges it issued (and consumes it), then verifies against it."""
    try:
        client_data = json.loads(from_b64url(credential["response"]["clientDataJSON"]))
        return from_b64url(client_data["challenge"])
    except (KeyError, TypeError, ValueError) as exc:  # JSONDecodeError is a ValueError
        raise CeremonyRefused("no challenge in the client data") from exc


def registration_options(*, user_handle: str, challenge: bytes, exclude: list[str] = ()) -> dict:
    """navigator.credentials.create()'s options, as JSON: a discoverable passkey (signing in needs
    no name), user verification required, "none" attestation (the server keeps no device model).
    The user's name and display name are the account's id: an account has no name."""
    options = generate_registration_options(
        rp_id=rp_id(),
        rp_name=settings.WEBAUTHN_RP_NAME,
        user_id=user_handle.encode("ascii"),
        user_name=f"account-{user_handle[:8]}",
        user_display_name=f"account-{user_handle[:8]}",
        challenge=challenge,
        timeout=settings.ACCOUNT_CHALLENGE_SECONDS * 1000,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.REQUIRED, user_verification=UserVerificationRequirement.REQUIRED
        ),
        exclude_credentials=[PublicKeyCredentialDescriptor(id=from_b64url(c)) for c in exclude],
    )
    return json.loads(options_to_json(options))


def authentication_options(*, challenge: bytes) -> dict:
    """navigator.credentials.get()'s options, as JSON: any of the site's passkeys may answer."""
    options = generate_authentication_options(
        rp_id=rp_id(),
        challenge=challenge,
        timeout=settings.ACCOUNT_CHALLENGE_SECONDS * 1000,
        user_verification=UserVerificationRequirement.REQUIRED,
    )
    return json.loads(options_to_json(options))


@dataclass(frozen=True)
class NewPasskey:
    credential_id: str  # base64url
    public_key: bytes  # COSE_Key
    sign_count: int
    transports: list[str]
    backup_eligible: bool
    backed_up: bool


@dataclass(frozen=True)
class Assertion:
    credential_id: str
    user_handle: str | None
    sign_count: int
    backed_up: bool


def verify_registration(credential: dict, *, challenge: bytes) -> NewPasskey:
    """A registration response checked against `challenge`, the RP id and the origins."""
    try:
        parsed = parse_registration_credential_json(json.dumps(credential))
        verified = verify_registration_response(
            credential=parsed,
            expected_challenge=challenge,
            expected_rp_id=rp_id(),
            expected_origin=origins(),
            require_user_verification=True,
        )
    # Whatever the bytes make the parser or a check raise is a refusal (the response is the
    # client's, untrusted): py_webauthn's own errors, and CBOR's, cryptography's and Python's.
    except Exception as exc:
        raise CeremonyRefused(str(exc)) from exc
    transports = [str(getattr(t, "value", t)) for t in (parsed.response.transports or [])]
    return NewPasskey(
        credential_id=b64url(verified.credential_id),
        public_key=bytes(verified.credential_public_key),
        sign_count=verified.sign_count,
        transports=transports[:8],
        backup_eligible=verified.credential_device_type == CredentialDeviceType.MULTI_DEVICE,
        backed_up=verified.credential_backed_up,
    )


def assertion_credential_id(credential: dict) -> str:
    """The credential id a response names (to find its public key), normalised to base64url."""
    try:
        return b64url(from_b64url(credential["rawId"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise CeremonyRefused("no credential id") from exc


def verify_assertion(credential: dict, *, challenge: bytes, public_key: bytes, sign_count: int) -> Assertion:
    """An authentication response checked against `challenge`, the RP id, the origins, the
    credential's public key and its last sign count."""
    try:
        parsed = parse_authentication_credential_json(json.dumps(credential))
        verified = verify_authentication_response(
            credential=parsed,
            expected_challenge=challenge,
            expected_rp_id=rp_id(),
            expected_origin=origins(),
            credential_public_key=public_key,
            credential_current_sign_count=sign_count,
            require_user_verification=True,
        )
    # Whatever the bytes make the parser or a check raise is a refusal (the response is the
    # client's, untrusted): py_webauthn's own errors, and CBOR's, cryptography's and Python's.
    except Exception as exc:
        raise CeremonyRefused(str(exc)) from exc
    handle = parsed.response.user_handle
    return Assertion(
        credential_id=b64url(verified.credential_id),
        user_handle=handle.decode("ascii", "replace") if handle else None,
        sign_count=verified.new_sign_count,
        backed_up=verified.credential_backed_up,
    )
