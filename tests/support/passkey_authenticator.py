"""A software authenticator: real WebAuthn responses without a browser, for the accounts' tests.

It makes what a browser hands the page from navigator.credentials.create() and .get(), serialised
as PublicKeyCredential.toJSON() does: an EC P-256 key (COSE alg -7), authenticator data with the RP
id's hash, flags and sign count, the client data JSON, "none" attestation in CBOR, and ECDSA
signatures over authenticatorData || SHA-256(clientDataJSON). Each field can be made wrong on
purpose (another origin, another RP id, a sign count) to see the server refuse it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import struct
from dataclasses import dataclass, field

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

ORIGIN = "http://localhost:8000"
RP_ID = "localhost"
UP, UV, BE, BS, AT = 0x01, 0x04, 0x08, 0x10, 0x40


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def from_b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class SoftPasskey:
    """One credential. `synced`: backup eligible and backed up, and a sign count always 0 (as
    synced passkeys send); otherwise the count grows by one per assertion."""

    synced: bool = False
    key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    credential_id: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    sign_count: int = 0
    user_handle: bytes = b""

    @property
    def id(self) -> str:
        return b64url(self.credential_id)

    def _flags(self, *, attested: bool) -> int:
        flags = UP | UV | (BE | BS if self.synced else 0)
        return flags | (AT if attested else 0)

    def _cose_key(self) -> bytes:
        numbers = self.key.public_key().public_numbers()
        x, y = numbers.x.to_bytes(32, "big"), numbers.y.to_bytes(32, "big")
        return cbor2.dumps({1: 2, 3: -7, -1: 1, -2: x, -3: y})

    @staticmethod
    def _client_data(kind: str, challenge: str, origin: str, **extra) -> bytes:
        data = {"type": kind, "challenge": challenge, "origin": origin, "crossOrigin": False, **extra}
        return json.dumps(data, separators=(",", ":")).encode()

    def create(self, options: dict, *, origin: str = ORIGIN, rp_id: str | None = None) -> dict:
        """navigator.credentials.create()'s answer to `options` (the server's JSON)."""
        self.user_handle = from_b64url(options["user"]["id"])
        rp_id = options["rp"]["id"] if rp_id is None else rp_id
        client_data = self._client_data("webauthn.create", options["challenge"], origin)
        auth_data = (
            hashlib.sha256(rp_id.encode()).digest()
            + bytes([self._flags(attested=True)])
            + struct.pack(">I", 0)
            + bytes(16)  # AAGUID: none
            + struct.pack(">H", len(self.credential_id))
            + self.credential_id
            + self._cose_key()
        )
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})
        return {
            "id": self.id,
            "rawId": self.id,
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(client_data),
                "attestationObject": b64url(attestation),
                "transports": ["internal", "hybrid"],
            },
            "clientExtensionResults": {},
            "authenticatorAttachment": "platform",
        }

    def get(
        self, options: dict, *, origin: str = ORIGIN, rp_id: str | None = None, sign_count: int | None = None
    ) -> dict:
        """navigator.credentials.get()'s answer to `options`, signed with this credential's key."""
        rp_id = options["rpId"] if rp_id is None else rp_id
        if sign_count is None:
            if not self.synced:
                self.sign_count += 1
            sign_count = self.sign_count
        client_data = self._client_data("webauthn.get", options["challenge"], origin)
        auth_data = (
            hashlib.sha256(rp_id.encode()).digest()
            + bytes([self._flags(attested=False)])
            + struct.pack(">I", sign_count)
        )
        signature = self.key.sign(auth_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
        return {
            "id": self.id,
            "rawId": self.id,
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(client_data),
                "authenticatorData": b64url(auth_data),
                "signature": b64url(signature),
                "userHandle": b64url(self.user_handle),
            },
            "clientExtensionResults": {},
            "authenticatorAttachment": "platform",
        }
