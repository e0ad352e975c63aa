"""The key derivation and sealing that encryption at rest stands on."""

import base64
import hashlib

import pytest

from sessions_app.security.crypto import DecryptionFailed, KeyUnavailable, Sealer, derive_key, token_context
from sessions_app.security.tokens import new_token, owner_id_for

pytestmark = pytest.mark.backend_independent

TOKEN = "test-token-0123456789abcdefghijklmnopqrstuvwxyz"
SCOPE = "resume_agent/anon-0123/4f5e6d7c-0000-4000-8000-000000000001"


def test_key_derivation_known_answer():
    # Pinned: changing the KDF, its salt or its label would orphan every stored
    # session. The session value was cross-checked against an independent
    # RFC 5869 HKDF written with hmac/hashlib.
    assert derive_key(TOKEN, SCOPE, "session").hex() == (
        "29de7aeaa7e6e491a94ca0cc730f4160dd40d72ed7d0ea5d4e980425ae53bfdc"
    )
    assert derive_key(TOKEN, "resume_agent/anon-0123", "owner").hex() == (
        "a0d835b282a5938260d9f6e380214573664b5a70f3c71b08f308534c4c1e814f"
    )


def test_keys_differ_by_token_scope_and_purpose():
    keys = {
        derive_key(TOKEN, SCOPE, "session"),
        derive_key(TOKEN + "x", SCOPE, "session"),
        derive_key(TOKEN, SCOPE + "x", "session"),
        derive_key(TOKEN, SCOPE, "owner"),
    }
    assert len(keys) == 4


def test_seal_opens_only_in_its_place_with_its_key():
    with token_context(TOKEN):
        sealer = Sealer(SCOPE, "session")
        sealed = sealer.seal("林語晴 resume".encode(), "state")
        assert sealed[0] == 1 and len(sealed) == 1 + 12 + len("林語晴 resume".encode()) + 16
        assert sealer.open(sealed, "state") == "林語晴 resume".encode()
        assert sealer.seal(b"x", "state") != sealer.seal(b"x", "state")  # fresh nonce each time
        with pytest.raises(DecryptionFailed):
            sealer.open(sealed, "event/e1")  # moved to another row
        with pytest.raises(DecryptionFailed):
            Sealer(SCOPE + "-other", "session").open(sealed, "state")  # moved to another session
        tampered = bytearray(sealed)
        tampered[20] ^= 1
        with pytest.raises(DecryptionFailed):
            sealer.open(bytes(tampered), "state")
        with pytest.raises(DecryptionFailed):
            sealer.open(b"\x02" + sealed[1:], "state")  # unknown version
    with token_context("another-token"), pytest.raises(DecryptionFailed):
        Sealer(SCOPE, "session").open(sealed, "state")


def test_no_token_no_key():
    with pytest.raises(KeyUnavailable):
        Sealer(SCOPE, "session")


def test_a_token_has_256_random_bits_and_its_owner_id_is_a_fixed_derivation():
    token = new_token()
    assert len(token) == 43 and len(base64.urlsafe_b64decode(token + "=")) == 32
    assert owner_id_for("fixed-token") == "anon-" + hashlib.sha256(b"fixed-token").hexdigest()[:32]
    # Any header value is hashed, even one no encoder accepts as it is (a lone surrogate).
    assert owner_id_for("\ud800") == "anon-" + hashlib.sha256(b"\xed\xa0\x80").hexdigest()[:32]
