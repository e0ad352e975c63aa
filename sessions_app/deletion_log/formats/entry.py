"""Deletion-log entries and their leaf bytes: that a session was erased, in which hour, why (the
kind of trigger) and roughly how much; never content, a token, an owner id or a client address.

Format 2 (issue 39, written since): canonical JSON, UTF-8 (ASCII in fact), keys sorted, no spaces,
integers in decimal. For example (one line):

    {"erased":{"bytes_at_most":65536,"events_at_most":16},"erased_hour":"2026-05-02T09:00:00Z",
    "how":{"sealed_with_unstored_key":true,"sqlite_secure_delete":true},
    "session":"<receipt lookup: HMAC of the session id under its owner id>","trigger":"owner","v":2}

Each field at the coarsest grain that still proves the erasure (docs/DATA_INVENTORY.md, "The
deletion log", says why each is there and who can read it):

- `session`: `receipt_lookup(owner id, session id)` (sessions_app.deletion_log.formats.lookup), which only the
  token's holder can compute once the session is gone; the SHA-256 of the id anyone could.
- `erased_hour`: the hour, not the second, of the erasure (UTC, minutes and seconds zero).
- `trigger`: the kind only: "owner" (the owner's DELETE, or ADK's delete_session on the owner's
  behalf), "retention" (past its TTL or maximum age: the scheduled, manual or start-up purge),
  "operator" (an operator in the admin, or erasing every session at once).
- `erased`: the number of events and of sealed bytes, each rounded up to a power of two (at least
  1 event, at least 1,024 bytes): the order of magnitude erased, not a resume's length.
- `how`: the two facts about the erasure's method the service commits to (secure_delete on the
  SQLite connection that deleted, the content sealed under a key never stored).

No creation time, exact count, plan versions, rows or model provider: none of them proves the
erasure, and each told a stranger something about the person (issue 39, finding 3).

Format 1 (written before): the entry named the session by the SHA-256 of its id and held the
created hour, the second of erasure, the exact trigger, counts and sizes and the model provider
(`DeletionEntryV1`). Such entries stay in the log and keep verifying (`read_entry` reads both);
the log no longer serves them by that digest. Bytes that are not exactly the encoding of their
own values are refused, so an entry has one spelling and a changed byte always changes its hash.
"""

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from sessions_app.deletion_log.formats.strict import Rejected

FORMAT_VERSION = 2
V1 = 1
# Why a session was erased (format 1 logged these; format 2 logs their kind, TRIGGER_KINDS): its
# owner's DELETE, an operator in the admin, the scheduled purge (past its TTL, or past its maximum
# age), the start-up purge, ADK's delete_session, and an operator erasing every session at once
# (incident response: `purge_sessions --all`).
TRIGGERS = ("owner_delete", "admin", "ttl_purge", "max_age", "startup_purge", "adk_delete_session", "erase_all")
TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"
_SESSION_DIGEST = re.compile(r"[0-9a-f]{64}")
# Providers' short names only, so the field cannot carry free text: one name, or several
# joined by commas in the order first used; "none" where no model saw the conversation.
_PROVIDER_NAME = r"[a-z0-9][a-z0-9._-]{0,63}"
_PROVIDER = re.compile(rf"{_PROVIDER_NAME}(,{_PROVIDER_NAME})*")
NO_PROVIDER = "none"
# Format 2's trigger kinds, and the kind of each of format 1's (what an erasure is logged as).
TRIGGER_KINDS = {
    "owner_delete": "owner",
    "adk_delete_session": "owner",
    "ttl_purge": "retention",
    "max_age": "retention",
    "startup_purge": "retention",
    "admin": "operator",
    "erase_all": "operator",
}
KINDS = ("owner", "retention", "operator")
EVENTS_AT_LEAST, BYTES_AT_LEAST = 1, 1024


def session_digest(session_id: str) -> str:
    """How a format-1 entry named a session: the SHA-256 of its id's UTF-8 bytes, in lowercase hex."""
    return hashlib.sha256(session_id.encode()).hexdigest()


class _Leaf:
    """An entry's leaf bytes, written and read by its format's layout: (attribute, the section of the
    document it sits in or None, its key), its times (`TIMESTAMP`) and its version."""

    VERSION: int
    TIMES: frozenset
    LAYOUT: tuple

    def leaf_bytes(self) -> bytes:
        document: dict = {"v": self.VERSION}
        for attribute, section, key in self.LAYOUT:
            value = getattr(self, attribute)
            (document.setdefault(section, {}) if section else document)[key] = (
                value.strftime(TIMESTAMP) if attribute in self.TIMES else value
            )
        return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()

    @classmethod
    def from_leaf_bytes(cls, data: bytes):
        """The entry of this format whose leaf bytes are `data`; Rejected with the reason otherwise."""
        try:
            document = json.loads(data)
            if document["v"] != cls.VERSION:
                raise Rejected(f"the entry is in format {document['v']!r}, not {cls.VERSION}")
            fields = {}
            for attribute, section, key in cls.LAYOUT:
                value = (document[section] if section else document)[key]
                fields[attribute] = _timestamp(value) if attribute in cls.TIMES else value
            entry = cls(**fields)
        except Rejected:
            raise
        except (ValueError, TypeError, KeyError) as error:  # JSON, a missing field, a wrong type
            raise Rejected(f"the entry is not a deletion-log entry ({error})") from None
        if entry.leaf_bytes() != data:  # extra fields, spaces, key order, number spellings
            raise Rejected("the entry is not in its canonical encoding")
        return entry


@dataclass(frozen=True)
class DeletionEntryV1(_Leaf):
    """Format 1, as written before issue 39: read (and verified), no longer written."""

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
    def for_session(cls, session_id: str, *, created: datetime, erased_at: datetime, **fields) -> "DeletionEntryV1":
        """The entry for an erasure, its times rounded down (`created` to the hour)."""
        if created.tzinfo is None or erased_at.tzinfo is None:
            raise ValueError("times carry their time zone")
        created = created.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        erased_at = erased_at.astimezone(UTC).replace(microsecond=0)
        return cls(session=session_digest(session_id), created=created, erased_at=erased_at, **fields)

    VERSION = V1
    TIMES = frozenset({"created", "erased_at"})
    LAYOUT = (
        ("session", None, "session"),
        ("created", None, "created"),
        ("erased_at", None, "erased_at"),
        ("trigger", None, "trigger"),
        ("events", "erased", "events"),
        ("plan_versions", "erased", "plan_versions"),
        ("bytes_erased", "erased", "bytes"),
        ("rows_deleted", "how", "rows_deleted"),
        ("sqlite_secure_delete", "how", "sqlite_secure_delete"),
        ("sealed_with_unstored_key", "how", "sealed_with_unstored_key"),
        ("model_provider", "how", "model_provider"),
    )


def at_most(count: int, floor: int) -> int:
    """`count` rounded up to a power of two, at least `floor` (itself a power of two)."""
    return max(floor, 1 << max(count - 1, 0).bit_length())


def _power_of_two_from(value, floor: int) -> bool:
    return type(value) is int and value >= floor and value & (value - 1) == 0


@dataclass(frozen=True)
class DeletionEntry(_Leaf):
    """Format 2: what an erasure is logged as since issue 39."""

    session: str  # receipt_lookup(owner id, session id)
    erased_hour: datetime  # UTC, to the hour
    trigger: str  # one of KINDS
    events_at_most: int  # a power of two >= EVENTS_AT_LEAST
    bytes_at_most: int  # a power of two >= BYTES_AT_LEAST
    sqlite_secure_delete: bool
    sealed_with_unstored_key: bool

    def __post_init__(self):
        if not _SESSION_DIGEST.fullmatch(self.session):
            raise ValueError("session is the receipt lookup, 64 lowercase hex digits")
        if self.trigger not in KINDS:
            raise ValueError(f"trigger is one of {', '.join(KINDS)}")
        if not _power_of_two_from(self.events_at_most, EVENTS_AT_LEAST):
            raise ValueError(f"events_at_most is a power of two, at least {EVENTS_AT_LEAST}")
        if not _power_of_two_from(self.bytes_at_most, BYTES_AT_LEAST):
            raise ValueError(f"bytes_at_most is a power of two, at least {BYTES_AT_LEAST}")
        if not all(type(flag) is bool for flag in (self.sqlite_secure_delete, self.sealed_with_unstored_key)):
            raise ValueError("flags are booleans")
        hour = self.erased_hour
        if hour.tzinfo is not UTC or hour.minute or hour.second or hour.microsecond:
            raise ValueError("erased_hour is in UTC, to the hour")

    @classmethod
    def for_erasure(
        cls, lookup: str, *, erased_at: datetime, trigger: str, events: int, bytes_erased: int, **how
    ) -> "DeletionEntry":
        """The entry for an erasure: `trigger` one of TRIGGERS (its kind is logged), the time rounded
        down to the hour, the counts rounded up to powers of two."""
        if erased_at.tzinfo is None:
            raise ValueError("times carry their time zone")
        if min(events, bytes_erased) < 0:
            raise ValueError("counts are non-negative integers")
        return cls(
            session=lookup,
            erased_hour=erased_at.astimezone(UTC).replace(minute=0, second=0, microsecond=0),
            trigger=TRIGGER_KINDS[trigger],
            events_at_most=at_most(events, EVENTS_AT_LEAST),
            bytes_at_most=at_most(bytes_erased, BYTES_AT_LEAST),
            **how,
        )

    VERSION = FORMAT_VERSION
    TIMES = frozenset({"erased_hour"})
    LAYOUT = (
        ("session", None, "session"),
        ("erased_hour", None, "erased_hour"),
        ("trigger", None, "trigger"),
        ("events_at_most", "erased", "events_at_most"),
        ("bytes_at_most", "erased", "bytes_at_most"),
        ("sqlite_secure_delete", "how", "sqlite_secure_delete"),
        ("sealed_with_unstored_key", "how", "sealed_with_unstored_key"),
    )


def read_entry(data: bytes) -> DeletionEntry | DeletionEntryV1:
    """The entry whose leaf bytes are `data`, in either format; Rejected if it is in neither."""
    try:
        version = json.loads(data).get("v")
    except (ValueError, AttributeError):
        version = None
    return DeletionEntryV1.from_leaf_bytes(data) if version == V1 else DeletionEntry.from_leaf_bytes(data)


def _timestamp(text: str) -> datetime:
    return datetime.strptime(text, TIMESTAMP).replace(tzinfo=UTC)
