"""Locks that die with their holder and write nothing: one byte each of an empty file, locked with
Linux's open file description (OFD) locks.

Why: a lock kept in an SQLite row is a durable write through the database's one writer, with its
journal and its fsyncs, to say something no one needs after a crash. An OFD lock costs two system
calls; it belongs to an open file, not to a process, so two threads of one process exclude each
other as two processes do; and the kernel drops it when its file is closed, which a killed process
(kill -9) does too. The file stays empty: nothing of what was locked is ever written.

Linux only (fcntl's F_OFD_SETLK, Linux 3.15): `AVAILABLE` says whether this system has them.
No Django here.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import threading

AVAILABLE = hasattr(fcntl, "F_OFD_SETLK")

# struct flock on Linux: l_type, l_whence (short), l_start, l_len (off_t), l_pid (pid_t, 0 for
# OFD locks), padded to the struct's alignment.
_FLOCK = "hhqqi4x"


def _flock(kind: int, number: int) -> bytes:
    return struct.pack(_FLOCK, kind, os.SEEK_SET, number, 1, 0)


class FileRangeLocks:
    """Non-blocking exclusive locks on non-negative integers, shared by every process that opens
    the same `path`. Each lock holds its own open file until `unlock`."""

    def __init__(self, path: str):
        self.path = path
        self._held: dict[int, int] = {}  # number -> the descriptor its lock is on
        self._guard = threading.Lock()

    def _open(self) -> int:
        return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def try_lock(self, number: int) -> bool:
        """Takes `number`'s lock; False at once when anyone holds it (this process included)."""
        descriptor = self._open()
        try:
            fcntl.fcntl(descriptor, fcntl.F_OFD_SETLK, _flock(fcntl.F_WRLCK, number))
        except OSError as error:
            os.close(descriptor)
            if error.errno in (errno.EAGAIN, errno.EACCES):
                return False
            raise
        with self._guard:
            self._held[number] = descriptor
        return True

    def unlock(self, number: int) -> None:
        """Frees `number`'s lock if this process holds it (closing its file drops the lock)."""
        with self._guard:
            descriptor = self._held.pop(number, None)
        if descriptor is not None:
            os.close(descriptor)

    def is_locked(self, number: int) -> bool:
        """Whether anyone holds `number`'s lock right now."""
        descriptor = self._open()
        try:
            answer = fcntl.fcntl(descriptor, fcntl.F_OFD_GETLK, _flock(fcntl.F_WRLCK, number))
        finally:
            os.close(descriptor)
        return struct.unpack(_FLOCK, answer)[0] != fcntl.F_UNLCK
