"""The deletion log in the database: its one writer and its reads (issue 31).

`append` is called by the one erasure (`sessions_app.erasure`), in the erasure's transaction: one
entry per erased session, then one signed checkpoint over the whole log. Either all of it commits
with the erasure or none of it does, so there is no entry without its erasure and no erasure
without its entry. One writer at a time: SQLite's write gate already runs one write transaction
at a time; on PostgreSQL `append` takes a transaction-scoped advisory lock first, so two servers
erasing at once append in one order to one tree, and no two checkpoints of one size differ. The
checkpoint row keeps the tree's right edge, so an append costs O(log n) hashes and no read of
earlier entries; it stores each complete subtree's hash as it completes (DeletionLogNode, about one
row an entry), so every proof reads O(log n) rows, whatever sizes are asked, and no process keeps
the tree in memory.

The rows are never updated or deleted (nothing here or elsewhere does; no purge touches them).
An entry holds an hour, a kind of trigger and rounded sizes (sessions_app.deletion_log.formats.entry, format
2): never content, a token, an owner id or a client address. It names the session by its receipt
lookup (sessions_app.deletion_log.formats.lookup), computed here from the owner id the session's row still
holds, so only the token's holder finds the receipt afterwards.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db import transaction

from sessions_app import retention
from sessions_app.deletion_log import key as log_key
from sessions_app.deletion_log.formats.checkpoint import Checkpoint, open_checkpoint
from sessions_app.deletion_log.formats.entry import DeletionEntry, read_entry
from sessions_app.deletion_log.formats.lookup import receipt_lookup
from sessions_app.deletion_log.formats.merkle import (
    NodesNeeded,
    RightEdge,
    StoredNodes,
    TreeProofs,
    leaf_hash,
    post_order,
    verify_consistency,
    verify_inclusion,
)
from sessions_app.deletion_log.formats.note import Verifier
from sessions_app.deletion_log.formats.receipt import Receipt, hashes_text
from sessions_app.deletion_log.formats.strict import Rejected
from sessions_app.infra import sql
from sessions_app.models import DeletionAudit, DeletionLogCheckpoint, DeletionLogEntry, DeletionLogNode

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
    # Deleting one's account erases each of its sessions at the owner's request: logged as the
    # owner's (the audit row names the account's deletion).
    Trigger.ACCOUNT: "owner_delete",
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
C, L, N = DeletionLogCheckpoint, DeletionLogEntry, DeletionLogNode
# The append writes in plain SQL: its ORM calls were most of a DELETE's cost.
LATEST_EDGE = sql.Statement(
    lambda n: (
        f"SELECT {n.column(C, 'size')}, {n.column(C, 'right_edge')} FROM {n.table(C)}"
        f" ORDER BY {n.column(C, 'size')} DESC LIMIT 1"
    )
)
INSERT_ENTRY = sql.Statement(
    lambda n: (
        f"INSERT INTO {n.table(L)} ({n.column(L, 'index')}, {n.column(L, 'session_digest')},"
        f" {n.column(L, 'leaf')}, {n.column(L, 'leaf_hash')}) VALUES (%s, %s, %s, %s)"
    )
)
INSERT_NODES = sql.Statement(
    lambda n: f"INSERT INTO {n.table(N)} ({n.column(N, 'position')}, {n.column(N, 'node_hash')}) VALUES"
)
NODES_AT_ONCE = 400  # rows of one INSERT of nodes: two parameters each, well under SQLite's limit
INSERT_CHECKPOINT = sql.Statement(
    lambda n: (
        f"INSERT INTO {n.table(C)} ({n.column(C, 'size')}, {n.column(C, 'root')}, {n.column(C, 'signed')},"
        f" {n.column(C, 'right_edge')}, {n.column(C, 'signed_at')}) VALUES (%s, %s, %s, %s, %s)"
    )
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
    latest = _run(connection, [*lock, (LATEST_EDGE(connection), ())])
    edge = RightEdge.from_bytes(latest[0], bytes(latest[1])) if latest else RightEdge()
    secure_delete = _secure_delete_is_on(connection)
    erased_at = dt.datetime.now(dt.UTC)
    rows, nodes = [], []
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
        nodes += [(post_order(height, index), node) for height, index, node in edge.append(hashed)]
    checkpoint = Checkpoint(signer.name, edge.size, edge.root())
    signed_at = connection.ops.adapt_datetimefield_value(erased_at)
    insert_entry = INSERT_ENTRY(connection)
    signed = (edge.size, checkpoint.root, checkpoint.sign(signer), edge.to_bytes(), signed_at)
    statements = [
        *((insert_entry, row) for row in rows),
        *_node_inserts(connection, nodes),
        (INSERT_CHECKPOINT(connection), signed),
    ]
    for start in range(0, len(statements), STATEMENTS_AT_ONCE):  # an erasure of every session: in parts
        _run(connection, statements[start : start + STATEMENTS_AT_ONCE])
    return edge.size


def _node_inserts(connection, nodes: list[tuple[int, bytes]]) -> Iterable[tuple[str, tuple]]:
    """The INSERTs of the completed subtrees' rows, NODES_AT_ONCE rows a statement."""
    insert = INSERT_NODES(connection) + " "
    for start in range(0, len(nodes), NODES_AT_ONCE):
        part = nodes[start : start + NODES_AT_ONCE]
        yield insert + ", ".join(["(%s, %s)"] * len(part)), tuple(value for node in part for value in node)


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


def stored_tree(size: int, asks: Callable[[TreeProofs], object]) -> StoredNodes:
    """The tree of `size` entries with the complete subtrees that `asks` (a root or proof computed
    on the tree it is given) reads, e.g. `stored_tree(size, lambda tree: tree.inclusion_proof(i))`:
    O(log n) rows in two queries, however large the log is. Not checked against a signed root:
    the callers below check what they serve."""
    needed = NodesNeeded(size)
    asks(needed)
    leaves = [index for height, index in needed.wanted if height == 0]
    above = {post_order(height, index): (height, index) for height, index in needed.wanted if height}
    nodes = {
        (0, index): bytes(hashed)
        for index, hashed in DeletionLogEntry.objects.filter(index__in=leaves).values_list("index", "leaf_hash")
    }
    if above:
        stored = DeletionLogNode.objects.filter(position__in=above).values_list("position", "node_hash")
        nodes.update((above[position], bytes(hashed)) for position, hashed in stored)
    if len(nodes) != len(needed.wanted):
        raise LogBroken(f"the log's stored tree of {size} entries lacks subtrees a proof needs")
    return StoredNodes(size, nodes)


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
    index, leaf = row[0], bytes(row[1])
    proof = stored_tree(latest.size, lambda tree: tree.inclusion_proof(index)).inclusion_proof(index)
    try:  # O(log n) hashes: a proof from altered rows is refused, never served
        verify_inclusion(leaf_hash(leaf), index, latest.size, proof, bytes(latest.root))
    except Rejected:
        raise LogBroken(f"entry {index} does not hash to checkpoint {latest.size}'s root") from None
    return Receipt(leaf, index, tuple(proof), latest.signed).text()


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

    def asks(tree: TreeProofs) -> list[bytes]:
        tree.root(old_size)
        return tree.consistency_proof(old_size)

    tree = stored_tree(size, asks)
    proof = tree.consistency_proof(old_size)
    try:  # as the receipt: what the stored rows give must lead to the signed root
        verify_consistency(old_size, size, proof, tree.root(old_size), bytes(newer.root))
    except Rejected:
        raise LogBroken(f"the stored tree does not hash to checkpoint {size}'s root") from None
    return hashes_text(proof)


VERIFY_CHUNK = 2000  # entries a read: a few milliseconds of one short read transaction each
VERIFY_PAUSE_SECONDS = 0.02  # after each chunk: the check leaves the CPU and the database to the turns


def verify_whole_log(
    *verifiers: Verifier, chunk: int = VERIFY_CHUNK, progress: Callable[[int], None] | None = None
) -> int:
    """Recomputes the tree from every entry and checks each checkpoint's root, size and
    signature (by any of `verifiers`, the current one first; if none are given, by the current key
    or one it replaced, log_key.verifiers(): after a rotation, the checkpoints signed before it
    verify with the old key only, and none after it may), that each entry's stored hash and
    session digest are its leaf's, and that each stored subtree is the entries'. Returns the number
    of entries checked, those of the latest checkpoint when it began; raises LogBroken at the first
    disagreement. (For the admin's background
    task: tasks.verify_deletion_log.)

    In chunks of `chunk` entries, each read in its own short statements and checked after the read
    has ended, so no read transaction spans the log: on SQLite (journal_mode=DELETE, where a read
    holds off every commit) writers commit between chunks. Only the right edge, O(log n) hashes,
    is carried from one chunk to the next. `progress` is told the entries checked after each."""
    verifiers = verifiers or log_key.verifiers()
    edge, signatures = RightEdge(), _Signatures(verifiers)
    # The log as it was when the check began: what erasures append meanwhile waits for the next one.
    latest = _latest_checkpoint()
    size = latest.size if latest else 0
    while edge.size < size:
        rows, nodes, checkpoints = _read_chunk(edge.size, min(chunk, size - edge.size))
        if not rows:
            raise LogBroken(f"checkpoint {size} covers entries the log does not have")
        checkpoints = iter(checkpoints)
        pending = next(checkpoints, None)
        for index, digest, leaf, hashed in rows:
            _check_entry(index, edge.size, digest, bytes(leaf), bytes(hashed))
            completed = edge.append(bytes(hashed))
            while pending is not None and pending[0] == edge.size:
                signatures.check(*pending, edge.root())
                pending = next(checkpoints, None)
            for height, node_index, node in completed:
                if bytes(nodes.get(post_order(height, node_index), b"")) != node:
                    raise LogBroken(f"the stored subtree over entries {node_index << height} to {index} is not theirs")
        if progress:
            progress(edge.size)
        time.sleep(VERIFY_PAUSE_SECONDS)
    return edge.size


def _check_entry(index: int, expected: int, digest: str, leaf: bytes, hashed: bytes) -> None:
    if index != expected or leaf_hash(leaf) != hashed:
        raise LogBroken(f"entry {index} is missing, out of place or altered")
    try:
        session = read_entry(leaf).session  # either format
    except Rejected as error:
        raise LogBroken(f"entry {index} is not an entry: {error}") from None
    if session != digest:
        raise LogBroken(f"entry {index} is filed under another session")


def _read_chunk(start: int, chunk: int) -> tuple[list[tuple], dict[int, bytes], list[tuple]]:
    """Up to `chunk` entries from `start` on, the subtrees they complete and the checkpoints they
    end: three statements, each read whole before the next (no cursor is left open). An erasure
    commits a checkpoint and subtrees with their entries, so none is missing for the entries read."""
    entries = DeletionLogEntry.objects.filter(index__gte=start).order_by("index")
    rows = list(entries.values_list("index", "session_digest", "leaf", "leaf_hash")[:chunk])
    if not rows:
        return [], {}, []
    end = start + len(rows)
    nodes = DeletionLogNode.objects.filter(position__gte=post_order(0, start), position__lt=post_order(0, end))
    checkpoints = DeletionLogCheckpoint.objects.filter(size__gt=start, size__lte=end).order_by("size")
    return (
        rows,
        dict(nodes.values_list("position", "node_hash")),
        list(checkpoints.values_list("size", "root", "signed")),
    )


class _Signatures:
    """Checks each checkpoint, in order of size, against the tree's root at its size; remembers
    whether the current key has signed one yet."""

    def __init__(self, verifiers: tuple[Verifier, ...]):
        self.verifiers = verifiers
        self.signed_by_current = False

    def check(self, size: int, root: bytes, signed: str, computed: bytes) -> None:
        try:
            signed_checkpoint = open_checkpoint(signed, self.verifiers[0])
            self.signed_by_current = True
        except Rejected:
            try:
                signed_checkpoint = open_checkpoint(signed, *self.verifiers)
            except Rejected as error:
                raise LogBroken(f"checkpoint {size} does not verify: {error}") from None
            # A replaced key signs nothing after the current one has: such a checkpoint is a
            # server left on the old key, or a key that leaked and signs for someone else.
            if self.signed_by_current:
                raise LogBroken(f"checkpoint {size} is signed with a replaced key after the current one") from None
        if (signed_checkpoint.size, signed_checkpoint.root) != (size, bytes(root)) or computed != bytes(root):
            raise LogBroken(f"checkpoint {size} does not match the entries")
