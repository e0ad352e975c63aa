"""WebAuthn's ceremonies as the account's use cases run them, with real responses from a software
authenticator (tests/support/passkey_authenticator.py): what verifies, and each refusal.

Each refusal is held by one check, and each test below was seen failing with its check removed:
replayed (the challenge's delete in `_challenge_consume`), expired (its `expires_at__gt`),
cross-origin (`expected_origin` given the response's own origin) and wrong RP (`expected_rp_id`
given the hash's RP). The replay uses a synced passkey, whose sign count stays 0: the sign count
cannot catch that replay, only the challenge can.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from sessions_app import account_selectors, account_services
from sessions_app.exceptions import CeremonyFailed
from sessions_app.models import Account, AccountChallenge, AccountCredential
from tests.support.passkey_authenticator import SoftPasskey

pytestmark = pytest.mark.django_db


def registered(passkey: SoftPasskey) -> account_services.SignedIn:
    options = account_services.registration_begin()
    return account_services.registration_finish(credential=passkey.create(options))


def signing_in(passkey: SoftPasskey, **how) -> dict:
    return passkey.get(account_services.sign_in_begin(), **how)


def test_registering_makes_an_account_of_a_random_id_and_one_passkey():
    passkey = SoftPasskey()
    signed_in = registered(passkey)
    account = Account.objects.get()
    assert account.pk == signed_in.account_id and len(account.pk) == 43
    credential = AccountCredential.objects.get()
    assert (credential.account_id, credential.credential_id, credential.sign_count) == (account.pk, passkey.id, 0)
    assert credential.transports == ["internal", "hybrid"]
    assert (credential.backup_eligible, credential.backed_up) == (False, False)
    assert account_selectors.signed_in_account(signed_in.token) == account
    assert AccountChallenge.objects.count() == 0  # consumed


def test_a_synced_passkey_is_kept_as_backed_up():
    registered(SoftPasskey(synced=True))
    credential = AccountCredential.objects.get()
    assert (credential.backup_eligible, credential.backed_up) == (True, True)


def test_signing_in_on_another_device_with_the_same_passkey():
    passkey = SoftPasskey()
    account_id = registered(passkey).account_id
    signed_in = account_services.sign_in_finish(credential=signing_in(passkey))
    assert signed_in.account_id == account_id
    credential = AccountCredential.objects.get()
    assert credential.sign_count == 1 and credential.last_used_at is not None


def test_a_sign_count_of_zero_is_accepted_every_time():
    passkey = SoftPasskey(synced=True)
    registered(passkey)
    for _ in range(3):
        account_services.sign_in_finish(credential=signing_in(passkey))
    assert AccountCredential.objects.get().sign_count == 0


def test_a_sign_count_that_goes_back_is_refused():
    passkey = SoftPasskey()
    registered(passkey)
    account_services.sign_in_finish(credential=signing_in(passkey, sign_count=5))
    with pytest.raises(CeremonyFailed):
        account_services.sign_in_finish(credential=signing_in(passkey, sign_count=3))
    assert AccountCredential.objects.get().sign_count == 5


def test_a_replayed_assertion_is_refused():
    passkey = SoftPasskey(synced=True)  # its count stays 0: only the challenge tells a replay
    registered(passkey)
    assertion = signing_in(passkey)
    account_services.sign_in_finish(credential=assertion)
    with pytest.raises(CeremonyFailed):
        account_services.sign_in_finish(credential=assertion)


def test_a_replayed_registration_is_refused():
    passkey = SoftPasskey()
    response = passkey.create(account_services.registration_begin())
    account_services.registration_finish(credential=response)
    with pytest.raises(CeremonyFailed):
        account_services.registration_finish(credential=response)
    assert Account.objects.count() == 1


def test_an_assertion_on_an_expired_challenge_is_refused():
    passkey = SoftPasskey(synced=True)
    registered(passkey)
    assertion = signing_in(passkey)
    AccountChallenge.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    with pytest.raises(CeremonyFailed):
        account_services.sign_in_finish(credential=assertion)


def test_a_registration_on_an_expired_challenge_is_refused():
    response = SoftPasskey().create(account_services.registration_begin())
    AccountChallenge.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    with pytest.raises(CeremonyFailed):
        account_services.registration_finish(credential=response)
    assert Account.objects.count() == 0


def test_a_cross_origin_assertion_is_refused():
    passkey = SoftPasskey(synced=True)
    registered(passkey)
    with pytest.raises(CeremonyFailed):
        account_services.sign_in_finish(credential=signing_in(passkey, origin="https://evil.example"))


def test_a_cross_origin_registration_is_refused():
    response = SoftPasskey().create(account_services.registration_begin(), origin="https://evil.example")
    with pytest.raises(CeremonyFailed):
        account_services.registration_finish(credential=response)


def test_an_assertion_for_another_rp_is_refused():
    passkey = SoftPasskey(synced=True)
    registered(passkey)
    with pytest.raises(CeremonyFailed):
        account_services.sign_in_finish(credential=signing_in(passkey, rp_id="evil.example"))


def test_a_registration_for_another_rp_is_refused():
    response = SoftPasskey().create(account_services.registration_begin(), rp_id="evil.example")
    with pytest.raises(CeremonyFailed):
        account_services.registration_finish(credential=response)


def test_the_origins_and_rp_id_are_settings(settings):
    settings.WEBAUTHN_RP_ID = "resume.example"
    settings.WEBAUTHN_ORIGINS = ["https://resume.example"]
    passkey = SoftPasskey(synced=True)
    options = account_services.registration_begin()
    assert options["rp"]["id"] == "resume.example"
    account_services.registration_finish(credential=passkey.create(options, origin="https://resume.example"))
    account_services.sign_in_finish(credential=signing_in(passkey, origin="https://resume.example"))
    with pytest.raises(CeremonyFailed):  # the default origin is no longer one of the site's
        account_services.sign_in_finish(credential=signing_in(passkey))


def test_a_challenge_answers_only_its_own_ceremony():
    passkey = SoftPasskey(synced=True)
    registered(passkey)
    # A registration's challenge, answered as a sign-in.
    options = account_services.registration_begin()
    assertion = passkey.get({"rpId": options["rp"]["id"], "challenge": options["challenge"]})
    with pytest.raises(CeremonyFailed):
        account_services.sign_in_finish(credential=assertion)


def test_an_unknown_passkey_or_a_forged_signature_is_refused():
    passkey = SoftPasskey(synced=True)
    registered(passkey)
    with pytest.raises(CeremonyFailed):
        account_services.sign_in_finish(credential=signing_in(SoftPasskey(synced=True)))
    impostor = SoftPasskey(synced=True, credential_id=passkey.credential_id, user_handle=passkey.user_handle)
    with pytest.raises(CeremonyFailed):
        account_services.sign_in_finish(credential=signing_in(impostor))


@pytest.mark.parametrize(
    "credential",
    [{}, {"response": {}}, {"response": {"clientDataJSON": "!!"}}, {"id": 3, "response": {"clientDataJSON": "e30"}}],
)
def test_junk_is_refused_not_raised(credential):
    with pytest.raises(CeremonyFailed):
        account_services.sign_in_finish(credential=credential)
    with pytest.raises(CeremonyFailed):
        account_services.registration_finish(credential=credential)


def test_adding_a_passkey_needs_a_challenge_of_the_same_account():
    first = registered(SoftPasskey())
    other = registered(SoftPasskey())
    account = Account.objects.get(pk=first.account_id)
    options = account_services.passkey_add_begin(account=Account.objects.get(pk=other.account_id))
    with pytest.raises(CeremonyFailed):
        account_services.passkey_add_finish(account=account, credential=SoftPasskey().create(options))
    options = account_services.passkey_add_begin(account=account)
    assert len(options["excludeCredentials"]) == 1
    new = SoftPasskey(synced=True)
    account_services.passkey_add_finish(account=account, credential=new.create(options))
    assert account.credentials.count() == 2
    assert account_services.sign_in_finish(credential=signing_in(new)).account_id == account.pk


def test_a_refused_answer_still_uses_its_challenge_up():
    """A challenge answers once, whether the answer verified or not: a cross-origin try spends it."""
    passkey = SoftPasskey(synced=True)
    registered(passkey)
    options = account_services.sign_in_begin()
    with pytest.raises(CeremonyFailed):
        account_services.sign_in_finish(credential=passkey.get(options, origin="https://evil.example"))
    assert AccountChallenge.objects.count() == 0
    with pytest.raises(CeremonyFailed):
        account_services.sign_in_finish(credential=passkey.get(options))
