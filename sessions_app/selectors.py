"""Reads. Every read the API makes of a session goes through `owned_live_session`."""

from __future__ import annotations

from agent import APP_NAME

from . import retention
from .models import AgentSession


def owned_live_session(session_id: str, owner_id: str) -> AgentSession | None:
    """The session if it exists, belongs to `owner_id` and has not expired.

    One query with id and owner together: "missing", "someone else's",
    "expired" and "deleted" are the same miss and take the same path.
    """
    sessions = AgentSession.objects.filter(
        app_name=APP_NAME, session_id=session_id, user_id=owner_id
    )
    return retention.live(sessions).first()
