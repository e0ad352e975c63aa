"""Encryption at rest, keyed by the session token that only the client holds.

Every value that can carry personal data (session state, each event, the
owner's `user:` state) is sealed with AES-256-GCM under a key derived from the
token with HKDF-SHA256. The server never stores the token or the key: the API
puts the token into `token_context` for the length of one request and the
store derives keys from it when it reads or writes. Without the token nothing
can be read, so once a session is deleted, every byte of it left anywhere
(freed filesystem blocks, old journal pages, backups) is ciphertext nobody
can open.

Sealed value layout: 1 version byte | 12-byte random nonce | ciphertext+tag.
The associated data names the value's place (table, session or owner, row),
so a ciphertext moved to another row or session fails to open.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Iterator
from contextlib import contextmanager

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

VERSION = 1
NONCE_BYTES = 12
KEY_LABEL = b"resume-agent/v1/"

_token: contextvars.ContextVar[str | None] = contextvars.ContextVar("session_token", default=None)


class KeyUnavailable(Exception):
    """No token in this context: content can't be read or written (admin, purge)."""


class DecryptionFailed(Exception):
    """Wrong key, tampered or moved ciphertext: treated as "not found"."""


@contextmanager
def token_context(token: str) -> Iterator[None]:
    """Makes `token` the key source for the store within this block (and the tasks it awaits)."""
    reset = _token.set(token)
    try:
        yield
    finally:
        _token.reset(reset)


def derive_key(token: str, scope: str, purpose: str) -> bytes:
    """256-bit key for one scope (a session id, or an owner id) and purpose ("session", "owner")."""
    return HKDF(
        algorithm=hashes.SHA256(), length=32, salt=scope.encode("utf-8"), info=KEY_LABEL + purpose.encode("ascii")
    ).derive(token.encode("utf-8", "surrogatepass"))


class Sealer:
    """Seals and opens values for one scope with a key derived from the current token."""

    def __init__(self, scope: str, purpose: str):
        token = _token.get()
        if token is None:
            raise KeyUnavailable(f"no session token in this context to open {purpose} data")
        self._aead = AESGCM(derive_key(token, scope, purpose))
        self._scope = scope

    def _aad(self, place: str) -> bytes:
        return f"{VERSION}|{self._scope}|{place}".encode()

    def seal(self, plaintext: bytes, place: str) -> bytes:
        nonce = os.urandom(NONCE_BYTES)
        return bytes([VERSION]) + nonce + self._aead.encrypt(nonce, plaintext, self._aad(place))

    def open(self, sealed: bytes, place: str) -> bytes:
        sealed = bytes(sealed)
        if len(sealed) < 1 + NONCE_BYTES + 16 or sealed[0] != VERSION:
            raise DecryptionFailed("unknown format")
        nonce, ciphertext = sealed[1 : 1 + NONCE_BYTES], sealed[1 + NONCE_BYTES :]
        try:
            return self._aead.decrypt(nonce, ciphertext, self._aad(place))
        except InvalidTag:
            raise DecryptionFailed("wrong key, or the value was altered or moved") from None
