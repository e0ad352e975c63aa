"""The deletion log in the database: its one writer and its reads (issue 31).

`append` is called by the one erasure (`repository.erase`), in the erasure's transaction: one
entry per erased session, then one signed checkpoint over the whole log. Either all of it commits
with the erasure or none of it does, so there is no entry without its erasure and no erasure
without its entry. One writer at a time: SQLite's write gate already runs one write transaction
at a time; on PostgreSQL `append` takes a transaction-scoped advisory lock first, so two servers
erasing at once append in one order to one tree, and no two checkpoints of one size differ. The
checkpoint row keeps the tree's right edge, so an append costs O(log n) hashes and no read of
earlier entries.

The rows are never updated or deleted (nothing here or elsewhere does; no purge touches them).
An entry holds an hour, a kind of trigger and rounded sizes (sessions_app.receipts.entry, format
2): never content, a token, an owner id or a client address. It names the session by its receipt
lookup (sessions_app.receipts.lookup), computed here from the owner id the session's row still
holds, so only the token's holder finds the receipt afterwards.
"""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass

from django.db import transaction

from sessions_app import retention
from sessions_app.models import DeletionAudit, DeletionLogCheckpoint, DeletionLogEntry
from sessions_app.receipts.checkpoint import Checkpoint, open_checkpoint
from sessions_app.receipts.entry import DeletionEntry, read_entry
from sessions_app.receipts.lookup import receipt_lookup
from sessions_app.receipts.merkle import MerkleTree, RightEdge, leaf_hash
from sessions_app.receipts.note import Verifier
from sessions_app.receipts.receipt import Receipt, hashes_text
from sessions_app.receipts.strict import Rejected
from sessions_app.security import log_key

# pg_advisory_xact_lock's key for the log's writer: "receipts" in ASCII, as a bigint.
WRITER_LOCK = int.from_bytes(b"receipts", "big")

Trigger = DeletionAudit.Trigger
# The entry's trigger for each of the erasure's (the audit's); the purges that erase what has
# expired say which limit each session passed (`entry_trigger`).
ENTRY_TRIGGERS = {
    Trigger.API: "owner_delete",
    Trigger.ADMIN: "admin",
    Trigger.ADK: "adk_delete_session",
    Trigger.STARTUP: "startup_purge",
    Trigger.ERASE_ALL: "erase_all",
}
EXPIRY_TRIGGERS = {Trigger.TTL, Trigger.COMMAND}  # the scheduled purge, and the same purge run by hand


def entry_trigger(trigger: str, created_at: dt.datetime, erased_at: dt.datetime) -> str:
    """Why the entry says the session was erased: past its maximum age when the purge erased it,
    else past its TTL; for the other triggers, who asked."""
    if trigger in EXPIRY_TRIGGERS:
        return "max_age" if created_at <= erased_at - retention.max_age() else "ttl_purge"
    return ENTRY_TRIGGERS[trigger]


@dataclass(frozen=True)
class ErasedSession:
    """What the erasure read of a session before deleting it: its id and owner id, when it was
    made, and what it stored (counted from clear metadata: no key is needed)."""

    session_id: str
    owner_id: str  # the key of the entry's receipt lookup
    created_at: dt.datetime
    events: int
    bytes: int  # sealed state plus sealed events, as stored


def _secure_delete_is_on(connection) -> bool:
    """What this connection does with deleted bytes, read from it rather than assumed."""
    if connection.vendor != "sqlite":
        return False
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA secure_delete")
        return cursor.fetchone()[0] == 1


def _latest_checkpoint() -> DeletionLogCheckpoint | None:
    return DeletionLogCheckpoint.objects.order_by("-size").first()


def _sql(connection, template: str, model) -> str:
    """`template` with the model's table as {table} and its fields' columns as {name}, quoted for
    `connection`. The append writes in plain SQL: its ORM calls were most of a DELETE's cost."""
    quote = connection.ops.quote_name
    columns = {field.name: quote(field.column) for field in model._meta.concrete_fields}
    return template.format(table=quote(model._meta.db_table), **columns)


def _run(connection, statements: list[tuple[str, tuple]]) -> tuple | None:
    """Runs `statements` in order; returns the last one's first row (None when it returns none).
    PostgreSQL (with Django's client-side binding, its default) is sent them in one round trip:
    each still runs with a snapshot of its own, so a read after the writer's lock sees the log as
    the last writer left it. SQLite runs in this process and takes them one by one."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql" and not connection.settings_dict["OPTIONS"].get("server_side_binding"):
            cursor.execute("; ".join(sql for sql, _ in statements), [value for _, row in statements for value in row])
            for _ in statements[1:]:
                cursor.nextset()
        else:
            for sql, row in statements:
                cursor.execute(sql, row)
        return cursor.fetchone() if cursor.description else None


STATEMENTS_AT_ONCE = 500
WRITER_LOCK_SQL = "SELECT pg_advisory_xact_lock(%s)"
LATEST_EDGE = "SELECT {size}, {right_edge} FROM {table} ORDER BY {size} DESC LIMIT 1"
INSERT_ENTRY = "INSERT INTO {table} ({index}, {session_digest}, {leaf}, {leaf_hash}) VALUES (%s, %s, %s, %s)"
INSERT_CHECKPOINT = (
    "INSERT INTO {table} ({size}, {root}, {signed}, {right_edge}, {signed_at}) VALUES (%s, %s, %s, %s, %s)"
)


def append(erased: list[ErasedSession], trigger: str) -> int:
    """Appends one entry per erased session and signs one checkpoint over the log; inside the
    erasure's transaction, which it never opens. Returns the log's new size (unchanged when
    nothing was erased)."""
    if transaction.get_autocommit():
        raise transaction.TransactionManagementError("the deletion log is appended in the erasure's transaction")
    connection = transaction.get_connection()
    if not erased:
        return 0
    signer = log_key.signer()  # before the lock: a missing key fails the erasure before it waits
    # One writer at a time: on PostgreSQL the lock, then the latest edge as the last writer left it.
    lock = [(WRITER_LOCK_SQL, (WRITER_LOCK,))] if connection.vendor == "postgresql" else []
    latest = _run(connection, [*lock, (_sql(connection, LATEST_EDGE, DeletionLogCheckpoint), ())])
    edge = RightEdge.from_bytes(latest[0], bytes(latest[1])) if latest else RightEdge()
    secure_delete = _secure_delete_is_on(connection)
    erased_at = dt.datetime.now(dt.UTC)
    rows = []
    for session in erased:
        entry = DeletionEntry.for_erasure(
            receipt_lookup(session.owner_id, session.session_id),
            erased_at=erased_at,
            trigger=entry_trigger(trigger, session.created_at, erased_at),
            events=session.events,
            bytes_erased=session.bytes,
            sqlite_secure_delete=secure_delete,
            sealed_with_unstored_key=True,  # by design: the key is derived from the token, never stored
        )
        leaf = entry.leaf_bytes()
        hashed = leaf_hash(leaf)
        rows.append((edge.size, entry.session, leaf, hashed))
        edge.append(hashed)
    checkpoint = Checkpoint(signer.name, edge.size, edge.root())
    signed_at = connection.ops.adapt_datetimefield_value(erased_at)
    insert_entry = _sql(connection, INSERT_ENTRY, DeletionLogEntry)
    signed = (edge.size, checkpoint.root, checkpoint.sign(signer), edge.to_bytes(), signed_at)
    statements = [
        *((insert_entry, row) for row in rows),
        (_sql(connection, INSERT_CHECKPOINT, DeletionLogCheckpoint), signed),
    ]
    for start in range(0, len(statements), STATEMENTS_AT_ONCE):  # an erasure of every session: in parts
        _run(connection, statements[start : start + STATEMENTS_AT_ONCE])
    return edge.size


# --- Reads ---------------------------------------------------------------------------------


class LogBroken(Exception):
    """The stored entries do not hash to a stored checkpoint's root: the log was altered."""


@dataclass(frozen=True)
class LogStatus:
    size: int
    checkpoint: str | None  # the latest signed checkpoint
    signed_at: dt.datetime | None


def status() -> LogStatus:
    latest = _latest_checkpoint()
    if latest is None:
        return LogStatus(0, None, None)
    return LogStatus(latest.size, latest.signed, latest.signed_at)


# The tree over the log's leaf hashes, kept by this process and extended from the entries it has
# not read yet; a proof then costs O(log² n) hashes and reads no earlier entry again. A cache of
# committed, append-only rows: checked against the checkpoint's root on every use, rebuilt from
# the database when it does not match (another database, a test's rolled-back rows).
_trees: dict[str, MerkleTree] = {}
_trees_lock = threading.Lock()


def _leaf_hashes(start: int, end: int) -> list[bytes]:
    hashes = DeletionLogEntry.objects.filter(index__gte=start, index__lt=end).order_by("index")
    return [bytes(value) for value in hashes.values_list("leaf_hash", flat=True)]


def _tree_at(checkpoint: DeletionLogCheckpoint) -> MerkleTree:
    alias = transaction.get_connection().alias
    with _trees_lock:
        tree = _trees.get(alias)
        for attempt in ("cached", "rebuilt"):
            if tree is None or attempt == "rebuilt" or len(tree) > checkpoint.size:
                tree = MerkleTree()
            for hashed in _leaf_hashes(len(tree), checkpoint.size):
                tree.append(hashed)
            if len(tree) == checkpoint.size and tree.root(checkpoint.size) == bytes(checkpoint.root):
                _trees[alias] = tree
                return tree
        _trees.pop(alias, None)
    raise LogBroken(f"the entries do not hash to checkpoint {checkpoint.size}'s root")


def receipt(lookup: str) -> str | None:
    """The receipt (a tlog-proof) of the latest erasure of the session filed under `lookup` (its
    receipt lookup), proved against the latest checkpoint; None when the log has none. Entries of
    format 1 are filed under the SHA-256 of the session id, which anyone holding the id can
    compute: they are not served (they stay in the log, and receipts already given keep
    verifying)."""
    found = DeletionLogEntry.objects.filter(session_digest=lookup).order_by("-index").values_list("index", "leaf")
    row = found.first()
    latest = _latest_checkpoint()
    if row is None or latest is None or not _filed_by_lookup(bytes(row[1])):
        return None
    index, leaf = row
    proof = _tree_at(latest).inclusion_proof(index, latest.size)
    return Receipt(bytes(leaf), index, tuple(proof), latest.signed).text()


def _filed_by_lookup(leaf: bytes) -> bool:
    """Whether the entry is of format 2 (filed under a receipt lookup), not 1."""
    try:
        return isinstance(read_entry(leaf), DeletionEntry)
    except Rejected:
        return False


def checkpoint(size: int | None = None) -> str | None:
    """The signed checkpoint of `size` entries (the latest if None); None where none was signed."""
    found = _latest_checkpoint() if size is None else DeletionLogCheckpoint.objects.filter(size=size).first()
    return None if found is None else found.signed


def consistency_proof(old_size: int, size: int) -> str | None:
    """The hashes that prove the log of `size` entries extends the one of `old_size`, one base64
    hash a line; None unless 1 <= old_size <= size and a checkpoint of `size` was signed."""
    newer = DeletionLogCheckpoint.objects.filter(size=size).first()
    if newer is None or not 1 <= old_size <= size:
        return None
    return hashes_text(_tree_at(newer).consistency_proof(old_size, size))


def verify_whole_log(*verifiers: Verifier) -> int:
    """Recomputes the tree from every entry and checks each checkpoint's root, size and
    signature (by any of `verifiers`, the current one first; if none are given, by the current key
    or one it replaced, log_key.verifiers(): after a rotation, the checkpoints signed before it
    verify with the old key only, and none after it may), and that each entry's stored hash and
    session digest are its leaf's. Returns the number of entries checked; raises LogBroken at the
    first disagreement. (For the admin.)"""
    verifiers = verifiers or log_key.verifiers()
    tree, signed_by_current = MerkleTree(), False
    checkpoints = iter(DeletionLogCheckpoint.objects.order_by("size").values_list("size", "root", "signed"))
    pending = next(checkpoints, None)
    entries = DeletionLogEntry.objects.order_by("index").values_list("index", "session_digest", "leaf", "leaf_hash")
    for index, digest, leaf, hashed in entries.iterator():
        if index != len(tree) or leaf_hash(bytes(leaf)) != bytes(hashed):
            raise LogBroken(f"entry {index} is missing, out of place or altered")
        try:
            session = read_entry(bytes(leaf)).session  # either format
        except Rejected as error:
            raise LogBroken(f"entry {index} is not an entry: {error}") from None
        if session != digest:
            raise LogBroken(f"entry {index} is filed under another session")
        tree.append(bytes(hashed))
        while pending is not None and pending[0] == len(tree):
            size, root, signed = pending
            try:
                signed_checkpoint = open_checkpoint(signed, verifiers[0])
                signed_by_current = True
            except Rejected:
                try:
                    signed_checkpoint = open_checkpoint(signed, *verifiers)
                except Rejected as error:
                    raise LogBroken(f"checkpoint {size} does not verify: {error}") from None
                # A replaced key signs nothing after the current one has: such a checkpoint is a
                # server left on the old key, or a key that leaked and signs for someone else.
                if signed_by_current:
                    raise LogBroken(f"checkpoint {size} is signed with a replaced key after the current one") from None
            if (signed_checkpoint.size, signed_checkpoint.root) != (size, bytes(root)) or tree.root() != bytes(root):
                raise LogBroken(f"checkpoint {size} does not match the entries")
            pending = next(checkpoints, None)
    if pending is not None:
        raise LogBroken(f"checkpoint {pending[0]} covers entries the log does not have")
    return len(tree)
