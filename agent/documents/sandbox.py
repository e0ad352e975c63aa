"""Files are read in worker processes with hard limits, never in the server's own.

A worker is a fresh interpreter (`python -m agent.documents.sandbox`: nothing of the server's
memory is shared with it) that sets its own limits before it reads anything: RLIMIT_AS (address
space, so an inflating bomb fails to allocate), RLIMIT_FSIZE 0 (it can write no file: a file's
bytes never reach the disk), RLIMIT_CORE 0, and before each file RLIMIT_CPU to the CPU it has used
plus the file's budget (the kernel ends it past that). The server waits at most `wall_seconds`
for an answer, then kills the worker. A worker that dies or is killed is replaced by a fresh one
on the next file; a worker that read a file and answered serves the next. The file goes over a
pipe, in memory; the answer comes back as JSON (never pickle: a worker that a file subverted
could not make the server run anything).
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from agent.documents.lines import Document, DocumentRefused

_FRAME = struct.Struct(">I")
START_SECONDS = 10.0  # a worker's start: an interpreter, PDFium and python-docx loaded
_PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent


@dataclass(frozen=True)
class Limits:
    cpu_seconds: int = 5
    wall_seconds: float = 10.0
    memory_bytes: int = 768 * 1024 * 1024
    max_pages: int = 30
    # A worker waits this long for its next file, then exits: an interpreter with PDFium loaded,
    # kept after a burst of files by each web worker, is memory nobody uses.
    idle_seconds: float = 60.0


def _cpu_used() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _read_exact(stream, size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise EOFError
    return data


def _serve(limits: Limits) -> None:
    """The worker's loop: one file in, one answer out (frames: a 4-byte length, then the bytes)."""
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGXCPU, signal.SIG_DFL)
    from agent.documents.reading import read  # the readers load here, under the limits

    inbox, outbox = sys.stdin.buffer, sys.stdout.buffer
    outbox.write(_FRAME.pack(0))  # ready: the file's time starts now
    outbox.flush()
    while True:
        if not select.select([inbox], [], [], limits.idle_seconds)[0]:
            return  # no file for a while (the pool hands no file to a worker this old)
        try:
            name = _read_exact(inbox, _read_frame_length(inbox)).decode("utf-8", "replace")
            data = _read_exact(inbox, _read_frame_length(inbox))
        except EOFError:
            return
        resource.setrlimit(resource.RLIMIT_CPU, (int(_cpu_used()) + 1 + limits.cpu_seconds, resource.RLIM_INFINITY))
        done = False
        try:
            answer = {"read": read(data, name, limits.max_pages).as_dict()}
        except DocumentRefused as refused:
            answer = {"refused": refused.code}
        except (MemoryError, RecursionError):
            answer, done = {"refused": "too_complex"}, True  # a fresh worker follows
        except Exception:  # noqa: BLE001  (a reader's own failure on a malformed file)
            answer = {"refused": "damaged"}
        body = json.dumps(answer, ensure_ascii=True).encode("ascii")
        outbox.write(_FRAME.pack(len(body)) + body)
        outbox.flush()
        if done:
            return


def _read_frame_length(stream) -> int:
    return _FRAME.unpack(_read_exact(stream, _FRAME.size))[0]


class _Worker:
    def __init__(self, limits: Limits):
        environment = {"PATH": os.environ.get("PATH", "")}  # nothing of the server's settings or secrets
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-c",
                f"import sys; sys.path.insert(0, {str(_PROJECT_ROOT)!r});"
                f" from agent.documents.sandbox import main; main({json.dumps(asdict(limits))!r})",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=environment,
            cwd=str(_PROJECT_ROOT),
        )
        self.ready = False

    def ask(self, data: bytes, file_name: str, seconds: float) -> dict:
        """The worker's answer, or {"lost": why} if it died or ran out of time (it is then stopped)."""
        started = time.monotonic()
        deadline = started + seconds
        name = file_name.encode("utf-8", "replace")[:255]
        try:
            if not self.ready:  # a new worker's start (an interpreter and the readers) is not the file's time
                self._receive(_FRAME.size, time.monotonic() + START_SECONDS)
                self.ready, deadline = True, deadline + (time.monotonic() - started)
            self.process.stdin.write(_FRAME.pack(len(name)) + name + _FRAME.pack(len(data)) + data)
            self.process.stdin.flush()
            length = _FRAME.unpack(self._receive(_FRAME.size, deadline))[0]
            return json.loads(self._receive(length, deadline))
        except TimeoutError:
            self.stop()
            return {"lost": "too_slow"}
        except (EOFError, OSError, ValueError):
            self.stop()  # it died: out of memory, out of CPU time (SIGXCPU) or a reader's crash
            return {"lost": "too_slow" if self.process.returncode == -signal.SIGXCPU else "too_complex"}

    def _receive(self, size: int, deadline: float) -> bytes:
        chunks, left, fd = [], size, self.process.stdout.fileno()
        while left:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise TimeoutError
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.alive():
            self.process.kill()
        self.process.wait(5)
        for pipe in (self.process.stdin, self.process.stdout):
            pipe.close()


class WorkerPool:
    """Up to `size` workers; a file waits for a free one (never longer than the wall bound)."""

    def __init__(self, size: int = 2, limits: Limits | None = None):
        self.limits = limits or Limits()
        self.idle: list[tuple[_Worker, float]] = []  # with the time each went idle
        self.free = threading.BoundedSemaphore(size)
        self.lock = threading.Lock()
        self.replaced = 0  # workers that died or were killed, and were replaced

    def read(self, data: bytes, file_name: str) -> Document:
        if not self.free.acquire(timeout=self.limits.wall_seconds):
            raise DocumentRefused("too_slow")
        try:
            with self.lock:
                worker, since = self.idle.pop() if self.idle else (None, 0.0)
            if worker is not None and time.monotonic() - since > self.limits.idle_seconds / 2:
                worker.stop()  # it may be exiting on its own (idle_seconds): a fresh one instead
                worker = None
            worker = worker or _Worker(self.limits)
            answer = worker.ask(data, file_name, self.limits.wall_seconds)
            if "lost" in answer:
                self.replaced += 1
                raise DocumentRefused(answer["lost"])
            if worker.alive():
                with self.lock:
                    self.idle.append((worker, time.monotonic()))
            else:
                worker.stop()
            if "refused" in answer:
                raise DocumentRefused(answer["refused"])
            return Document.from_dict(answer["read"])
        finally:
            self.free.release()

    def close(self) -> None:
        with self.lock:
            workers, self.idle = self.idle, []
        for worker, _since in workers:
            worker.stop()


def main(limits_json: str) -> None:
    _serve(Limits(**json.loads(limits_json)))


_pools: dict[tuple, WorkerPool] = {}
_pools_lock = threading.Lock()


def pool(size: int, limits: Limits) -> WorkerPool:
    """This process's pool for these limits (a forked child gets its own: workers are per process)."""
    key = (os.getpid(), size, limits)
    with _pools_lock:
        if key not in _pools:
            _pools[key] = WorkerPool(size, limits)
        return _pools[key]
