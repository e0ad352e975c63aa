"""Storage for ADK sessions, their events and ADK's scoped state.

The layout mirrors ADK's own SQLite session store (sessions, events,
app_states, user_states) so the two can be compared side by side, with two
additions: a surrogate key, so an event row points at one session row and is
removed with it by a cascading delete, and a revision counter, so a writer
holding a stale copy of a session is detected exactly instead of by
comparing rounded timestamps.

Everything that can carry personal data is stored sealed (encryption at rest,
keyed by the owner's session token; `sessions_app.security.sealing` says what goes
where): the session state, each event, and the owner's `user:` state are
binary columns holding ciphertext. The other columns stay in clear because
retention and operations need them: ids, the derived owner id, times, an
event's author and invocation id, an event's sequence number, the revision,
the turn lock, the model providers and how many plan versions were saved.
"""

from __future__ import annotations

import datetime as dt
import secrets
import uuid

from django.db import models
from django.db.models import Count, F, Sum
from django.db.models.functions import Coalesce, Least
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from sessions_app import retention
from sessions_app.choices import ChallengeKind, ErasureTrigger, FailureKind
from sessions_app.infra.sql import ByteLength


def new_session_id() -> str:
    return str(uuid.uuid4())


class AgentSessionQuerySet(models.QuerySet):
    """The selections the API, the admin, the purge and the erasure make of sessions."""

    def owned(self, app_name: str, owner_id: str, session_id: str) -> AgentSessionQuerySet:
        """The owner's session by its id, live or expired."""
        return self.filter(app_name=app_name, owner_id=owner_id, session_id=session_id)

    def expired(self, now: dt.datetime | None = None, ttl_hours: float | None = None) -> AgentSessionQuerySet:
        """Past their TTL or their maximum age at `now`: waiting for the purge (the API treats them as gone)."""
        return self.filter(retention.expired_q(now, ttl_hours))

    def live(self) -> AgentSessionQuerySet:
        """Not expired now."""
        return self.exclude(retention.expired_q())

    def expiring(self, within: dt.timedelta) -> AgentSessionQuerySet:
        """Live now, expired `within` from now."""
        return self.live().filter(retention.expired_q(timezone.now() + within))

    def with_usage(self) -> AgentSessionQuerySet:
        """With `expires_at` (`retention.expires_at` as SQL, so a list can sort by it), `event_count`
        and `size_bytes` (the sealed state plus every sealed event: what the session takes on disk,
        readable without a key), all in the one query."""
        return self.annotate(
            expires_at=Least(F("last_activity_at") + retention.ttl(), F("created_at") + retention.max_age()),
            event_count=Count("events"),
            size_bytes=ByteLength("state") + Coalesce(Sum(ByteLength("events__event_data")), 0),
        )


class AgentSession(models.Model):
    app_name = models.CharField(_("app name"), max_length=128)
    # ADK's user id: the owner. For sessions made by the API it is derived
    # from the session token (never the token itself).
    owner_id = models.CharField(max_length=128)
    # ADK lets callers choose any string; the API always uses a UUID4.
    session_id = models.CharField(_("session id"), max_length=128, default=new_session_id)
    # Session-scoped state only, as sealed JSON (resume, plan versions, flags);
    # `app:` and `user:` keys live in the tables below and `temp:` keys are
    # never stored.
    state = models.BinaryField()
    created_at = models.DateTimeField()
    # The TTL is counted from here, so it is indexed.
    last_activity_at = models.DateTimeField(db_index=True)
    # Bumped by every appended event; ADK's Session carries it back to us as
    # its storage marker, which is how a stale writer is told apart.
    revision = models.PositiveBigIntegerField(_("revision"), default=0)
    # The turn lock where it is a row (PostgreSQL; on SQLite it is a file lock):
    # set while a conversation turn runs, so a second concurrent turn on the
    # same session is refused (409) instead of interleaving its events.
    turn_started_at = models.DateTimeField(_("turn started at"), null=True, blank=True)
    # Who holds the row lock: the holder's database connection on PostgreSQL
    # (sessions_app.storage.turn_lock). A lock whose holder is gone is free at
    # once; one whose holder is unknown, after the turn timeout.
    turn_holder = models.CharField(max_length=64, blank=True, default="", db_default="")
    # The model providers that received this session's content, comma-separated in the order
    # first used (sessions_app.model_provider: "offline", "gemini-api-paid", ...): noted when a
    # turn takes the lock, before the model is called, so a turn that failed counts too. Empty
    # until the first turn: creating a session sends nothing to a model.
    model_providers = models.TextField(_("model providers"), blank=True, default="", db_default="")
    # How many plan versions the session has saved (agent.plans.plan_count of its state), written
    # with the state in the turn's transaction: a count in clear, so an erasure without the token
    # (a purge) can say in its deletion-log entry what it erased. No content. NULL: not counted
    # (a session stored before this column, until its next turn).
    plan_versions = models.PositiveIntegerField(_("plan versions"), null=True, default=0, db_default=0)

    objects = AgentSessionQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["app_name", "owner_id", "session_id"], name="unique_session_per_owner")
        ]
        indexes = [models.Index(fields=["session_id"], name="session_id_idx")]
        verbose_name = _("session")
        verbose_name_plural = _("sessions")

    def __str__(self) -> str:
        return _("session %(id)s") % {"id": self.session_id[:8]}

    @property
    def model_provider_ids(self) -> list[str]:
        """Who received this session's resume and conversation (see `model_providers`)."""
        return [name for name in self.model_providers.split(",") if name]


class SessionEvent(models.Model):
    # The session's row (its surrogate key), not ADK's session id.
    agent_session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="events")
    event_id = models.CharField(max_length=128)
    invocation_id = models.CharField(max_length=256, blank=True, default="")
    author = models.CharField(max_length=256, blank=True, default="")
    # Its position in the session, 1 for the first: the session's revision
    # when it was appended. Events are read in this order.
    seq = models.PositiveIntegerField()
    # ADK's float timestamp, kept exact for `after_timestamp` filtering.
    timestamp = models.FloatField()
    # The whole ADK Event as JSON (Event.model_dump_json), sealed: its place is
    # bound to seq, event_id and timestamp above, which stay in clear, so a
    # deleted, swapped or renumbered event is detected (`sealing`).
    event_data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["agent_session", "seq"], name="unique_event_seq_per_session")]
        indexes = [
            models.Index(fields=["agent_session", "timestamp"], name="event_session_time_idx"),
            # append_event looks for an equal copy of the event (same id) before
            # storing it; without this index that check reads every event of
            # the session (benchmarks/results/growth.md).
            models.Index(fields=["agent_session", "event_id"], name="event_session_event_id_idx"),
        ]

    def __str__(self) -> str:
        return _("event %(id)s") % {"id": self.event_id[:8]}


class AppState(models.Model):
    """ADK `app:` state, shared by every session of an app.

    Stored in clear: it has no owner, so no token can key it. It must never
    hold personal data (our agent writes none; a test checks it stays empty).
    """

    app_name = models.CharField(max_length=128, unique=True)
    state = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)


class UserState(models.Model):
    """ADK `user:` state, shared by the sessions of one owner in one app."""

    app_name = models.CharField(max_length=128)
    owner_id = models.CharField(max_length=128)
    # Sealed JSON, keyed by the owner's token (one owner per token).
    state = models.BinaryField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["app_name", "owner_id"], name="unique_user_state")]


class DeletionAudit(models.Model):
    """One row per deletion or purge: what went and why, never whose or what it said."""

    Trigger = ErasureTrigger

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    trigger = models.CharField(_("trigger"), max_length=16, choices=Trigger.choices)
    sessions_deleted = models.PositiveIntegerField(_("sessions deleted"))
    events_deleted = models.PositiveIntegerField(_("events deleted"))
    duration_ms = models.PositiveIntegerField(_("duration (ms)"))

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("deletion")
        verbose_name_plural = _("deletions")

    def __str__(self) -> str:
        return _("%(trigger)s: %(count)s sessions") % {
            "trigger": self.get_trigger_display(),
            "count": self.sessions_deleted,
        }


class DeletionLogEntry(models.Model):
    """One erasure in the deletion log (sessions_app.deletion_log.formats): the entry's canonical JSON, which
    names the session by its receipt lookup (format 2; format 1: the SHA-256 of its id) and holds
    an hour, a kind of trigger and rounded sizes (format 1: counts, times and names).

    Append-only: written by the erasure's transaction (deletion_log/store.py), never updated or
    deleted. It is not session data: no purge and no erasure touches it.
    """

    index = models.PositiveBigIntegerField(_("index"), primary_key=True)  # the position in the log, from 0
    session_digest = models.CharField(_("session (SHA-256)"), max_length=64, db_index=True)
    leaf = models.BinaryField()  # DeletionEntry.leaf_bytes()
    leaf_hash = models.BinaryField()  # RFC 6962's hash of the leaf, so the tree is rebuilt without rehashing

    class Meta:
        verbose_name = _("deletion log entry")
        verbose_name_plural = _("deletion log entries")

    def __str__(self) -> str:
        return _("entry %(index)s") % {"index": self.index}


class DeletionLogCheckpoint(models.Model):
    """A signed checkpoint of the deletion log: one per erasure that erased something, over every
    entry so far. Append-only, like the entries."""

    size = models.PositiveBigIntegerField(_("size"), primary_key=True)  # entries the checkpoint covers
    root = models.BinaryField()  # the RFC 6962 root over the first `size` entries
    signed = models.TextField()  # the C2SP signed note (checkpoint text and signature)
    # The tree's right edge at `size` (deletion_log.formats.merkle.RightEdge): the next erasure appends to it
    # without reading the earlier entries back.
    right_edge = models.BinaryField()
    signed_at = models.DateTimeField(_("signed at"))

    class Meta:
        verbose_name = _("deletion log checkpoint")
        verbose_name_plural = _("deletion log checkpoints")

    def __str__(self) -> str:
        return f"checkpoint {self.size}"


class DeletionLogNode(models.Model):
    """The hash of one complete subtree of the deletion log's Merkle tree, above the leaves (whose
    hashes are the entries' `leaf_hash`): written with the entry that completes it, in the
    erasure's transaction, so a proof reads O(log n) of these rows instead of every entry.
    Append-only, like the entries; hashes only."""

    # deletion_log.formats.merkle.post_order(height, index): the order subtrees complete in, so appends go
    # to the table's end and the subtrees of a range of entries are one range of positions.
    position = models.PositiveBigIntegerField(primary_key=True)
    node_hash = models.BinaryField()

    class Meta:
        verbose_name = _("deletion log tree node")
        verbose_name_plural = _("deletion log tree nodes")

    def __str__(self) -> str:
        return f"node {self.position}"


class IntegrityFailure(models.Model):
    """One row per read refused because a session's stored values or history did not verify.

    When and what kind only: the session's id goes to the log line, not here,
    so nothing ties a row to a person once the session is deleted.
    """

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    kind = models.CharField(_("kind"), max_length=32, choices=FailureKind.choices)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("integrity failure")
        verbose_name_plural = _("integrity failures")

    def __str__(self) -> str:
        return f"{self.kind} at {self.created_at:%Y-%m-%d %H:%M}"


# --- Optional passkey accounts (docs/ACCOUNTS.md) ------------------------------------------------
# An account is a random id and its passkeys: no e-mail, no password, no name. It keeps, for each
# session added to it, the session's token wrapped in the browser (under a key derived from a
# passkey's PRF output or from the recovery code): opaque bytes the server cannot open. What an
# account reveals is which sessions belong to one person; nothing here reveals what they say.


def new_account_id() -> str:
    """32 random bytes, base64url: the account's id and its WebAuthn user handle."""
    return secrets.token_urlsafe(32)


class Account(models.Model):
    id = models.CharField(primary_key=True, max_length=64, default=new_account_id, editable=False)
    created_at = models.DateTimeField(_("created"), default=timezone.now)
    # The last sign-in (a passkey's or the recovery code's); NULL: never since registering.
    last_sign_in_at = models.DateTimeField(_("last sign-in"), null=True, blank=True)
    # The SHA-256 (hex) of what the browser derives from the recovery code to prove it holds it
    # (HKDF, an info string of its own): never the code, nor the key the code wraps tokens with.
    # Empty: no recovery code.
    recovery_verifier_hash = models.CharField(max_length=64, blank=True, default="", db_index=True)

    class Meta:
        verbose_name = _("account")
        verbose_name_plural = _("accounts")

    def __str__(self) -> str:
        return f"account {self.id[:6]}"


class AccountCredential(models.Model):
    """One passkey of an account: what WebAuthn needs to verify its assertions, and nothing else."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="credentials")
    # The credential id as the authenticator made it, base64url (at most 1,023 bytes).
    credential_id = models.CharField(max_length=1400, unique=True)
    public_key = models.BinaryField()  # COSE_Key
    sign_count = models.PositiveBigIntegerField(default=0)
    # The authenticator's hints for finding it again ("internal", "hybrid", "usb", ...).
    transports = models.JSONField(default=list, blank=True)
    backup_eligible = models.BooleanField(_("backup eligible"), default=False)
    backed_up = models.BooleanField(_("backed up"), default=False)
    created_at = models.DateTimeField(_("created"), default=timezone.now)
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True)

    class Meta:
        verbose_name = _("passkey")
        verbose_name_plural = _("passkeys")

    def __str__(self) -> str:
        return f"passkey {self.pk}"


class AccountChallenge(models.Model):
    """A WebAuthn challenge: answers the one ceremony it was made for, once, before `expires_at`.
    Consumed by deleting its row; the purge removes the ones never answered."""

    # The SHA-256 (hex) of the challenge's bytes, which the client data carries back.
    challenge_hash = models.CharField(max_length=64, unique=True)
    kind = models.CharField(max_length=16, choices=ChallengeKind.choices)
    # Registering: the new account's id (its user handle), created only when the ceremony ends.
    # Adding a passkey: the signed-in account's id. Signing in: empty (any passkey may answer).
    account_id = models.CharField(max_length=64, blank=True, default="")
    expires_at = models.DateTimeField(db_index=True)


class AccountSignIn(models.Model):
    """A signed-in client: the SHA-256 (hex) of the X-Account-Token it holds, never the token."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="sign_ins")
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(db_index=True)


class AccountSession(models.Model):
    """A session kept by an account. The session's row stays its own (sealed under its token); this
    row says only that the account holds it. Erasing the session erases this row with it
    (storage.row_erasure), so nothing here outlives the session."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="sessions")
    # One account per session. DO_NOTHING: the erasure deletes this row itself, before the session's.
    agent_session = models.OneToOneField(AgentSession, on_delete=models.DO_NOTHING, related_name="account_entry")
    added_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = _("account's session")
        verbose_name_plural = _("accounts' sessions")


class WrappedSessionToken(models.Model):
    """A session's token, wrapped in the browser: for one passkey (under a key derived with HKDF from
    its PRF output and `salt`) or, with no passkey, for the recovery code (HKDF of the code and
    `salt`). Both fields are stored as the browser sent them; the server never sees the token, the
    PRF output or the code."""

    entry = models.ForeignKey(AccountSession, on_delete=models.CASCADE, related_name="wrapped_tokens")
    credential = models.ForeignKey(AccountCredential, on_delete=models.CASCADE, null=True, blank=True)
    salt = models.BinaryField()  # random per credential (per the recovery code), never a constant
    wrapped = models.BinaryField()  # AES-GCM: the nonce and the ciphertext with its tag

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["entry", "credential"], name="one_wrapping_per_passkey"),
            models.UniqueConstraint(
                fields=["entry"], condition=models.Q(credential__isnull=True), name="one_recovery_wrapping"
            ),
        ]
