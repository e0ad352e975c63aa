"""The revision an ADK Session was read at, kept where ADK's own session services keep it.

ADK's persistent services (its DatabaseSessionService, and the MongoDB and Firestore services it
ships) tell a stale writer by a marker each Session carries, `Session._storage_update_marker`: set
when the session is read or written, compared when an event is appended. ADK offers no public
way to set or read it (google-adk 2.13.0: a pydantic private attribute, no accessor), and the
revision must travel with the Session through ADK (the Runner's own copies, `model_copy`), so
it is kept on the Session itself, by these two functions only. tests/adk/test_adk_marker.py pins
what they rely on, for the pinned ADK.
"""

from __future__ import annotations

from google.adk.sessions import Session


def read_revision(session: Session) -> int | None:
    """The revision `session` was read or last written at; None for a Session built elsewhere."""
    marker = session._storage_update_marker
    return None if marker is None else int(marker)


def mark_revision(session: Session, revision: int) -> None:
    """Records that `session` is as the store holds it at `revision`."""
    session._storage_update_marker = str(revision)
