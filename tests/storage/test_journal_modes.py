"""Quick run of the journal-modes study (tests/support/journal_modes.py): our SQLite settings leave no byte of a
deleted session in any database file, and the controls show the scan can fail.

Plain sqlite3 in temporary directories; no Django database is used.
"""

from pathlib import Path

import pytest

from tests.support.journal_modes import CHOSEN, MARKERS, Config, Sizes, measure, measure_temp_store

pytestmark = pytest.mark.sqlite_only

QUICK = Sizes.quick()


def _markers_in(result, file_name: str) -> set[str]:
    return {marker for marker, _ in result.after[file_name].hits}


def test_chosen_configuration_is_clean_after_delete():
    assert Config("DELETE", "ON", temp_store="MEMORY") == CHOSEN
    result = measure(CHOSEN, QUICK)

    assert result.before_ok, "the scan did not find the markers before the delete"
    assert result.rows_left == (0, 0)
    # Before COMMIT the rollback journal holds the before-images: the scan sees them there.
    assert {m for m, _ in result.pre_commit["-journal"].hits} == set(MARKERS)
    assert result.verdict == "clean"
    assert [name for name, state in result.after.items() if state.exists] == ["main"]


def test_control_persist_keeps_before_images_in_journal():
    result = measure(Config("PERSIST", "ON"), QUICK)

    assert result.before_ok
    assert _markers_in(result, "-journal") == set(MARKERS)
    assert _markers_in(result, "main") == set()


def test_control_secure_delete_off_leaves_markers_in_main_file():
    result = measure(Config("DELETE", "OFF"), QUICK)

    assert result.before_ok
    assert _markers_in(result, "main") == set(MARKERS)


def test_control_secure_delete_fast_leaves_freed_pages_on_freelist():
    result = measure(Config("DELETE", "FAST"), QUICK)

    assert result.before_ok
    assert _markers_in(result, "main") == set(MARKERS)
    pages, on_freelist = result.after["main"].pages
    assert pages > 0 and on_freelist == pages


def test_control_wal_without_checkpoint_leaves_markers_in_wal():
    result = measure(Config("WAL", "ON"), QUICK)

    assert result.before_ok
    assert _markers_in(result, "-wal") == set(MARKERS)
    assert _markers_in(result, "main") == set()


def test_control_open_reader_blocks_wal_checkpoint():
    result = measure(Config("WAL", "ON", checkpoint=True, open_reader=True), QUICK, checkpoint_timeout_ms=50)

    busy, _, _ = result.checkpoint
    assert busy == 1
    assert _markers_in(result, "-wal") == set(MARKERS)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="temp files are only observable via /proc")
def test_temp_store_memory_keeps_statement_journal_off_disk():
    spilled = measure_temp_store("update twice then purge", "DEFAULT", rows=QUICK.temp_rows, sizes=QUICK)
    assert spilled.temp_files, "control: without temp_store=MEMORY the statement journal goes to a temp file"
    assert {m for m, _ in spilled.temp_hits} == set(MARKERS)

    in_memory = measure_temp_store("update twice then purge", "MEMORY", rows=QUICK.temp_rows, sizes=QUICK)
    assert in_memory.temp_files == {}
    assert not in_memory.main_after.hits
