"""Session tokens and the owner id derived from them.

The server makes a random token when a session starts and hands it to the
client once. Only a one-way derivation of it is stored: the ADK `user_id`
of the session, "anon-" + the first 32 hex digits of its SHA-256. Whoever
presents the token proves ownership; nobody can pick an owner id. The
derivation is defined in sessions_app.deletion_log.formats.lookup, because the offline
receipt verifier derives the deletion log's lookup value from it too.
"""

import secrets

from sessions_app.deletion_log.formats.lookup import owner_id_for

__all__ = ["TOKEN_HEADER", "new_token", "owner_id_for"]

TOKEN_HEADER = "X-Session-Token"


def new_token() -> str:
    return secrets.token_urlsafe(32)
