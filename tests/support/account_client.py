"""The passkey account as a browser uses it, for the tests: the ceremonies through the API with a
software authenticator, and the wrapping the page does in WebCrypto (docs/ACCOUNTS.md, "What the
browser does"): the PRF output (simulated: HMAC-SHA256 of the passkey's own secret and the
fixed PRF input, as an authenticator's hmac-secret is), HKDF-SHA256 with a random salt per passkey
to an AES-256-GCM key, the session's token sealed under it; the recovery code the same way, and a
verifier derived from it for the recovery sign-in.

`wrapping=False` is the switch the raw scans are seen failing with: the token goes to the server
unwrapped, as a broken page would send it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass, field

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from sessions_app.security import passkeys
from tests.support.passkey_authenticator import SoftPasskey, b64url, from_b64url

ACCOUNT = "/agent/account"
PRF_INPUT = passkeys.PRF_INPUT.encode()
WRAP_INFO = passkeys.WRAP_INFO.encode()
RECOVERY_VERIFIER_INFO = passkeys.RECOVERY_VERIFIER_INFO.encode()


def hkdf(secret: bytes, salt: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info).derive(secret)


def wrap(key_material: bytes, salt: bytes, token: str, *, wrapping: bool = True) -> bytes:
    if not wrapping:
        return b"\x00" * 12 + token.encode()  # the switch: the token itself, behind a fake nonce
    nonce = os.urandom(12)
    return nonce + AESGCM(hkdf(key_material, salt, WRAP_INFO)).encrypt(nonce, token.encode(), None)


def unwrap(key_material: bytes, salt: bytes, wrapped: bytes) -> str:
    return AESGCM(hkdf(key_material, salt, WRAP_INFO)).decrypt(wrapped[:12], wrapped[12:], None).decode()


@dataclass
class Device:
    """One passkey with PRF. `prf_secret` stands for the authenticator's own secret: the PRF
    output never leaves the browser."""

    passkey: SoftPasskey = field(default_factory=SoftPasskey)
    prf_secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    def prf_output(self) -> bytes:
        return hmac.new(self.prf_secret, PRF_INPUT, hashlib.sha256).digest()


def another_browser():
    """A second browser context: a test client of its own, asking in Traditional Chinese as the
    `api` fixture does (tests/conftest.py)."""
    from rest_framework.test import APIClient

    return APIClient(HTTP_ACCEPT_LANGUAGE="zh-TW,zh;q=0.9")


def new_recovery_code() -> str:
    """High entropy (160 bits): HKDF suffices, no slow hash needed."""
    return secrets.token_hex(20)


def recovery_verifier(code: str) -> bytes:
    return hkdf(code.encode(), b"", RECOVERY_VERIFIER_INFO)


class AccountClient:
    """A browser with an account: `api` is DRF's APIClient (or any with the test client's keywords)."""

    def __init__(self, api, device: Device | None = None, *, wrapping: bool = True, **headers):
        self.api, self.device, self.wrapping, self.headers = api, device or Device(), wrapping, headers
        self.token: str | None = None
        self.account_id: str | None = None
        self.recovery_code: str | None = None

    def _signed_in(self) -> dict:
        return {"HTTP_X_ACCOUNT_TOKEN": self.token, **self.headers} if self.token else dict(self.headers)

    def post(self, path: str, body: dict | None = None, **headers):
        # JSON by hand: the same call works with DRF's APIClient and Django's test Client.
        data = json.dumps(body or {})
        return self.api.post(f"{ACCOUNT}{path}", data, content_type="application/json", **self._signed_in(), **headers)

    def get(self, path: str = "", **headers):
        return self.api.get(f"{ACCOUNT}{path}", **self._signed_in(), **headers)

    def delete(self, path: str = "", **headers):
        return self.api.delete(f"{ACCOUNT}{path}", **self._signed_in(), **headers)

    def register(self, *, with_recovery_code: bool = True) -> dict:
        options = self.post("/registration/options").json()["options"]
        body = {"credential": self.device.passkey.create(options)}
        if with_recovery_code:
            self.recovery_code = new_recovery_code()
            body["recovery_verifier"] = b64url(recovery_verifier(self.recovery_code))
        response = self.post("/registration", body)
        assert response.status_code == 201, response.content
        self.token, self.account_id = response.json()["account_token"], response.json()["account_id"]
        return response.json()

    def sign_in(self, device: Device | None = None):
        device = device or self.device
        options = self.post("/sign-in/options").json()["options"]
        response = self.post("/sign-in", {"credential": device.passkey.get(options)})
        if response.status_code == 200:
            self.token, self.account_id = response.json()["account_token"], response.json()["account_id"]
        return response

    def recovery_sign_in(self, code: str):
        response = self.post("/recovery-sign-in", {"recovery_verifier": b64url(recovery_verifier(code))})
        if response.status_code == 200:
            self.token = response.json()["account_token"]
        return response

    def wrapped_tokens(self, token: str, devices: list[Device] | None = None) -> list[dict]:
        """The session's token wrapped for each device's passkey and for the recovery code."""
        wrappings = []
        for device in devices or [self.device]:
            salt = secrets.token_bytes(32)
            wrappings.append(
                {
                    "credential_id": device.passkey.id,
                    "salt": b64url(salt),
                    "wrapped": b64url(wrap(device.prf_output(), salt, token, wrapping=self.wrapping)),
                }
            )
        if self.recovery_code:
            salt = secrets.token_bytes(32)
            material = self.recovery_code.encode()
            wrappings.append(
                {
                    "credential_id": None,
                    "salt": b64url(salt),
                    "wrapped": b64url(wrap(material, salt, token, wrapping=self.wrapping)),
                }
            )
        return wrappings

    def keep(self, session_id: str, token: str, devices: list[Device] | None = None):
        body = {"session_id": session_id, "wrapped_tokens": self.wrapped_tokens(token, devices)}
        return self.post("/sessions", body, HTTP_X_SESSION_TOKEN=token)

    def open(self, session_id: str, device: Device | None = None, *, recovery_code: str | None = None) -> str:
        """The session's token, unwrapped from its envelope with the device's PRF output (or the code)."""
        response = self.get(f"/sessions/{session_id}")
        assert response.status_code == 200, response.content
        device = device or self.device
        for wrapping in response.json()["wrapped_tokens"]:
            salt, wrapped = from_b64url(wrapping["salt"]), from_b64url(wrapping["wrapped"])
            if recovery_code is not None and wrapping["credential_id"] is None:
                return unwrap(recovery_code.encode(), salt, wrapped)
            if recovery_code is None and wrapping["credential_id"] == device.passkey.id:
                return unwrap(device.prf_output(), salt, wrapped)
        raise LookupError("no wrapping for this passkey")
