"""Enumerations shared by the models, the storage and the admin (no other import of ours)."""

from django.db import models
from django.utils.translation import gettext_lazy as _


class ErasureTrigger(models.TextChoices):
    """Who asked for an erasure (`DeletionAudit.trigger`, and the kind of the deletion log's entry)."""

    API = "api", _("API (owner)")
    TTL = "ttl", _("TTL purge (scheduled)")
    STARTUP = "startup", _("TTL purge (at start-up)")
    ADMIN = "admin", _("Admin")
    COMMAND = "command", _("Management command")
    ADK = "adk", _("ADK session service")
    ERASE_ALL = "erase_all", _("Erase every session (incident response)")
    ACCOUNT = "account", _("Account deleted (owner)")


class FailureKind(models.TextChoices):
    """What did not verify. Through the API the key always belongs to the row's owner, so a
    value that does not open was altered, moved or put back."""

    STATE_TAMPERED = "state_tampered", _("state does not open at its revision")
    STATE_REPLAYED = "state_replayed", _("revision behind the stored events (older state put back)")
    EVENTS_MISSING = "events_missing", _("fewer events than the revision (deleted)")
    EVENT_SEQUENCE_BROKEN = "event_sequence_broken", _("events not numbered 1..revision")
    EVENT_TAMPERED = "event_tampered", _("event does not open in its place")
    USER_STATE_TAMPERED = "user_state_tampered", _("user state does not open")
    # Not a stored value: a model call to a tool the agent does not have (it ran nothing; a sign of
    # a confused or steered model), counted with the others for the operators (turns/service.py).
    UNKNOWN_TOOL_CALL = "unknown_tool_call", _("the model called a tool that does not exist")


class ReadinessCheck(models.TextChoices):
    """What `/readyz` checks (sessions_app.selectors_health), in the order it answers them."""

    DATABASE = "database", _("Database reachable")
    MIGRATIONS = "migrations", _("Migrations applied")
    CACHE = "cache", _("Cache server reachable")
    DISK = "disk", _("Free space above the headroom")
    PURGE_SCHEDULE = "purge_schedule", _("Purge schedule present and on time")
    SIGNING_KEY = "signing_key", _("Deletion log's signing key usable")


class CheckStatus(models.TextChoices):
    """A readiness check's outcome: all a client of `/readyz` learns of it."""

    OK = "ok", _("ok")
    FAILING = "failing", _("failing")
    NOT_CONFIGURED = "not_configured", _("not configured here")


class ChallengeKind(models.TextChoices):
    """What a WebAuthn challenge was issued for (`AccountChallenge.kind`): a challenge answers only
    the ceremony it was made for."""

    REGISTER = "register", _("register a new account")
    SIGN_IN = "sign_in", _("sign in")
    ADD_PASSKEY = "add_passkey", _("add a passkey to an account")
