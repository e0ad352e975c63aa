"""The deletion log's stored tree (issue 39): every proof is read from O(log n) stored subtrees,
the same proofs the whole in-memory tree gives, whatever sizes are asked; the migration backfills
the subtrees of entries written before it.

Both backends (`make test` runs this file on SQLite and on PostgreSQL)."""

import datetime as dt

import pytest
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor
from hypothesis import given, settings
from hypothesis import strategies as st

from sessions_app.deletion_log import store as deletion_log
from sessions_app.deletion_log.formats.merkle import MerkleTree, post_order
from sessions_app.deletion_log.formats.receipt import Receipt, hashes_text
from sessions_app.models import DeletionAudit, DeletionLogCheckpoint, DeletionLogEntry, DeletionLogNode

pytestmark = pytest.mark.django_db


def erased(count: int, first: int = 0) -> list[deletion_log.ErasedSession]:
    created = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    return [
        deletion_log.ErasedSession(f"tree-test-session-{number:06d}", "anon-tree-test-owner", created, 2, 100)
        for number in range(first, first + count)
    ]


def grow_log(batches: list[int]) -> None:
    """One erasure a batch, as a purge's batches: each appends its entries and signs a checkpoint."""
    first = DeletionLogEntry.objects.count()
    for count in batches:
        with transaction.atomic():
            deletion_log.append(erased(count, first), DeletionAudit.Trigger.ADMIN)
        first += count


def in_memory_tree() -> MerkleTree:
    return MerkleTree(
        bytes(value) for value in DeletionLogEntry.objects.order_by("index").values_list("leaf_hash", flat=True)
    )


def test_proofs_from_stored_subtrees_are_the_in_memory_trees_at_every_size():
    grow_log([1, 2, 1, 5, 8, 13, 64, 3, 130, 40])  # 267 entries, ten checkpoints
    tree, size = in_memory_tree(), DeletionLogEntry.objects.count()
    checkpoints = list(DeletionLogCheckpoint.objects.values_list("size", flat=True))

    @given(st.integers(1, size).flatmap(lambda at: st.tuples(st.just(at), st.integers(0, at - 1), st.integers(1, at))))
    @settings(max_examples=300, deadline=None, database=None)
    def same_proofs(sizes):
        at, index, old = sizes
        assert deletion_log.stored_tree(at, lambda t: t.inclusion_proof(index)).inclusion_proof(index) == (
            tree.inclusion_proof(index, at)
        )
        stored = deletion_log.stored_tree(at, lambda t: (t.root(old), t.consistency_proof(old)))
        assert stored.consistency_proof(old) == tree.consistency_proof(old, at)
        assert stored.root(old) == tree.root(old)

    same_proofs()
    for at in checkpoints:  # what the API serves: a proof to each signed size, from every older one
        for old in range(1, at + 1):
            assert deletion_log.consistency_proof(old, at) == hashes_text(tree.consistency_proof(old, at))
    for index in range(size):  # every receipt, proved against the latest checkpoint
        digest = DeletionLogEntry.objects.get(index=index).session_digest
        assert list(Receipt.parse(deletion_log.receipt(digest)).proof) == tree.inclusion_proof(index, size)


def _rows_read(statements: list[tuple[str, tuple]]) -> int:
    """The rows the SELECTs among `statements` returned, counted by running each again."""
    rows = 0
    with connection.cursor() as cursor:
        for sql, params in statements:
            if sql.lstrip().upper().startswith("SELECT"):
                cursor.execute(f"SELECT COUNT(*) FROM ({sql}) AS counted", params)
                rows += cursor.fetchone()[0]
    return rows


def test_each_read_costs_o_log_n_rows_whatever_sizes_are_asked():
    """Alternating old and new sizes (the attack of issue 39, finding 1): each receipt, checkpoint
    or consistency read takes a few queries and O(log n) rows. The tree kept in each process's
    memory read every entry again whenever an older size was asked. Seen failing with it."""
    grow_log([100] * 40)  # 4,000 entries, 40 checkpoints
    size = DeletionLogEntry.objects.count()
    bound = 4 * size.bit_length() + 8
    reads = []
    for old in (1, 3999, 150, 2000, 7, 3100, 999, 4000):
        reads += [
            lambda old=old: deletion_log.consistency_proof(old, size),
            lambda old=old: deletion_log.consistency_proof(max(1, old // 40), 100 * max(1, old // 100)),
            lambda old=old: deletion_log.receipt(DeletionLogEntry.objects.get(index=old - 1).session_digest),
            lambda old=old: deletion_log.checkpoint(100 * max(1, old // 100)),
        ]
    for read in reads:
        statements = []

        def record(execute, sql, params, many, context, statements=statements):
            statements.append((sql, params))
            return execute(sql, params, many, context)

        with connection.execute_wrapper(record):
            assert read() is not None
        assert len(statements) <= 5
        assert _rows_read(statements) <= bound, statements


def test_the_appended_subtrees_are_one_row_a_complete_subtree():
    grow_log([3, 1, 4, 1, 5, 9, 2, 6])  # 31 entries: 15 + 7 + 3 + 1 complete subtrees above the leaves
    assert DeletionLogNode.objects.count() == 26
    assert deletion_log.verify_whole_log() == 31


@pytest.mark.django_db(transaction=True)
def test_the_migration_backfills_the_subtrees_of_entries_written_before():
    """Entries written before the stored tree: migration 0009 computes their subtrees, and the
    receipts and proofs after it are those of the whole tree."""
    grow_log([5, 20, 12])
    before, after = [("sessions_app", "0008_plan_versions_counted")], [("sessions_app", "0009_deletion_log_nodes")]
    executor = MigrationExecutor(connection)
    try:
        executor.migrate(before)  # the table goes, with the rows the appends wrote
        executor = MigrationExecutor(connection)
        executor.migrate(after)
    finally:
        MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    assert DeletionLogNode.objects.count() == 37 - (37).bit_count()
    tree = in_memory_tree()
    assert deletion_log.consistency_proof(5, 37) == hashes_text(tree.consistency_proof(5, 37))
    assert deletion_log.verify_whole_log() == 37


def test_a_changed_subtree_is_never_served_and_fails_the_whole_log_check():
    """The proofs are checked against the signed root before they are served: a stored subtree
    changed in the database gives a LogBroken, never a proof that does not verify."""
    grow_log([8, 5])
    digest = DeletionLogEntry.objects.get(index=0).session_digest
    assert deletion_log.receipt(digest) and deletion_log.consistency_proof(8, 13)
    DeletionLogNode.objects.filter(position=post_order(2, 1)).update(node_hash=bytes(32))  # entries 4 to 7
    with pytest.raises(deletion_log.LogBroken):
        deletion_log.receipt(digest)
    with pytest.raises(deletion_log.LogBroken):
        deletion_log.consistency_proof(3, 13)
    with pytest.raises(deletion_log.LogBroken, match="stored subtree over entries 4 to 7"):
        deletion_log.verify_whole_log()
