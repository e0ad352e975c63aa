"""Files are read in bounded worker processes (agent/documents/sandbox.py): every hostile file is
refused with a reason within the bound, the worker that choked is replaced, the next file is read
normally; fuzzed malformed files always get a document or a refusal, never anything else."""

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.documents.lines import Document, DocumentRefused
from agent.documents.sandbox import Limits, WorkerPool
from tests.support.documents import HOSTILE, docx, text_pdf

pytestmark = [pytest.mark.backend_independent, pytest.mark.slow]

LIMITS = Limits(cpu_seconds=3, wall_seconds=8.0, memory_bytes=512 * 1024 * 1024, max_pages=30)
BOUND_SECONDS = LIMITS.wall_seconds + 2  # the wall bound, and the worker's start
EXPECTED = {
    "flate_bomb": {"too_complex", "too_slow"},  # out of memory or out of CPU time, whichever first
    "deeply_nested": {"empty", "damaged"},
    "many_pages": {"too_many_pages"},
    "broken_xref": {"damaged"},
    "encrypted": {"encrypted"},
    "docx_zip_bomb": {"too_complex"},
}
CLEAN = text_pdf(["Chen Mei-Ling", "Data Analyst"])


@pytest.fixture(scope="module")
def pool():
    workers = WorkerPool(1, LIMITS)
    yield workers
    workers.close()


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_each_hostile_file_is_refused_within_the_bound_and_the_next_is_read(pool, kind):
    hostile = HOSTILE[kind]()
    started = time.monotonic()
    with pytest.raises(DocumentRefused) as refused:
        pool.read(hostile, f"hostile-{kind}")
    assert time.monotonic() - started < BOUND_SECONDS
    assert refused.value.code in EXPECTED[kind]
    assert [line.text for line in pool.read(CLEAN, "clean.pdf").lines] == ["Chen Mei-Ling", "Data Analyst"]


def test_a_worker_past_its_wall_time_is_killed_and_replaced():
    """A wall bound shorter than the bomb takes: the server stops waiting, kills the worker, and
    the next file gets a fresh one."""
    wall = 1.0
    workers = WorkerPool(1, Limits(cpu_seconds=30, wall_seconds=wall, memory_bytes=2 * 1024**3))
    try:
        assert workers.read(CLEAN, "warm.pdf").pages == 1  # the worker's start is not part of the bound
        bomb = HOSTILE["flate_bomb"]()
        started = time.monotonic()
        with pytest.raises(DocumentRefused) as refused:
            workers.read(bomb, "bomb.pdf")
        assert (refused.value.code, workers.replaced) == ("too_slow", 1)
        assert time.monotonic() - started < wall + 3  # killing and reaping it, on a loaded machine
        assert workers.read(CLEAN, "clean.pdf").pages == 1
    finally:
        workers.close()


def test_a_worker_over_its_cpu_time_is_ended_by_the_kernel():
    workers = WorkerPool(1, Limits(cpu_seconds=1, wall_seconds=30, memory_bytes=2 * 1024**3))
    try:
        with pytest.raises(DocumentRefused) as refused:
            workers.read(HOSTILE["flate_bomb"](), "bomb.pdf")
        assert (refused.value.code, workers.replaced) == ("too_slow", 1)
    finally:
        workers.close()


SEEDS = [CLEAN, docx([("Chen Mei-Ling", {}), ("hidden", {"hidden": True})]), b"# Chen\n- SQL\n"]


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(SEEDS),
    st.lists(st.tuples(st.integers(min_value=0), st.binary(min_size=0, max_size=8)), max_size=6),
    st.integers(min_value=0),
)
def test_fuzzed_files_get_a_document_or_a_refusal(pool, seed, edits, cut):
    data = bytearray(seed)
    for at, replacement in edits:
        at %= max(len(data), 1)
        data[at : at + len(replacement)] = replacement
    data = bytes(data[: max(1, cut % (len(data) + 1))])
    try:
        assert isinstance(pool.read(data, "fuzzed"), Document)
    except DocumentRefused as refused:
        assert refused.code in DocumentRefused.CODES


def test_an_idle_worker_exits_on_its_own_and_the_next_file_gets_a_fresh_one():
    """After a burst of files each web worker kept its readers (an interpreter with PDFium each)
    for ever; now a reader that waits idle_seconds for a file exits, and the pool never hands a
    file to one old enough to be exiting."""
    workers = WorkerPool(1, Limits(cpu_seconds=3, wall_seconds=8.0, memory_bytes=512 * 1024**2, idle_seconds=0.5))
    try:
        assert isinstance(workers.read(CLEAN, "a.pdf"), Document)
        [(reader, _since)] = workers.idle
        deadline = time.monotonic() + 10
        while reader.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not reader.alive()  # it ended by itself
        assert isinstance(workers.read(CLEAN, "b.pdf"), Document)  # a fresh reader, no refusal
        assert workers.replaced == 0
    finally:
        workers.close()
