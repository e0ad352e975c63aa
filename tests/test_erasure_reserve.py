"""The erasure reserve beside the SQLite database (sessions_app/disk_space.py), file by file:
what it is on disk, when it is made, and what a disk too full to hold it leaves behind.
(The reserve given back to a real full filesystem: tests/test_disk_full.py.)
"""

from __future__ import annotations

import errno
import os
import stat

import pytest

from sessions_app import disk_space

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite_only]


@pytest.fixture
def reserve(settings):
    """The reserve's path, with none there; the service's own reserve is made again after."""
    kept = settings.ERASURE_RESERVE_BYTES
    disk_space.release_reserve()
    settings.ERASURE_RESERVE_BYTES = 64 * 1024
    yield disk_space.reserve_path()
    settings.ERASURE_RESERVE_BYTES = kept
    disk_space.release_reserve()
    disk_space.restore_reserve()


def test_the_reserve_is_a_private_file_of_exactly_the_size_asked(reserve):
    assert disk_space.restore_reserve()
    info = os.stat(reserve)
    assert stat.S_IMODE(info.st_mode) == 0o600  # it sits beside the database
    assert info.st_size == 64 * 1024
    assert disk_space.reserve_size(reserve) == 64 * 1024  # its blocks are taken, not a sparse file


def test_a_short_reserve_is_made_whole(reserve):
    reserve.write_bytes(b"\0" * 4096)
    assert disk_space.restore_reserve()
    assert disk_space.reserve_size(reserve) == 64 * 1024


def test_a_reserve_of_any_size_is_made(reserve, settings):
    settings.ERASURE_RESERVE_BYTES = 1
    assert disk_space.restore_reserve()
    assert reserve.exists() and disk_space.reserve_size(reserve) >= 1


def test_no_reserve_is_made_when_none_is_asked(reserve, settings):
    settings.ERASURE_RESERVE_BYTES = 0
    assert disk_space.restore_reserve()  # whole: nothing is missing
    assert not reserve.exists()


def test_giving_the_reserve_back_removes_it_and_says_how_much_it_held(reserve):
    assert disk_space.restore_reserve()
    assert disk_space.release_reserve() == 64 * 1024
    assert not reserve.exists()
    assert disk_space.release_reserve() == 0  # none there: nothing to give back, no error


@pytest.mark.parametrize("full", [errno.ENOSPC, errno.EDQUOT], ids=["no space", "over quota"])
def test_a_disk_too_full_for_the_reserve_leaves_none_and_says_so(reserve, monkeypatch, full):
    """All or nothing: a partial reserve would hold blocks the journal may need."""

    def fallocate_until_full(fd, offset, length):
        os.write(fd, b"\0" * 4096)  # some blocks were taken before the disk ran out
        raise OSError(full, os.strerror(full))

    with monkeypatch.context() as patched:
        patched.setattr(os, "posix_fallocate", fallocate_until_full)
        assert disk_space.restore_reserve() is False
    assert not reserve.exists()


def test_other_failures_making_the_reserve_are_not_hidden(reserve, monkeypatch):
    def failing_disk(fd, offset, length):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    with monkeypatch.context() as patched, pytest.raises(OSError, match="Input/output error"):
        patched.setattr(os, "posix_fallocate", failing_disk)
        disk_space.restore_reserve()


def test_a_database_with_no_file_has_no_reserve(reserve, monkeypatch):
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "NAME", ":memory:")
    assert disk_space.reserve_path() is None
    assert disk_space.restore_reserve()  # nothing to make
    assert disk_space.release_reserve() == 0
