"""The reads of the passkey accounts (docs/ACCOUNTS.md): who is signed in, the account's passkeys,
the sessions it keeps (metadata only: their content opens only with their tokens, which the
browser unwraps) and one session's wrapped tokens."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.db.models import Count, Q
from django.utils import timezone

from agent import APP_NAME
from sessions_app import retention
from sessions_app.models import Account, AccountSession, AgentSession, WrappedSessionToken


def signed_in_account(token: str) -> Account | None:
    """The account a live sign-in's token stands for; None for any other value."""
    token_hash = hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()
    return Account.objects.filter(sign_ins__token_hash=token_hash, sign_ins__expires_at__gt=timezone.now()).first()


def account_summary(account: Account) -> dict:
    """The account as its holder sees it: its id, dates, passkeys and how many live sessions it keeps."""
    passkeys = [
        {
            "id": credential.pk,
            "created_at": credential.created_at,
            "last_used_at": credential.last_used_at,
            "transports": credential.transports,
            "backup_eligible": credential.backup_eligible,
            "backed_up": credential.backed_up,
        }
        for credential in account.credentials.order_by("created_at", "pk")
    ]
    return {
        "account_id": account.pk,
        "created_at": account.created_at,
        "last_sign_in_at": account.last_sign_in_at,
        "has_recovery_code": bool(account.recovery_verifier_hash),
        "passkeys": passkeys,
        "sessions": kept_live_sessions(account).count(),
    }


def kept_live_sessions(account: Account):
    return AgentSession.objects.filter(app_name=APP_NAME, account_entry__account=account).live()


def account_sessions(account: Account) -> list[dict]:
    """The live sessions the account keeps, newest activity first: id, times, expiry and turns (the
    person's messages, counted from the events' authors, which are stored in clear). No content."""
    sessions = (
        kept_live_sessions(account)
        .annotate(user_turns=Count("events", filter=Q(events__author="user")))
        .order_by("-last_activity_at", "pk")
    )
    return [
        {
            "session_id": session.session_id,
            "created_at": session.created_at,
            "last_activity_at": session.last_activity_at,
            "expires_at": retention.expires_at(session.created_at, session.last_activity_at),
            "turns": session.user_turns,
        }
        for session in sessions
    ]


@dataclass(frozen=True)
class Envelope:
    session_id: str
    wrappings: list[dict]


def session_envelope(account: Account, session_id: str) -> Envelope | None:
    """The session's token as the account keeps it, wrapped for each passkey and for the recovery
    code: what the browser sent, returned as it was. None: the account keeps no live session of
    that id (missing, someone else's, expired: one miss)."""
    entry = AccountSession.objects.filter(
        account=account, agent_session__in=kept_live_sessions(account).filter(session_id=session_id)
    ).first()
    if entry is None:
        return None
    wrappings = [
        {"credential_id": credential_id, "salt": bytes(salt), "wrapped": bytes(wrapped)}
        for credential_id, salt, wrapped in WrappedSessionToken.objects.filter(entry=entry)
        .order_by("pk")
        .values_list("credential__credential_id", "salt", "wrapped")
    ]
    return Envelope(session_id=session_id, wrappings=wrappings)
