"""One deletion-log entry and its leaf bytes: what was erased, when, why and how; never content, a
token, an owner id or a client address.

The leaf is canonical JSON, UTF-8 (ASCII in fact): keys sorted, no spaces, integers in decimal,
timestamps `YYYY-MM-DDTHH:MM:SSZ` in UTC, `created` rounded down to the hour. For example:

    {"created":"2026-05-01T13:00:00Z","erased":{"bytes":48213,"events":12,"plan_versions":3},
    "erased_at":"2026-05-02T09:14:07Z","how":{"model_provider":"gemini","rows_deleted":17,
    "sealed_with_unstored_key":true,"sqlite_secure_delete":true},"session":"<SHA-256 hex of the
    session id>","trigger":"owner_delete","v":1}

(one line; `plan_versions` is null where the erasure could not count them: entries written before
sessions kept a clear count, or a session stored before it and not used since). Bytes that are not
exactly the encoding of their own values are refused, so an entry has one spelling and a changed
byte always changes its leaf hash.
"""

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from sessions_app.receipts.strict import Rejected

FORMAT_VERSION = 1
# Why a session was erased: its owner's DELETE, an operator in the admin, the scheduled purge
# (past its TTL, or past its maximum age), the start-up purge, ADK's delete_session, and an
# operator erasing every session at once (incident response: `purge_sessions --all`).
TRIGGERS = ("owner_delete", "admin", "ttl_purge", "max_age", "startup_purge", "adk_delete_session", "erase_all")
TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"
_SESSION_DIGEST = re.compile(r"[0-9a-f]{64}")
# Providers' short names only, so the field cannot carry free text: one name, or several
# joined by commas in the order first used; "none" where no model saw the conversation.
_PROVIDER_NAME = r"[a-z0-9][a-z0-9._-]{0,63}"
_PROVIDER = re.compile(rf"{_PROVIDER_NAME}(,{_PROVIDER_NAME})*")
NO_PROVIDER = "none"


def session_digest(session_id: str) -> str:
    """How an entry names a session: the SHA-256 of its id's UTF-8 bytes, in lowercase hex."""
    return hashlib.sha256(session_id.encode()).hexdigest()


@dataclass(frozen=True)
class DeletionEntry:
    session: str  # session_digest(session id)
    created: datetime  # UTC, to the hour
    erased_at: datetime  # UTC, to the second
    trigger: str
    events: int
    # None (JSON null): not counted. The count is the session's clear counter; older entries, and
    # sessions stored before it, have none (the sealed state cannot be opened without the token).
    plan_versions: int | None
    bytes_erased: int
    rows_deleted: int
    sqlite_secure_delete: bool
    sealed_with_unstored_key: bool
    model_provider: str

    def __post_init__(self):
        counts = (self.events, self.bytes_erased, self.rows_deleted)
        counts += () if self.plan_versions is None else (self.plan_versions,)
        flags = (self.sqlite_secure_delete, self.sealed_with_unstored_key)
        if not _SESSION_DIGEST.fullmatch(self.session):
            raise ValueError("session is the SHA-256 hex of the session id")
        if self.trigger not in TRIGGERS:
            raise ValueError(f"trigger is one of {', '.join(TRIGGERS)}")
        if not all(type(count) is int and count >= 0 for count in counts):
            raise ValueError("counts are non-negative integers")
        if not all(type(flag) is bool for flag in flags):
            raise ValueError("flags are booleans")
        if not _PROVIDER.fullmatch(self.model_provider):
            raise ValueError("model_provider is short lowercase names joined by commas")
        for moment in (self.created, self.erased_at):
            if moment.tzinfo is not UTC or moment.microsecond:
                raise ValueError("times are in UTC, to the second")
        if self.created.minute or self.created.second:
            raise ValueError("created is to the hour")

    @classmethod
    def for_session(cls, session_id: str, *, created: datetime, erased_at: datetime, **fields) -> "DeletionEntry":
        """The entry for an erasure, its times rounded down (`created` to the hour)."""
        if created.tzinfo is None or erased_at.tzinfo is None:
            raise ValueError("times carry their time zone")
        created = created.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        erased_at = erased_at.astimezone(UTC).replace(microsecond=0)
        return cls(session=session_digest(session_id), created=created, erased_at=erased_at, **fields)

    def leaf_bytes(self) -> bytes:
        document = {
            "v": FORMAT_VERSION,
            "session": self.session,
            "created": self.created.strftime(TIMESTAMP),
            "erased_at": self.erased_at.strftime(TIMESTAMP),
            "trigger": self.trigger,
            "erased": {"events": self.events, "plan_versions": self.plan_versions, "bytes": self.bytes_erased},
            "how": {
                "rows_deleted": self.rows_deleted,
                "sqlite_secure_delete": self.sqlite_secure_delete,
                "sealed_with_unstored_key": self.sealed_with_unstored_key,
                "model_provider": self.model_provider,
            },
        }
        return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()

    @classmethod
    def from_leaf_bytes(cls, data: bytes) -> "DeletionEntry":
        try:
            document = json.loads(data)
            if document["v"] != FORMAT_VERSION:
                raise Rejected(f"the entry is in format {document['v']!r}, this verifier reads {FORMAT_VERSION}")
            erased, how = document["erased"], document["how"]
            entry = cls(
                session=document["session"],
                created=_timestamp(document["created"]),
                erased_at=_timestamp(document["erased_at"]),
                trigger=document["trigger"],
                events=erased["events"],
                plan_versions=erased["plan_versions"],
                bytes_erased=erased["bytes"],
                rows_deleted=how["rows_deleted"],
                sqlite_secure_delete=how["sqlite_secure_delete"],
                sealed_with_unstored_key=how["sealed_with_unstored_key"],
                model_provider=how["model_provider"],
            )
        except Rejected:
            raise
        except (ValueError, TypeError, KeyError) as error:  # JSON, a missing field, a wrong type
            raise Rejected(f"the entry is not a deletion-log entry ({error})") from None
        if entry.leaf_bytes() != data:  # extra fields, spaces, key order, number spellings
            raise Rejected("the entry is not in its canonical encoding")
        return entry


def _timestamp(text: str) -> datetime:
    return datetime.strptime(text, TIMESTAMP).replace(tzinfo=UTC)
