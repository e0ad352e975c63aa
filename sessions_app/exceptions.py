"""The domain's errors: what a use case can refuse with. The API maps each to one answer
(api/errors.py); nothing here imports ADK, Django's HTTP layer or the storage."""

from enum import StrEnum


class ModelFailureReason(StrEnum):
    """Why the model could not produce a turn: the one list the turn (turns/failures.py), the
    errors (api/errors.py) and the schema (api/serializers.py) share."""

    TIMEOUT = "timeout"
    QUOTA = "quota"
    UNAVAILABLE = "unavailable"
    UPSTREAM = "upstream"
    BAD_RESPONSE = "bad_response"
    LLM_CALLS_LIMIT = "llm_calls_limit"
    # A turn that ended without an answer to show.
    BLOCKED = "blocked"
    TRUNCATED = "truncated"
    EMPTY = "empty"


class SessionMissing(Exception):
    """The session is not there (never was, deleted, or purged): one miss, whichever."""


class TurnInProgress(Exception):
    """Another turn on this session is running (or wrote to it while this one ran)."""


class SessionLimitReached(Exception):
    """The session is full (`limit`: "turns" or "bytes"); no turn more runs on it."""

    def __init__(self, limit: str):
        super().__init__(limit)
        self.limit = limit


class TurnsBusy(Exception):
    """This process already runs AGENT_MAX_TURNS_IN_FLIGHT turns; `retry_after` seconds is worth waiting."""

    retry_after = 1


class ClientTurnsBusy(Exception):
    """The client (its address, or its network) already has as many turns in flight as it may
    (AGENT_MAX_TURNS_PER_CLIENT and the network bounds); `retry_after` seconds is worth waiting:
    a turn takes seconds, so asking sooner would mostly be refused again."""

    retry_after = 5


class ModelFailure(Exception):
    """The model could not produce this turn (`reason`); `retry_after`: seconds worth waiting,
    where it applies."""

    def __init__(self, reason: ModelFailureReason, retry_after: int | None = None):
        super().__init__(reason)
        self.reason = ModelFailureReason(reason)
        self.retry_after = retry_after


# --- Passkey accounts (sessions_app.account_services) ---


class CeremonyFailed(Exception):
    """A WebAuthn response refused: its challenge unknown, used, expired or for another ceremony, or
    the response itself does not verify (origin, RP id, signature, sign count). One refusal,
    whichever: the client learns only that it must begin again."""


class RecoveryRefused(Exception):
    """No account holds this recovery code (or the account has none)."""


class SessionHeldElsewhere(Exception):
    """The session is already kept by another account: a session belongs to one account at most."""


class LastWayIn(Exception):
    """Removing this passkey would leave the account no way to sign in (no other passkey and no
    recovery code)."""


class UnknownPasskey(Exception):
    """A wrapped token names a passkey the account does not have."""
