"""The passkey accounts through the HTTP API: register, keep sessions, sign in on another device and
open them, let one go, passkeys added and removed, sign out, delete the account; the one 404; the
sign-in throttles."""

from __future__ import annotations

import pytest

from sessions_app.models import Account, AccountCredential, AccountSignIn, DeletionAudit, DeletionLogEntry
from tests.support.account_client import AccountClient, Device, another_browser
from tests.support.passkey_authenticator import SoftPasskey
from tests.support.session_client import SESSIONS, answer_to, messages_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def account(api) -> AccountClient:
    client = AccountClient(api)
    client.register()
    return client


def other_device(client: AccountClient) -> AccountClient:
    """A second browser context with the same (synced) passkey: signed out, nothing in memory."""
    return AccountClient(another_browser(), client.device)


def the_one_404(api) -> tuple[bytes, dict]:
    response = api.get(f"{SESSIONS}/no-such-session", HTTP_X_SESSION_TOKEN="no-such-token")
    return response.content, {k: v for k, v in response.items() if k.lower() not in ("date", "x-request-id")}


def same_404(response, api) -> None:
    content, headers = the_one_404(api)
    assert response.status_code == 404
    assert response.content == content
    assert {k: v for k, v in response.items() if k.lower() not in ("date", "x-request-id")} == headers


def test_register_keep_two_sessions_sign_in_elsewhere_open_both_then_delete_the_account(api, account, new_session):
    sessions = dict(new_session() for _ in range(2))
    for session_id, token in sessions.items():
        answer_to(api, session_id, token)
        response = account.keep(session_id, token)
        assert response.status_code == 201, response.content
        assert [w["credential_id"] for w in response.json()["wrapped_tokens"]] == [account.device.passkey.id, None]

    phone = other_device(account)
    assert phone.get("/sessions").status_code == 401  # not signed in there yet
    assert phone.sign_in().status_code == 200
    listed = phone.get("/sessions").json()["sessions"]
    assert {s["session_id"] for s in listed} == set(sessions)
    assert all(
        s["turns"] == 1 and set(s) == {"session_id", "created_at", "last_activity_at", "expires_at", "turns"}
        for s in listed
    )
    for session_id in sessions:
        token = phone.open(session_id)
        assert token == sessions[session_id]
        assert len(messages_of(phone.api, session_id, token)) == 2  # the session, opened as today

    response = phone.delete()
    assert response.status_code == 200
    assert response.json() == {
        "sessions_erased": 2,
        "events_erased": response.json()["events_erased"],
        "passkeys_erased": 1,
        "session_ids": sorted(sessions),
    }
    assert response.json()["events_erased"] >= 4
    for session_id, token in sessions.items():
        same_404(api.get(f"{SESSIONS}/{session_id}", HTTP_X_SESSION_TOKEN=token), api)
    assert Account.objects.count() == AccountCredential.objects.count() == AccountSignIn.objects.count() == 0
    audit = DeletionAudit.objects.get()
    assert (audit.trigger, audit.sessions_deleted) == (DeletionAudit.Trigger.ACCOUNT, 2)
    assert DeletionLogEntry.objects.count() == 2  # one entry per session
    assert account.get().status_code == 401  # every sign-in ended with the account


def test_the_recovery_code_opens_the_account_and_its_sessions_a_wrong_one_nothing(api, account, new_session):
    session_id, token = new_session()
    account.keep(session_id, token)
    stranger = AccountClient(another_browser())
    refused = stranger.recovery_sign_in("0" * 40)
    assert (refused.status_code, refused.json()["code"]) == (403, "recovery_refused")
    assert stranger.recovery_sign_in(account.recovery_code).status_code == 200
    assert stranger.open(session_id, recovery_code=account.recovery_code) == token
    # ...and a new device's passkey added with it.
    new = Device(SoftPasskey(synced=True))
    options = stranger.post("/passkeys/options").json()["options"]
    added = stranger.post("/passkeys", {"credential": new.passkey.create(options)})
    assert added.status_code == 201 and added.json()["backed_up"] is True
    assert stranger.keep(session_id, token, devices=[new]).status_code == 200  # wrapped for it too
    assert AccountClient(another_browser(), new).sign_in().status_code == 200


def test_a_session_id_with_a_wrong_or_foreign_account_is_the_one_404(api, account, new_session):
    session_id, token = new_session()
    account.keep(session_id, token)
    foreign = AccountClient(another_browser())
    foreign.register()
    same_404(foreign.get(f"/sessions/{session_id}"), api)
    same_404(foreign.delete(f"/sessions/{session_id}"), api)
    same_404(account.get("/sessions/no-such-session"), api)
    same_404(account.delete("/sessions/no-such-session"), api)
    # Keeping needs the session's own token: a wrong one is the same miss.
    same_404(foreign.keep(session_id, "not-its-token"), api)
    without_token = foreign.post(
        "/sessions", {"session_id": session_id, "wrapped_tokens": account.wrapped_tokens(token)}
    )
    assert without_token.status_code == 401  # as every session operation without its token
    same_404(account.delete("/passkeys/999999"), api)
    same_404(account.delete("/passkeys/x"), api)
    # The foreign account holding the token itself still cannot take another account's session.
    held = foreign.keep(session_id, token)
    assert (held.status_code, held.json()["code"]) == (409, "session_in_another_account")


def test_letting_a_session_go_leaves_it_to_its_token(api, account, new_session):
    session_id, token = new_session()
    account.keep(session_id, token)
    assert account.delete(f"/sessions/{session_id}").status_code == 204
    same_404(account.get(f"/sessions/{session_id}"), api)
    assert account.get("/sessions").json() == {"sessions": []}
    assert api.get(f"{SESSIONS}/{session_id}", HTTP_X_SESSION_TOKEN=token).status_code == 200


def test_a_session_deleted_with_its_token_leaves_the_account(api, account, new_session):
    session_id, token = new_session()
    account.keep(session_id, token)
    assert api.delete(f"{SESSIONS}/{session_id}", HTTP_X_SESSION_TOKEN=token).status_code == 204
    assert account.get("/sessions").json() == {"sessions": []}
    assert account.get().json()["sessions"] == 0


def test_the_account_shows_its_passkeys_and_a_count_of_sessions(account, new_session):
    session_id, token = new_session()
    account.keep(session_id, token)
    described = account.get().json()
    assert described["account_id"] == account.account_id and described["sessions"] == 1
    assert described["has_recovery_code"] is True
    assert [p["transports"] for p in described["passkeys"]] == [["internal", "hybrid"]]


def test_the_last_way_in_is_not_removed(api):
    account = AccountClient(api)
    account.register(with_recovery_code=False)
    passkey_id = account.get().json()["passkeys"][0]["id"]
    refused = account.delete(f"/passkeys/{passkey_id}")
    assert (refused.status_code, refused.json()["code"]) == (409, "last_way_in")
    second = Device()
    options = account.post("/passkeys/options").json()["options"]
    assert account.post("/passkeys", {"credential": second.passkey.create(options)}).status_code == 201
    assert account.delete(f"/passkeys/{passkey_id}").status_code == 204
    assert AccountClient(another_browser(), account.device).sign_in().status_code == 403  # that passkey is gone


def test_signing_out_ends_that_sign_in_only(account):
    phone = other_device(account)
    phone.sign_in()
    assert account.post("/sign-out").status_code == 204
    assert account.get().status_code == 401
    assert phone.get().status_code == 200


def test_a_wrong_account_token_is_refused_as_unauthenticated(api):
    response = api.get("/agent/account", HTTP_X_ACCOUNT_TOKEN="made-up")
    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("X-Account-Token")


def test_a_refused_passkey_says_so_in_both_languages(api, account):
    options = account.post("/sign-in/options").json()["options"]
    forged = account.device.passkey.get(options, origin="https://evil.example")
    english = account.post("/sign-in", {"credential": forged}, HTTP_ACCEPT_LANGUAGE="en")
    assert english.status_code == 403 and english.json()["code"] == "passkey_refused"
    assert "passkey" in english.json()["detail"]
    options = account.post("/sign-in/options").json()["options"]
    forged = account.device.passkey.get(options, origin="https://evil.example")
    chinese = account.post("/sign-in", {"credential": forged}, HTTP_ACCEPT_LANGUAGE="zh-Hant")
    assert chinese.json()["code"] == "passkey_refused" and chinese.json()["detail"] != english.json()["detail"]


@pytest.mark.parametrize(
    "body",
    [
        {"credential": "x"},
        {"credential": {"response": {"clientDataJSON": 5}}},
        {"credential": {}, "recovery_verifier": "short"},
        {"session_id": "x", "wrapped_tokens": [{"credential_id": None, "salt": "!!", "wrapped": "AA"}]},
    ],
)
def test_bad_input_is_a_400(account, body):
    for path in ("/registration", "/sign-in", "/sessions", "/recovery-sign-in", "/passkeys"):
        response = account.post(path, body)
        assert response.status_code in (400, 403, 404), (path, response.content)


def _rates(settings, **rates):
    current = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {**current, **rates}}


def test_sign_in_attempts_are_throttled_per_client_address(api, settings):
    _rates(settings, account_sign_in="3/min")
    client = AccountClient(api, REMOTE_ADDR="198.51.100.7")
    statuses = [client.post("/sign-in/options").status_code for _ in range(2)]
    statuses.append(client.post("/sign-in", {"credential": {}}).status_code)
    statuses.append(client.post("/recovery-sign-in", {"recovery_verifier": "A" * 43}).status_code)
    assert statuses == [200, 200, 403, 429]
    assert AccountClient(another_browser(), REMOTE_ADDR="198.51.100.8").post("/sign-in/options").status_code == 200


def test_registering_is_throttled_per_client_address(api, settings):
    _rates(settings, account_register="1/min")
    client = AccountClient(api)
    assert [client.post("/registration/options").status_code for _ in range(2)] == [200, 429]


def test_an_expired_session_is_gone_from_the_account_too(api, account, new_session):
    import datetime as dt

    import time_machine
    from django.utils import timezone

    session_id, token = new_session()
    account.keep(session_id, token)
    with time_machine.travel(timezone.now() + dt.timedelta(hours=25)):
        account.post("/sign-out")
        account.token = None
        AccountClient.sign_in(account)  # a sign-in of that time: the first one has ended
        assert account.get("/sessions").json() == {"sessions": []}
        same_404(account.get(f"/sessions/{session_id}"), api)
        same_404(account.delete(f"/sessions/{session_id}"), api)
