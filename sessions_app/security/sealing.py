"""What is sealed at rest, under which key, and in which place.

`crypto` derives keys from the session token and seals bytes; this module
says how each stored value uses it. Every value that can carry personal data
is sealed with a key derived from the owner's token:

| value                     | column                  | key scope, purpose          | place                           |
|---------------------------|-------------------------|-----------------------------|---------------------------------|
| session state (JSON)      | agentsession.state      | app/user/session, "session" | "state/rev/<revision>"          |
| each event (ADK's JSON)   | sessionevent.event_data | app/user/session, "session" | "event/<seq>/<event id>/<time>" |
| the owner's `user:` state | userstate.state         | app/user, "owner"           | "user_state"                    |

An event's place names its id and timestamp, which stay in clear in the same
row, so a ciphertext copied onto another event, another session or another
owner does not open. ADK `app:` state has no owner, so no token can key it: it
stays in clear and must never hold personal data.

History (rollback and truncation). Sealing alone tells altered and moved
values apart, not an older value put back or a row deleted. So the history is
bound too: every append adds one event and bumps the session's revision, so
the events of a session at revision n are numbered 1..n (`seq`, in clear,
bound into each event's place) and the state is re-sealed with n in its place.
A read checks, in one statement, that the stored sequence numbers are exactly
1..revision (`check_event_sequence`) and opens the state with the revision
read with it: an older state put back fails to open (or, put back with its
revision, leaves more events than the revision), a deleted event leaves a
gap or too few, a swapped or renumbered event does not open in its place.
What no check without a server-held key can see: the whole session (state,
revision and events together) put back to an earlier consistent copy.

A value that is not sealed bytes at all (a row written before encryption)
fails like a wrong key. Every failure is an `IntegrityCheckFailed` naming the
session and the kind of failure (never content), which the API answers with
its uniform 404 and records (`sessions_app.storage.failure_counts`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sessions_app.choices import FailureKind
from sessions_app.security import crypto

USER_STATE_PLACE = "user_state"


class IntegrityCheckFailed(crypto.DecryptionFailed):
    """A stored value or the history of a session did not verify: the uniform 404."""

    def __init__(self, session_id: str, kind: FailureKind):
        super().__init__(f"integrity check failed: {kind}")
        self.session_id = session_id
        self.kind = kind


class SessionSealer(crypto.Sealer):
    """The sealer of one session's state and events; knows the session's public id for failures."""

    def __init__(self, app_name: str, owner_id: str, session_id: str):
        super().__init__(f"{app_name}/{owner_id}/{session_id}", "session")
        self.session_id = session_id


def session_sealer(app_name: str, owner_id: str, session_id: str) -> SessionSealer:
    """The sealer of one session's state and events (raises KeyUnavailable without a token)."""
    return SessionSealer(app_name, owner_id, session_id)


def owner_sealer(app_name: str, owner_id: str) -> crypto.Sealer:
    """The sealer of one owner's `user:` state (raises KeyUnavailable without a token)."""
    return crypto.Sealer(f"{app_name}/{owner_id}", "owner")


def state_place(revision: int) -> str:
    return f"state/rev/{int(revision)}"


def event_place(seq: int, event_id: str, timestamp: float) -> str:
    # float() so an int timestamp and the float the database gives back name the same place.
    return f"event/{int(seq)}/{event_id}/{float(timestamp)!r}"


def _stored_bytes(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise crypto.DecryptionFailed("not a sealed value")


def _seal_json(sealer: crypto.Sealer, value: dict, place: str) -> bytes:
    # ASCII JSON, as Django's JSONField wrote it: a lone surrogate in a string
    # is escaped instead of failing to encode.
    return sealer.seal(json.dumps(value).encode("ascii"), place)


def _open_json(sealer: crypto.Sealer, sealed: Any, place: str) -> dict:
    return json.loads(sealer.open(_stored_bytes(sealed), place))


def seal_state(sealer: SessionSealer, state: dict, revision: int) -> bytes:
    """The state as of `revision` (the number of events stored with it)."""
    return _seal_json(sealer, state, state_place(revision))


def open_state(sealer: SessionSealer, sealed: Any, revision: int) -> dict:
    """The state; `revision` must come from the same row, read in the same statement."""
    try:
        return _open_json(sealer, sealed, state_place(revision))
    except crypto.DecryptionFailed:
        raise IntegrityCheckFailed(sealer.session_id, FailureKind.STATE_TAMPERED) from None


def seal_user_state(sealer: crypto.Sealer, state: dict) -> bytes:
    return _seal_json(sealer, state, USER_STATE_PLACE)


def open_user_state(sealer: crypto.Sealer, sealed: Any) -> dict:
    return _open_json(sealer, sealed, USER_STATE_PLACE)


def seal_event(sealer: SessionSealer, seq: int, event_id: str, timestamp: float, event_json: str) -> bytes:
    """Event number `seq` (1 for the session's first) of the session."""
    return sealer.seal(event_json.encode("utf-8"), event_place(seq, event_id, timestamp))


def open_event(sealer: SessionSealer, seq: int, event_id: str, timestamp: float, sealed: Any) -> str:
    """The event's JSON, as Event.model_dump_json wrote it."""
    try:
        return sealer.open(_stored_bytes(sealed), event_place(seq, event_id, timestamp)).decode("utf-8")
    except crypto.DecryptionFailed:
        raise IntegrityCheckFailed(sealer.session_id, FailureKind.EVENT_TAMPERED) from None


@dataclass(frozen=True)
class StoredSequence:
    """A session's revision and its events' sequence numbers, read in ONE statement (one
    snapshot), so an append committing between two reads is never taken for tampering."""

    revision: int | None  # None: the session is gone (deleted meanwhile)
    count: int
    distinct: int
    lowest: int | None
    highest: int | None


def check_event_sequence(session_id: str, revision: int, stored: StoredSequence) -> None:
    """The stored events are numbered exactly 1..revision, and the revision has not gone back
    since `revision` (the one the state opens with) was read. Needs no key and no decryption."""
    kind = None
    if stored.revision < revision or stored.count > stored.revision:
        kind = FailureKind.STATE_REPLAYED
    elif stored.count < stored.revision:
        kind = FailureKind.EVENTS_MISSING
    elif stored.count and (stored.distinct, stored.lowest, stored.highest) != (stored.count, 1, stored.revision):
        kind = FailureKind.EVENT_SEQUENCE_BROKEN
    if kind is not None:
        raise IntegrityCheckFailed(session_id, kind)
