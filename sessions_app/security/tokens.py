"""Session tokens and the owner id derived from them.

The server makes a random token when a session starts and hands it to the
client once. Only a one-way derivation of it is stored: the ADK `user_id`
of the session, "anon-" + the first 32 hex digits of its SHA-256. Whoever
presents the token proves ownership; nobody can pick an owner id.
"""

import hashlib
import secrets

TOKEN_HEADER = "X-Session-Token"
OWNER_ID_PREFIX = "anon-"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def owner_id_for(token: str) -> str:
    # Any header value is hashed, whatever its shape, so a malformed token
    # takes the same path as a wrong one and ends in the same 404.
    digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
    return OWNER_ID_PREFIX + digest[:32]
