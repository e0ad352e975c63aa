"""The erasure reserve beside the SQLite database (sessions_app/infra/disk_space.py), file by file:
what it is on disk, when it is made, and what a disk too full to hold it leaves behind.
(The reserve given back to a real full filesystem: tests/erasure/test_disk_full.py.)
"""

from __future__ import annotations

import errno
import os
import stat

import pytest

from sessions_app.infra import disk_space

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


@pytest.mark.parametrize("name", [":memory:", ""], ids=["in memory", "temporary"])
def test_a_database_with_no_file_has_no_reserve(reserve, monkeypatch, name):
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "NAME", name)
    assert disk_space.reserve_path() is None
    assert disk_space.restore_reserve()  # nothing to make
    assert disk_space.release_reserve() == 0


@pytest.fixture
def volume(reserve, monkeypatch, settings):
    """The database's volume with the free space a test sets (`volume["free"]`), less what the
    reserve takes once made; the headroom is 1 MiB."""
    settings.STORAGE_HEADROOM_BYTES = 1024 * 1024
    space = {"free": 0}
    folder = disk_space.volume_path()

    def free_bytes(path):
        assert path == folder  # the volume of the database, not another
        return space["free"] - disk_space.reserve_size()

    monkeypatch.setattr(disk_space, "free_bytes", free_bytes)
    return space


def test_new_content_remakes_a_missing_reserve_where_that_leaves_the_headroom(volume):
    volume["free"] = 1024 * 1024 + 64 * 1024  # the headroom and the reserve, exactly
    disk_space.ensure_headroom()
    assert disk_space.reserve_size() == 64 * 1024


def test_a_missing_reserve_is_not_remade_from_the_headroom(volume):
    volume["free"] = 1024 * 1024 + 64 * 1024 - 1
    disk_space.ensure_headroom()  # the headroom is there: content is taken in
    assert disk_space.reserve_size() == 0  # but the reserve would eat into it


def test_a_whole_reserve_is_left_alone(volume, monkeypatch):
    assert disk_space.restore_reserve()
    volume["free"] = 10 * 1024 * 1024
    with monkeypatch.context() as patched:
        patched.setattr(disk_space, "restore_reserve", lambda: pytest.fail("remade a whole reserve"))
        disk_space.ensure_headroom()


def test_content_is_refused_under_the_headroom_with_one_log_line(volume, captured_logs):
    assert disk_space.restore_reserve()
    volume["free"] = 1024 * 1024 + 64 * 1024  # exactly the headroom left beside the reserve
    disk_space.ensure_headroom()
    volume["free"] -= 1
    with pytest.raises(disk_space.InsufficientStorage):
        disk_space.ensure_headroom()
    lines = [line for line in captured_logs[0].getvalue().splitlines() if "refused" in line]
    assert lines == [
        "WARNING sessions_app.infra.disk_space: new content refused: 1048575 bytes free on the database's volume,"
        " headroom 1048576"
    ]


def test_a_reserve_short_by_a_single_byte_is_remade(volume, settings):
    settings.ERASURE_RESERVE_BYTES = 1
    volume["free"] = 10 * 1024 * 1024
    disk_space.ensure_headroom()
    assert disk_space.reserve_size() >= 1
