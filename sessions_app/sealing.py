"""What is sealed at rest, under which key, and in which place.

`crypto` derives keys from the session token and seals bytes; this module
says how each stored value uses it. Every value that can carry personal data
is sealed with a key derived from the owner's token:

| value                     | column                   | key scope, purpose           | place                        |
|---------------------------|--------------------------|------------------------------|------------------------------|
| session state (JSON)      | agentsession.state       | app/user/session, "session"  | "state"                      |
| each event (ADK's JSON)   | sessionevent.event_data  | app/user/session, "session"  | "event/<event id>/<time>"    |
| the owner's `user:` state | userstate.state          | app/user, "owner"            | "user_state"                 |

An event's place names its id and timestamp, which stay in clear in the same
row, so a ciphertext copied onto another event, another session or another
owner does not open. ADK `app:` state has no owner, so no token can key it: it
stays in clear and must never hold personal data.

A value that is not sealed bytes at all (a row written before encryption)
fails like a wrong key: `DecryptionFailed`.
"""

from __future__ import annotations

import json
from typing import Any

from . import crypto

STATE_PLACE = "state"
USER_STATE_PLACE = "user_state"


def session_sealer(app_name: str, user_id: str, session_id: str) -> crypto.Sealer:
    """The sealer of one session's state and events (raises KeyUnavailable without a token)."""
    return crypto.Sealer(f"{app_name}/{user_id}/{session_id}", "session")


def owner_sealer(app_name: str, user_id: str) -> crypto.Sealer:
    """The sealer of one owner's `user:` state (raises KeyUnavailable without a token)."""
    return crypto.Sealer(f"{app_name}/{user_id}", "owner")


def event_place(event_id: str, timestamp: float) -> str:
    # float() so an int timestamp and the float the database gives back name the same place.
    return f"event/{event_id}/{float(timestamp)!r}"


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


def seal_state(sealer: crypto.Sealer, state: dict) -> bytes:
    return _seal_json(sealer, state, STATE_PLACE)


def open_state(sealer: crypto.Sealer, sealed: Any) -> dict:
    return _open_json(sealer, sealed, STATE_PLACE)


def seal_user_state(sealer: crypto.Sealer, state: dict) -> bytes:
    return _seal_json(sealer, state, USER_STATE_PLACE)


def open_user_state(sealer: crypto.Sealer, sealed: Any) -> dict:
    return _open_json(sealer, sealed, USER_STATE_PLACE)


def seal_event(sealer: crypto.Sealer, event_id: str, timestamp: float, event_json: str) -> bytes:
    return sealer.seal(event_json.encode("utf-8"), event_place(event_id, timestamp))


def open_event(sealer: crypto.Sealer, event_id: str, timestamp: float, sealed: Any) -> str:
    """The event's JSON, as Event.model_dump_json wrote it."""
    return sealer.open(_stored_bytes(sealed), event_place(event_id, timestamp)).decode("utf-8")
