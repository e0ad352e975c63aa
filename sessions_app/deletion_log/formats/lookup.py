"""How the deletion log names a session: a value only the session's token can give (issue 39).

    owner id      = "anon-" + the first 32 hex digits of SHA-256(token)           (owner_id_for)
    receipt lookup = HMAC-SHA256(key = owner id, UTF-8,
                                 msg = "deletion-log-v2" + NUL + session id, UTF-8), lowercase hex

The server keeps the owner id beside the session while the session exists (it is how a token's
holder is recognised), so every erasure, the purge's too (it has no token), can compute the
lookup; once the session is erased, only the token's holder can compute it again. A stranger who
holds the session id alone (from a log line, a file name, a shared screen) cannot link it to an
entry: the owner id is 128 bits derived from the token and shown nowhere public. The message is
prefixed so that no other HMAC under the owner id can ever equal a lookup value.

The owner id's derivation lives here, not in sessions_app.security, so the offline verifier
(this package, standard library only) computes it the same way; sessions_app.security.tokens
uses this one definition. The page's script repeats it with WebCrypto (static/page/page.js,
`receiptLookup`), and a test checks the two agree.

    python -m sessions_app.deletion_log.formats.lookup < session-key.txt

prints the lookup of the session key read from standard input (where a receipt is:
/deletions/<lookup>); the key is never taken from the command line, where others can see it.
"""

import hashlib
import hmac
import sys

OWNER_ID_PREFIX = "anon-"
LOOKUP_DOMAIN = b"deletion-log-v2\x00"


def owner_id_for(token: str) -> str:
    # Any header value is hashed, whatever its shape, so a malformed token
    # takes the same path as a wrong one and ends in the same 404.
    digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
    return OWNER_ID_PREFIX + digest[:32]


def receipt_lookup(owner_id: str, session_id: str) -> str:
    """The value the log files the session's erasure under (64 lowercase hex digits)."""
    message = LOOKUP_DOMAIN + session_id.encode("utf-8", "surrogatepass")
    return hmac.new(owner_id.encode("utf-8", "surrogatepass"), message, hashlib.sha256).hexdigest()


def receipt_lookup_for_key(session_key: str) -> str:
    """The lookup from the session key the person saved, "<session id>.<token>" (the page's)."""
    session_id, dot, token = session_key.strip().partition(".")
    if not dot or not session_id or not token:
        raise ValueError("a session key is the session id and its token joined by a dot")
    return receipt_lookup(owner_id_for(token), session_id)


def main() -> int:
    try:
        print(receipt_lookup_for_key(sys.stdin.readline()))
    except ValueError as error:
        print(f"Rejected: {error}.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
