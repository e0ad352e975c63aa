"""What an account stores, and that nothing of it outlives a session: an account's hold on a session
and the session's wrapped tokens go with the session, whichever erasure takes it."""

from __future__ import annotations

import datetime as dt
import secrets

import pytest
import time_machine
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from sessions_app import erasure, purge
from sessions_app.choices import ErasureTrigger
from sessions_app.models import Account, AccountCredential, AccountSession, AgentSession, WrappedSessionToken

pytestmark = pytest.mark.django_db


def _account_keeping(session_ids: list[str]) -> Account:
    account = Account.objects.create()
    credential = AccountCredential.objects.create(
        account=account, credential_id=secrets.token_urlsafe(32), public_key=b"\xa5cose"
    )
    for session_id in session_ids:
        entry = AccountSession.objects.create(
            account=account, agent_session=AgentSession.objects.get(session_id=session_id)
        )
        WrappedSessionToken.objects.create(entry=entry, credential=credential, salt=b"s" * 32, wrapped=b"w" * 71)
        WrappedSessionToken.objects.create(entry=entry, credential=None, salt=b"r" * 32, wrapped=b"v" * 71)
    return account


def test_an_account_is_a_random_id_and_no_name():
    first, second = Account.objects.create(), Account.objects.create()
    assert first.pk != second.pk and len(first.pk) == 43
    fields = {field.name for field in Account._meta.get_fields()}
    assert not fields & {"email", "password", "name", "username"}


def test_one_wrapping_per_passkey_and_one_for_the_recovery_code(new_session):
    session_id, _token = new_session()
    account = _account_keeping([session_id])
    entry = AccountSession.objects.get()
    credential = account.credentials.get()
    for duplicate in (credential, None):
        with pytest.raises(IntegrityError), transaction.atomic():
            WrappedSessionToken.objects.create(entry=entry, credential=duplicate, salt=b"x", wrapped=b"y")


def test_a_session_is_kept_by_one_account_at_most(new_session):
    session_id, _token = new_session()
    _account_keeping([session_id])
    with pytest.raises(IntegrityError), transaction.atomic():
        _account_keeping([session_id])


@pytest.mark.parametrize("trigger", [ErasureTrigger.API, ErasureTrigger.ADMIN])
def test_erasing_a_session_erases_the_accounts_hold_on_it(new_session, trigger):
    kept, other = new_session()[0], new_session()[0]
    account = _account_keeping([kept, other])
    erasure.erase_sessions(AgentSession.objects.filter(session_id=kept), trigger=trigger)
    assert list(AccountSession.objects.values_list("agent_session__session_id", flat=True)) == [other]
    assert WrappedSessionToken.objects.count() == 2  # the other session's two
    assert Account.objects.filter(pk=account.pk).exists()  # the account stays: it is not a session


def test_the_purge_erases_an_expired_sessions_hold_too(new_session):
    session_id, _token = new_session()
    _account_keeping([session_id])
    with time_machine.travel(timezone.now() + dt.timedelta(days=8)):
        assert purge.purge_expired(trigger=ErasureTrigger.TTL).sessions == 1
    assert AccountSession.objects.count() == WrappedSessionToken.objects.count() == 0


def test_no_hold_can_outlive_its_session(new_session):
    """The hold points at the session's row: deleting the session's row alone, as an erasure
    that forgot the hold would, is refused by the database."""
    session_id, _token = new_session()
    _account_keeping([session_id])
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        table = AgentSession._meta.db_table
        cursor.execute(f"DELETE FROM {table} WHERE session_id = %s", [session_id])
        cursor.execute(
            "SET CONSTRAINTS ALL IMMEDIATE" if connection.vendor == "postgresql" else "PRAGMA foreign_key_check"
        )
        if connection.vendor == "sqlite" and cursor.fetchall():
            raise IntegrityError("a hold points at no session")
