"""What an account leaves in the stores: after registering, keeping two sessions that talked,
signing in on another device and opening both, a raw scan of the database's files (SQLite's file and
sidecars; PostgreSQL's table files and WAL after a CHECKPOINT: the `stored_files` fixture), of every
log line and of the cache finds no session token, no PRF output, no key derived from one, no
recovery code, no account token and no content.

The control: the same flow with the page's wrapping switched off (the token sent as it is, behind a
fake nonce, as a broken page would) and the same database scan finds the tokens: it can fail.
"""

from __future__ import annotations

import pytest

from tests.erasure.test_erasure_e2e import _cache_text
from tests.support.account_client import WRAP_INFO, AccountClient, Device, another_browser, hkdf
from tests.support.passkey_authenticator import SoftPasskey, b64url, from_b64url
from tests.support.privacy import find_in_text, find_markers, fixture_markers
from tests.support.session_client import answer_to, messages_of

pytestmark = pytest.mark.django_db(transaction=True)

MESSAGES = ("Keep my plan under my passkey Wombat-5521", "請幫我規劃求職 Wombat-7730")


def _raw_forms(secret: bytes) -> list[str]:
    """A binary secret as text in the forms the scans search (each also as UTF-8, JSON-escaped and
    hex by `encodings`): base64url and hex."""
    return [b64url(secret), secret.hex()]


def _hits_in_files(paths, secrets_bytes: list[bytes]) -> list[str]:
    return [path.name for path in paths for secret in secrets_bytes if secret in path.read_bytes()]


def _use_an_account(api, new_session, *, wrapping: bool) -> tuple[list[str], list[bytes]]:
    """The whole flow; returns what must be nowhere: text secrets, and raw byte secrets."""
    laptop = Device(SoftPasskey(synced=True))
    account = AccountClient(api, laptop, wrapping=wrapping)
    account.register()
    sessions = dict(new_session() for _ in range(2))
    for (session_id, token), message in zip(sessions.items(), MESSAGES, strict=True):
        answer_to(api, session_id, token, message)
        assert account.keep(session_id, token).status_code == 201
    phone = AccountClient(another_browser(), laptop)
    assert phone.sign_in().status_code == 200
    if wrapping:
        for session_id, token in sessions.items():
            assert phone.open(session_id) == token
            assert len(messages_of(phone.api, session_id, token)) == 2
    prf = laptop.prf_output()
    texts = [*sessions.values(), account.recovery_code, account.token, phone.token, *fixture_markers(), *MESSAGES]
    # Binary: the PRF output and the keys derived from it and from the code (any salt: the keys of
    # the salts sent are derived here from the wrappings the server holds).
    envelope = phone.get(f"/sessions/{next(iter(sessions))}").json()["wrapped_tokens"]
    keys = [
        hkdf(prf if w["credential_id"] else account.recovery_code.encode(), from_b64url(w["salt"]), WRAP_INFO)
        for w in envelope
    ]
    binaries = [prf, *keys]
    texts += [form for secret in binaries for form in _raw_forms(secret)]
    return texts, binaries


def test_an_accounts_stores_hold_no_token_prf_output_recovery_code_or_content(
    api, new_session, stored_files, captured_logs
):
    protected_logs, _raw = captured_logs
    texts, binaries = _use_an_account(api, new_session, wrapping=True)
    assert find_markers(stored_files(), texts) == []
    assert _hits_in_files(stored_files(), binaries) == []
    assert find_in_text(protected_logs.getvalue(), texts) == []
    assert find_in_text(_cache_text(), texts) == []


def test_the_scan_finds_the_tokens_when_the_wrapping_is_off(api, new_session, stored_files):
    texts, _binaries = _use_an_account(api, new_session, wrapping=False)
    found = {marker for _file, marker, _encoding in find_markers(stored_files(), texts)}
    assert set(texts[:2]) <= found  # both sessions' tokens, sent unwrapped, are in the database's bytes
