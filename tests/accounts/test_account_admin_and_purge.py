"""The accounts in the admin (counts and dates only) and in the scheduled purge (idle accounts go)."""

from __future__ import annotations

import datetime as dt

import pytest
import time_machine
from django.urls import reverse
from django.utils import timezone

from sessions_app import account_services, tasks
from sessions_app.models import (
    Account,
    AccountChallenge,
    AccountCredential,
    AccountSignIn,
    AgentSession,
    WrappedSessionToken,
)
from tests.support.account_client import AccountClient, Device
from tests.support.passkey_authenticator import SoftPasskey

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:sessions_app_account_changelist")


def test_the_admin_lists_accounts_by_counts_and_dates_only(api, admin_client, new_session):
    account = AccountClient(api, Device(SoftPasskey(synced=True)))
    account.register()
    session_id, token = new_session()
    account.keep(session_id, token)
    page = admin_client.get(CHANGELIST)
    assert page.status_code == 200
    row = page.context["cl"].result_list[0]
    assert (row.passkey_count, row.synced_passkey_count, row.session_count) == (1, 1, 1)
    html = page.content.decode()
    secrets = [
        account.account_id,
        account.device.passkey.id,
        session_id,
        token,
        *(bytes(w).hex() for w in WrappedSessionToken.objects.values_list("wrapped", flat=True)),
        *(w["wrapped"] for w in account.wrapped_tokens(token)),
    ]
    assert [secret for secret in secrets if secret in html] == []
    # No page of one account, no adding, no editing.
    pk = Account.objects.get().pk
    assert admin_client.get(reverse("admin:sessions_app_account_change", args=[pk])).status_code in (302, 403, 404)
    assert admin_client.get(reverse("admin:sessions_app_account_add")).status_code == 403


def test_the_scheduled_purge_erases_idle_accounts_keeping_no_session(api, settings, new_session):
    settings.ACCOUNT_PURGE_AFTER_DAYS = 30
    idle, busy, young = AccountClient(api), AccountClient(api), None
    idle.register()
    busy.register()
    with time_machine.travel(timezone.now() + dt.timedelta(days=29)):
        young = AccountClient(api)
        young.register()
    with time_machine.travel(timezone.now() + dt.timedelta(days=31)):
        # A session made then (live then), kept by `busy`, which has not signed in for 31 days.
        session_id, _token = new_session()
        account_services.session_keep(
            account=Account.objects.get(pk=busy.account_id),
            session=AgentSession.objects.get(session_id=session_id),
            wrappings=[],
        )
        result = tasks.purge_expired_sessions()
    assert result["accounts"] == 1
    assert set(Account.objects.values_list("pk", flat=True)) == {busy.account_id, young.account_id}
    assert AccountCredential.objects.count() == 2
    # The challenges and sign-ins of 31 days ago were past their time: gone.
    assert AccountChallenge.objects.count() == 0
    assert not AccountSignIn.objects.filter(account_id=idle.account_id).exists()


def test_an_account_whose_sessions_expired_is_erased_once_they_are(api, settings, new_session):
    settings.ACCOUNT_PURGE_AFTER_DAYS = 1
    account = AccountClient(api)
    account.register()
    session_id, token = new_session()
    account.keep(session_id, token)
    with time_machine.travel(timezone.now() + dt.timedelta(days=8)):  # past the session's maximum age
        assert tasks.purge_expired_sessions()["accounts"] == 1
    assert not Account.objects.exists()


def test_the_purge_keeps_an_account_signed_into_lately(api, settings):
    settings.ACCOUNT_PURGE_AFTER_DAYS = 10
    account = AccountClient(api, Device(SoftPasskey(synced=True)))
    account.register()
    with time_machine.travel(timezone.now() + dt.timedelta(days=8)):
        assert account.sign_in().status_code == 200
    with time_machine.travel(timezone.now() + dt.timedelta(days=12)):
        assert account_services.accounts_purge().accounts == 0
    with time_machine.travel(timezone.now() + dt.timedelta(days=19)):
        assert account_services.accounts_purge().accounts == 1
