"""The writes of the optional passkey accounts (docs/ACCOUNTS.md): the two WebAuthn ceremonies
(registering, signing in, adding a passkey), the recovery code's sign-in, signing out, a session
kept or let go, a passkey removed, the account deleted, and the purge of idle accounts.

An account holds public keys and what the browser wrapped: the server never sees a session's token
through an account, nor a PRF output or a recovery code (only a one-way value derived from the code,
hashed again here). Every session an account erases goes through `erasure.erase_sessions`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from dataclasses import dataclass, field

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from sessions_app import erasure
from sessions_app.choices import ChallengeKind, ErasureTrigger
from sessions_app.exceptions import CeremonyFailed, LastWayIn, RecoveryRefused, SessionHeldElsewhere, UnknownPasskey
from sessions_app.models import (
    Account,
    AccountChallenge,
    AccountCredential,
    AccountSession,
    AccountSignIn,
    AgentSession,
    WrappedSessionToken,
    new_account_id,
)
from sessions_app.security import passkeys


def digest(value: bytes | str) -> str:
    """SHA-256, hex: how a challenge, a sign-in token and a recovery verifier are kept."""
    return hashlib.sha256(value.encode() if isinstance(value, str) else value).hexdigest()


# --- Challenges: one ceremony, once, in time ---


def _challenge_issue(kind: str, account_id: str = "") -> bytes:
    challenge = secrets.token_bytes(passkeys.CHALLENGE_BYTES)
    AccountChallenge.objects.create(
        challenge_hash=digest(challenge),
        kind=kind,
        account_id=account_id,
        expires_at=timezone.now() + dt.timedelta(seconds=settings.ACCOUNT_CHALLENGE_SECONDS),
    )
    return challenge


def _challenge_consume(credential: dict, kind: str) -> tuple[bytes, AccountChallenge]:
    """The challenge the response answers, consumed: it exists, is for this ceremony, has not
    expired, and this call is the one that deleted it (a replay, or the same response twice at
    once, finds it gone). Anything else: CeremonyFailed."""
    try:
        challenge = passkeys.challenge_of(credential)
    except passkeys.CeremonyRefused as exc:
        raise CeremonyFailed from exc
    issued = AccountChallenge.objects.filter(
        challenge_hash=digest(challenge), kind=kind, expires_at__gt=timezone.now()
    ).first()
    # Single use: only the request whose delete removed the row goes on.
    if issued is None or AccountChallenge.objects.filter(pk=issued.pk).delete()[0] != 1:
        raise CeremonyFailed
    return challenge, issued


# --- Signing in: a bearer token of the account's own (X-Account-Token), kept as its hash ---


@dataclass
class SignedIn:
    account_id: str
    token: str  # handed to the client once, never stored
    expires_at: dt.datetime


def _sign_in(account: Account) -> SignedIn:
    token = secrets.token_urlsafe(32)
    now = timezone.now()
    expires_at = now + dt.timedelta(hours=settings.ACCOUNT_SIGN_IN_HOURS)
    AccountSignIn.objects.create(account=account, token_hash=digest(token), expires_at=expires_at)
    Account.objects.filter(pk=account.pk).update(last_sign_in_at=now)
    return SignedIn(account_id=account.pk, token=token, expires_at=expires_at)


def registration_begin() -> dict:
    """Options for a new account's first passkey; the account exists once the ceremony ends."""
    account_id = new_account_id()
    challenge = _challenge_issue(ChallengeKind.REGISTER, account_id)
    return passkeys.registration_options(user_handle=account_id, challenge=challenge)


def _passkey_keep(account: Account, passkey: passkeys.NewPasskey) -> AccountCredential:
    try:
        with transaction.atomic():
            return AccountCredential.objects.create(
                account=account,
                credential_id=passkey.credential_id,
                public_key=passkey.public_key,
                sign_count=passkey.sign_count,
                transports=passkey.transports,
                backup_eligible=passkey.backup_eligible,
                backed_up=passkey.backed_up,
            )
    except IntegrityError as exc:  # this passkey is already registered
        raise CeremonyFailed from exc


def registration_finish(*, credential: dict, recovery_verifier: bytes | None = None) -> SignedIn:
    """Creates the account with its first passkey (and, when the browser made a recovery code, the
    hash of the value it derived from it), and signs it in. The challenge is consumed first, in a
    statement of its own: a response refused still used it up."""
    challenge, issued = _challenge_consume(credential, ChallengeKind.REGISTER)
    try:
        passkey = passkeys.verify_registration(credential, challenge=challenge)
    except passkeys.CeremonyRefused as exc:
        raise CeremonyFailed from exc
    with transaction.atomic():
        account = Account.objects.create(
            id=issued.account_id, recovery_verifier_hash=digest(recovery_verifier) if recovery_verifier else ""
        )
        _passkey_keep(account, passkey)
        return _sign_in(account)


def sign_in_begin() -> dict:
    return passkeys.authentication_options(challenge=_challenge_issue(ChallengeKind.SIGN_IN))


def sign_in_finish(*, credential: dict) -> SignedIn:
    """Signs in the account whose passkey answered; its sign count and backup state updated. The
    challenge is consumed first, in a statement of its own: a response refused still used it up."""
    challenge, _issued = _challenge_consume(credential, ChallengeKind.SIGN_IN)
    try:
        credential_id = passkeys.assertion_credential_id(credential)
    except passkeys.CeremonyRefused as exc:
        raise CeremonyFailed from exc
    with transaction.atomic():
        # Locked: two sign-ins with one passkey at once each see the count the other left.
        stored = AccountCredential.objects.select_for_update().filter(credential_id=credential_id).first()
        if stored is None:
            raise CeremonyFailed
        try:
            assertion = passkeys.verify_assertion(
                credential, challenge=challenge, public_key=bytes(stored.public_key), sign_count=stored.sign_count
            )
        except passkeys.CeremonyRefused as exc:
            raise CeremonyFailed from exc
        if assertion.user_handle is not None and assertion.user_handle != stored.account_id:
            raise CeremonyFailed
        AccountCredential.objects.filter(pk=stored.pk).update(
            sign_count=assertion.sign_count, backed_up=assertion.backed_up, last_used_at=timezone.now()
        )
        return _sign_in(stored.account)


@transaction.atomic
def recovery_sign_in(*, recovery_verifier: bytes) -> SignedIn:
    """Signs in the account whose recovery code the browser derived `recovery_verifier` from."""
    account = (
        Account.objects.filter(recovery_verifier_hash=digest(recovery_verifier))
        .exclude(recovery_verifier_hash="")
        .first()
    )
    if account is None:
        raise RecoveryRefused
    return _sign_in(account)


def sign_out(*, token: str) -> None:
    AccountSignIn.objects.filter(token_hash=digest(token)).delete()


# --- Passkeys added and removed ---


def passkey_add_begin(*, account: Account) -> dict:
    challenge = _challenge_issue(ChallengeKind.ADD_PASSKEY, account.pk)
    existing = list(account.credentials.values_list("credential_id", flat=True))
    return passkeys.registration_options(user_handle=account.pk, challenge=challenge, exclude=existing)


def passkey_add_finish(*, account: Account, credential: dict) -> AccountCredential:
    """Adds the passkey that answered (its challenge consumed first, as above)."""
    challenge, issued = _challenge_consume(credential, ChallengeKind.ADD_PASSKEY)
    if issued.account_id != account.pk:  # a challenge issued to another account
        raise CeremonyFailed
    try:
        passkey = passkeys.verify_registration(credential, challenge=challenge)
    except passkeys.CeremonyRefused as exc:
        raise CeremonyFailed from exc
    return _passkey_keep(account, passkey)


@transaction.atomic
def passkey_remove(*, account: Account, passkey_id: int) -> bool:
    """Removes the passkey and the tokens wrapped for it. False: the account has no such passkey.
    Refused (LastWayIn) when it is the account's only way to sign in."""
    locked = Account.objects.select_for_update().filter(pk=account.pk).first()  # one removal at a time
    if locked is None or not locked.credentials.filter(pk=passkey_id).exists():
        return False
    if locked.credentials.count() == 1 and not locked.recovery_verifier_hash:
        raise LastWayIn
    held = locked.credentials.filter(pk=passkey_id)
    held.delete()  # its wrapped tokens cascade
    return True


# --- Sessions kept ---


@dataclass(frozen=True)
class Wrapping:
    """One wrapped copy of a session's token, as the browser sends it: for a passkey (its
    credential id, base64url) or, `credential_id` None, for the recovery code."""

    credential_id: str | None
    salt: bytes
    wrapped: bytes


@transaction.atomic
def session_keep(*, account: Account, session: AgentSession, wrappings: list[Wrapping]) -> bool:
    """The account keeps `session` (the caller proved it holds the session's token), with the
    token wrapped as given; a session it keeps already gets these wrappings in place of the ones
    for the same passkeys. Returns True when the session is new to the account."""
    credentials = dict(account.credentials.values_list("credential_id", "pk"))
    for wrapping in wrappings:
        if wrapping.credential_id is not None and wrapping.credential_id not in credentials:
            raise UnknownPasskey
    entry, created = AccountSession.objects.get_or_create(agent_session=session, defaults={"account": account})
    if entry.account_id != account.pk:
        raise SessionHeldElsewhere
    for wrapping in wrappings:
        WrappedSessionToken.objects.update_or_create(
            entry=entry,
            credential_id=credentials.get(wrapping.credential_id) if wrapping.credential_id else None,
            defaults={"salt": wrapping.salt, "wrapped": wrapping.wrapped},
        )
    return created


def session_let_go(*, account: Account, session_id: str) -> bool:
    """The account stops keeping the session (which stays as it is, for whoever holds its token).
    False: the account keeps no live session of that id (an expired one is gone, as everywhere)."""
    live = AgentSession.objects.live().filter(session_id=session_id)
    return AccountSession.objects.filter(account=account, agent_session__in=live).delete()[0] > 0


# --- The account deleted ---


@dataclass
class AccountErased:
    sessions: int = 0
    events: int = 0
    passkeys: int = 0
    session_ids: list[str] = field(default_factory=list)


def account_delete(*, account: Account) -> AccountErased:
    """Erases every session the account keeps (live or expired) through the one erasure, each
    logged as its owner's deletion; then the account, its passkeys, sign-ins and wrapped tokens."""
    kept = AgentSession.objects.filter(account_entry__account=account)
    session_ids = sorted(kept.values_list("session_id", flat=True))
    erased = erasure.erase_sessions(kept, trigger=ErasureTrigger.ACCOUNT)
    with transaction.atomic():
        passkeys_erased = AccountCredential.objects.filter(account=account).count()
        Account.objects.filter(pk=account.pk).delete()  # cascades: passkeys, sign-ins, what is left
    return AccountErased(
        sessions=erased.sessions, events=erased.events, passkeys=passkeys_erased, session_ids=session_ids
    )


# --- The purge's part ---


@dataclass
class AccountsPurged:
    accounts: int = 0
    challenges: int = 0
    sign_ins: int = 0

    def as_dict(self) -> dict:
        return {"accounts": self.accounts, "challenges": self.challenges, "sign_ins": self.sign_ins}


def accounts_purge(*, now: dt.datetime | None = None) -> AccountsPurged:
    """Challenges and sign-ins past their time; and accounts keeping no session whose last sign-in
    (or creation) is older than ACCOUNT_PURGE_AFTER_DAYS, with their passkeys. An account still
    keeping an expired session waits for the session purge (which runs first) to erase it."""
    now = now or timezone.now()
    purged = AccountsPurged()
    purged.challenges = AccountChallenge.objects.filter(expires_at__lte=now).delete()[0]
    purged.sign_ins = AccountSignIn.objects.filter(expires_at__lte=now).delete()[0]
    idle_since = now - dt.timedelta(days=settings.ACCOUNT_PURGE_AFTER_DAYS)
    idle = (
        Account.objects.filter(sessions__isnull=True)
        .annotate(active_at=Greatest("created_at", Coalesce("last_sign_in_at", "created_at")))
        .filter(active_at__lte=idle_since)
        .values_list("pk", flat=True)
    )
    for pk in list(idle):
        with transaction.atomic():
            # Checked again in the transaction: a session kept since is kept.
            _total, deleted = Account.objects.filter(pk=pk, sessions__isnull=True).delete()
            purged.accounts += deleted.get("sessions_app.Account", 0)
    return purged
