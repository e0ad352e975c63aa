#!/usr/bin/env python3
"""Which SQLite settings leave no byte of a deleted session in any database file?

For each configuration, in a fresh temporary directory, this script creates a
database shaped like ours (a `sessions` table whose JSON `state` is written by
`json.dumps`, i.e. non-ASCII escaped as \\uXXXX, and an `events` table whose
`event_data` is raw UTF-8 JSON, with `ON DELETE CASCADE`), stores a few other
sessions plus one "marker" session (a fictional resume), deletes the marker
session in one transaction and scans the raw bytes of every file of the
database (main, -journal, -wal, -shm) for every marker in every encoding.

It also measures, outside the main table:
  * the rollback journal during the delete transaction (its maximum size and
    whether it holds the markers before COMMIT): the before-images that DELETE
    and TRUNCATE modes only unlink/truncate, leaving them in free filesystem
    blocks that no user-level scan can reach;
  * temp_store DEFAULT vs MEMORY for large transactions that need a statement
    journal: SQLite spills it to an unlinked temp file ("etilqs_*"), which is
    only visible through /proc/self/fd while the statement runs, so a
    progress handler looks there (and reads the file) during the statement.

Standard library only. Run:
    .venv/bin/python benchmarks/journal_modes.py [--out var/journal_modes.md]
All data is fictional.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# ---------------------------------------------------------------------------
# Fictional data
# ---------------------------------------------------------------------------

MARKERS: tuple[str, ...] = (
    "鄭雨澄",
    "蒼鷺燈塔科技股份有限公司",
    "霧峰貨運調度台",
    "玉山星圖觀測站",
    "Heron Lighthouse Technologies",
    "Misty Ridge Dispatch Board",
    "Jade Summit Star Atlas",
)

RESUME = """\
鄭雨澄 Cheng Yu-Cheng — 履歷 Resume (fictional person)
Email: yucheng.cheng@example.test | Phone: +886 900 111 222 (fictional)

學歷 Education
- 國立想像海洋大學 資訊工程研究所 碩士 (2015-2017) — Imaginary Ocean University, M.S. CS
- 南島虛構大學 數學系 學士 (2011-2015)

工作經歷 Experience
- 蒼鷺燈塔科技股份有限公司 Heron Lighthouse Technologies, Staff Engineer (2020-present)
  帶領六人團隊重寫計費系統，將每月對帳時間從三天縮短為四小時。
  Rebuilt the billing pipeline; monthly reconciliation went from three days to four hours.
- 白鷺港口資訊 Egret Harbour Informatics, Backend Engineer (2017-2020)
  以 Django 與 PostgreSQL 建置港口排班 API，服務兩百個碼頭。

專案 Projects
- 霧峰貨運調度台 Misty Ridge Dispatch Board: 即時貨運調度看板，Go 與 WebSocket。
  A real-time freight dispatch board in Go and WebSocket, 900 GitHub stars.
- 玉山星圖觀測站 Jade Summit Star Atlas: 業餘天文觀測資料平台，Python 與 SQLite。
  An amateur astronomy data platform in Python and SQLite.

技能 Skills
Python, Django, Go, PostgreSQL, SQLite, Kubernetes, Terraform
"""

_FILLER = (
    "The assistant reviewed wording, tense and ordering of the bullet points and "
    "suggested shorter sentences with measurable outcomes for each role. "
)


def _filler(n: int) -> str:
    return (_FILLER * (n // len(_FILLER) + 1))[:n]


def _resume_lines() -> list[str]:
    return [line for line in RESUME.splitlines() if line.strip()]


def marker_forms(marker: str) -> dict[str, bytes]:
    """The byte forms a marker can take in the files (distinct byte strings only)."""
    escaped = json.dumps(marker)[1:-1]  # json.dumps escapes non-ASCII as lower-case \uXXXX
    forms = {"utf-8": marker.encode("utf-8")}
    if escaped != marker:
        forms["json-escaped"] = escaped.encode("ascii")
        parts = escaped.split("\\u")
        upper = parts[0] + "".join("\\u" + p[:4].upper() + p[4:] for p in parts[1:])
        if upper != escaped:
            forms["json-escaped-upper"] = upper.encode("ascii")
    return forms


def expected_forms() -> frozenset[tuple[str, str]]:
    """What a correct insert must put on disk: UTF-8 (events) and \\uXXXX (state)."""
    return frozenset(
        (marker, form) for marker in MARKERS for form in marker_forms(marker) if form != "json-escaped-upper"
    )


def scan_bytes(data: bytes) -> frozenset[tuple[str, str]]:
    return frozenset(
        (marker, form)
        for marker in MARKERS
        for form, needle in marker_forms(marker).items()
        if needle in data
    )


# ---------------------------------------------------------------------------
# Sizes and configurations
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Sizes:
    other_sessions: int = 4
    other_events: int = 3
    events: int = 14
    state_bytes: int = 3_000  # fits in one 4 KiB page: no overflow pages
    event_bytes: int = 1_000
    overflow_state_bytes: int = 16_000  # > page size: spans overflow pages
    overflow_event_bytes: int = 6_000
    temp_rows: int = 300  # sessions touched by the temp_store transactions

    @classmethod
    def quick(cls) -> "Sizes":
        return cls(other_sessions=2, other_events=2, temp_rows=60)


@dataclass(frozen=True)
class Config:
    journal_mode: str = "DELETE"  # DELETE TRUNCATE PERSIST MEMORY WAL
    secure_delete: str = "ON"  # ON OFF FAST
    temp_store: str = "MEMORY"  # DEFAULT FILE MEMORY
    journal_size_limit: int | None = None
    checkpoint: bool = False  # PRAGMA wal_checkpoint(TRUNCATE) after the delete
    open_reader: bool = False  # another connection holds a read transaction across the delete
    layout: str = "inline"  # inline: rows fit in a page; overflow: values larger than a page

    @property
    def label(self) -> str:
        parts = [self.journal_mode]
        if self.journal_size_limit is not None:
            parts.append(f"journal_size_limit={self.journal_size_limit}")
        if self.checkpoint:
            parts.append("wal_checkpoint(TRUNCATE)")
        if self.open_reader:
            parts.append("open reader")
        return " + ".join(parts)


def default_configs() -> list[Config]:
    c: list[Config] = []
    for mode in ("DELETE", "TRUNCATE"):
        for sd in ("ON", "OFF", "FAST"):
            c.append(Config(mode, sd))
    c.append(Config("PERSIST", "ON"))
    c.append(Config("PERSIST", "ON", journal_size_limit=0))
    c.append(Config("MEMORY", "ON"))
    for sd in ("ON", "OFF", "FAST"):
        c.append(Config("WAL", sd))
    c.append(Config("WAL", "ON", journal_size_limit=0))
    for sd in ("ON", "OFF", "FAST"):
        c.append(Config("WAL", sd, checkpoint=True))
    c.append(Config("WAL", "ON", checkpoint=True, open_reader=True))
    # Values larger than a page: the text lives in overflow pages.
    for sd in ("ON", "OFF", "FAST"):
        c.append(Config("DELETE", sd, layout="overflow"))
    for sd in ("ON", "FAST"):
        c.append(Config("WAL", sd, checkpoint=True, layout="overflow"))
    return c


CHOSEN = Config("DELETE", "ON", temp_store="MEMORY")

# ---------------------------------------------------------------------------
# Database shaped like ours
# ---------------------------------------------------------------------------

SCHEMA = """
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    app_name varchar(128) NOT NULL,
    user_id varchar(128) NOT NULL,
    session_id varchar(128) NOT NULL,
    state text NOT NULL CHECK ((JSON_VALID(state) OR state IS NULL)),
    created_at datetime NOT NULL,
    updated_at datetime NOT NULL,
    revision bigint unsigned NOT NULL CHECK (revision >= 0),
    turn_started_at datetime NULL,
    UNIQUE (app_name, user_id, session_id)
);
CREATE INDEX sessions_updated_at ON sessions (updated_at);
CREATE INDEX session_id_idx ON sessions (session_id);
CREATE TABLE events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id bigint NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    event_id varchar(128) NOT NULL,
    invocation_id varchar(256) NOT NULL,
    author varchar(256) NOT NULL,
    timestamp real NOT NULL,
    event_data text NOT NULL
);
CREATE INDEX event_session_time_idx ON events (session_id, timestamp);
"""

SECURE_DELETE_VALUES = {"OFF": 0, "ON": 1, "FAST": 2}
TEMP_STORE_VALUES = {"DEFAULT": 0, "FILE": 1, "MEMORY": 2}


def marker_state(target_bytes: int, overflow: bool) -> str:
    """JSONField-style state (json.dumps: non-ASCII escaped), about target_bytes long."""
    state: dict = {"resume_text": RESUME, "target_role": "Staff Backend Engineer", "notes": ""}
    lines = _resume_lines()
    if overflow:
        # Repeat resume lines so the markers sit everywhere, including the
        # part of the record that goes to overflow pages.
        state["drafts"] = []
        i = 0
        while len(json.dumps(state)) < target_bytes:
            state["drafts"].append(lines[i % len(lines)])
            i += 1
    else:
        missing = target_bytes - len(json.dumps(state))
        state["notes"] = _filler(max(0, missing))
    return json.dumps(state)


def marker_events(count: int, target_bytes: int, overflow: bool) -> list[str]:
    """ADK-style event JSON, raw UTF-8 (ensure_ascii=False), each quoting the resume."""
    lines = _resume_lines()
    out = []
    for i in range(count):
        quote = f"{lines[i % len(lines)]} / {lines[(i + count) % len(lines)]}"
        model = i % 2 == 1
        event = {
            "id": f"evt-{i:04d}",
            "invocation_id": f"inv-{i // 2}",
            "author": "resume_agent" if model else "user",
            "timestamp": 1_800_000_000.0 + i,
            "content": {"role": "model" if model else "user", "parts": [{"text": quote}]},
            "actions": {"state_delta": {"last_quote": quote} if model else {}},
            "summary": "",
        }
        if overflow:
            j = i
            while len(json.dumps(event, ensure_ascii=False).encode()) < target_bytes:
                event["summary"] += lines[j % len(lines)] + "\n"
                j += 1
        else:
            missing = target_bytes - len(json.dumps(event, ensure_ascii=False).encode())
            event["summary"] = _filler(max(0, missing))
        out.append(json.dumps(event, ensure_ascii=False))
    return out


def other_state(n: int) -> str:
    return json.dumps({"resume_text": f"Placeholder resume {n}: " + _filler(600), "target_role": "Analyst"})


def other_event(n: int, i: int) -> str:
    return json.dumps({"id": f"o{n}-{i}", "content": {"parts": [{"text": _filler(400)}]}}, ensure_ascii=False)


def _now(offset_days: int = 0) -> str:
    return (dt.datetime(2026, 1, 1) + dt.timedelta(days=offset_days)).isoformat(sep=" ")


def connect(db: Path, config: Config, timeout: float = 20.0) -> sqlite3.Connection:
    """A connection configured like ours; transactions are explicit BEGIN IMMEDIATE."""
    conn = sqlite3.connect(db, timeout=timeout, isolation_level=None)
    conn.execute(f"PRAGMA secure_delete={config.secure_delete}")
    got = conn.execute("PRAGMA secure_delete").fetchone()[0]
    if got != SECURE_DELETE_VALUES[config.secure_delete]:
        raise RuntimeError(f"secure_delete={config.secure_delete} not applied (got {got})")
    mode = conn.execute(f"PRAGMA journal_mode={config.journal_mode}").fetchone()[0]
    if mode.upper() != config.journal_mode:
        raise RuntimeError(f"journal_mode={config.journal_mode} not applied (got {mode})")
    conn.execute(f"PRAGMA temp_store={config.temp_store}")
    if config.journal_size_limit is not None:
        conn.execute(f"PRAGMA journal_size_limit={config.journal_size_limit}")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def insert_session(conn, n: int, state: str, events: list[str], updated_days: int = 0) -> int:
    cur = conn.execute(
        "INSERT INTO sessions (app_name, user_id, session_id, state, created_at, updated_at, revision)"
        " VALUES ('resume_agent', ?, ?, ?, ?, ?, ?)",
        (f"owner-{n:04d}", f"00000000-0000-4000-8000-{n:012d}", state, _now(), _now(updated_days), len(events)),
    )
    sid = cur.lastrowid
    conn.executemany(
        "INSERT INTO events (session_id, event_id, invocation_id, author, timestamp, event_data)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [(sid, f"e{sid}-{i}", f"inv-{i // 2}", "user", 1_800_000_000.0 + i, data) for i, data in enumerate(events)],
    )
    return sid


# ---------------------------------------------------------------------------
# Scanning
# ---------------------------------------------------------------------------

SUFFIXES = ("", "-journal", "-wal", "-shm")
FILE_NAMES = {"": "main", "-journal": "-journal", "-wal": "-wal", "-shm": "-shm"}


@dataclass(frozen=True)
class FileState:
    exists: bool
    size: int = 0
    hits: frozenset = frozenset()
    pages: tuple[int, int] = (0, 0)  # main file only: (pages with hits, of which on the freelist)


def scan_database(db: Path) -> dict[str, FileState]:
    out = {}
    for suffix in SUFFIXES:
        path = Path(f"{db}{suffix}")
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            out[FILE_NAMES[suffix]] = FileState(False)
            continue
        hits = scan_bytes(data)
        pages = (0, 0)
        if suffix == "" and hits:
            with_hits, on_freelist = hit_pages(data)
            pages = (len(with_hits), len(on_freelist))
        out[FILE_NAMES[suffix]] = FileState(True, len(data), hits, pages)
    return out


def freelist_pages(data: bytes) -> set[int]:
    """Page numbers on the freelist of a database file image (trunk and leaf pages)."""
    if len(data) < 100 or not data.startswith(b"SQLite format 3\x00"):
        return set()
    page_size = int.from_bytes(data[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    free: set[int] = set()
    trunk = int.from_bytes(data[32:36], "big")
    while trunk and trunk not in free and trunk * page_size <= len(data):
        free.add(trunk)
        off = (trunk - 1) * page_size
        count = int.from_bytes(data[off + 4 : off + 8], "big")
        for k in range(min(count, page_size // 4 - 2)):
            free.add(int.from_bytes(data[off + 8 + 4 * k : off + 12 + 4 * k], "big"))
        trunk = int.from_bytes(data[off : off + 4], "big")
    return free


def hit_pages(data: bytes) -> tuple[set[int], set[int]]:
    """(pages holding any marker, of which on the freelist) in a database file image."""
    page_size = int.from_bytes(data[16:18], "big") if len(data) >= 100 else 4096
    page_size = 65536 if page_size == 1 else page_size
    pages = set()
    for marker in MARKERS:
        for needle in marker_forms(marker).values():
            start = data.find(needle)
            while start != -1:
                pages.add(start // page_size + 1)
                start = data.find(needle, start + 1)
    return pages, pages & freelist_pages(data)


def all_hits(scan: dict[str, FileState]) -> frozenset:
    return frozenset().union(*(s.hits for s in scan.values()))


def leaking_files(scan: dict[str, FileState]) -> list[str]:
    return [name for name, s in scan.items() if s.hits]


class Watcher:
    """Progress handler: watches the -journal size and SQLite temp files while a statement runs.

    SQLite names its temp files `etilqs_*` and unlinks them right after
    opening them, so the only place they can be seen is /proc/self/fd. Each
    temp file seen is also read (through the /proc link) and scanned.
    """

    def __init__(self, db: Path | None = None):
        self.journal = Path(f"{db}-journal") if db else None
        self.journal_max = 0
        self.temp_files: dict[str, int] = {}  # link target -> max size seen
        self.temp_hits: frozenset = frozenset()
        self.calls = 0
        self.proc_fd = Path("/proc/self/fd").is_dir()

    def __call__(self) -> int:
        try:
            self.poll()
        except Exception:  # never abort the statement being measured
            pass
        return 0

    def poll(self) -> None:
        self.calls += 1
        if self.journal is not None:
            try:
                self.journal_max = max(self.journal_max, self.journal.stat().st_size)
            except FileNotFoundError:
                pass
        if not self.proc_fd:
            return
        for name in os.listdir("/proc/self/fd"):
            link = f"/proc/self/fd/{name}"
            try:
                target = os.readlink(link)
                if "etilqs_" not in target:
                    continue
                size = os.stat(link).st_size
            except OSError:
                continue
            if size != self.temp_files.get(target, -1):
                try:
                    with open(link, "rb") as fh:
                        self.temp_hits |= scan_bytes(fh.read())
                except OSError:
                    pass
            self.temp_files[target] = max(size, self.temp_files.get(target, 0))


# ---------------------------------------------------------------------------
# Measurement: delete one session
# ---------------------------------------------------------------------------


@dataclass
class Result:
    config: Config
    before: dict[str, FileState]
    before_ok: bool
    pre_commit: dict[str, FileState]  # after the DELETE statement, before COMMIT
    journal_max_during: int
    temp_files_during: dict[str, int]
    after: dict[str, FileState]  # right after COMMIT (and the checkpoint, if any)
    after_close: dict[str, FileState]  # once every connection is closed
    rows_left: tuple[int, int]
    checkpoint: tuple | None = None
    checkpoint_seconds: float | None = None
    seconds: float = 0.0

    @property
    def leaks(self) -> list[str]:
        return leaking_files(self.after)

    @property
    def clean(self) -> bool:
        return self.before_ok and not self.leaks

    @property
    def verdict(self) -> str:
        if not self.before_ok:
            return "INVALID: markers not found before the delete"
        if self.rows_left != (0, 0):
            return f"INVALID: rows left {self.rows_left}"
        return "clean" if not self.leaks else "LEAK: " + ", ".join(self.leaks)


def measure(
    config: Config,
    sizes: Sizes = Sizes(),
    *,
    checkpoint_timeout_ms: int = 1000,
    workdir: str | None = None,
) -> Result:
    """Insert, commit, delete the marker session (cascade), commit, scan every file."""
    if config.open_reader and config.journal_mode != "WAL":
        raise ValueError("an open reader blocks COMMIT in rollback-journal modes; only WAL is measured")
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="journal_modes_", dir=workdir))
    db = tmp / "sessions.db"
    reader = None
    conn = connect(db, config)
    try:
        conn.executescript(SCHEMA)
        overflow = config.layout == "overflow"
        state = marker_state(sizes.overflow_state_bytes if overflow else sizes.state_bytes, overflow)
        events = marker_events(
            sizes.events, sizes.overflow_event_bytes if overflow else sizes.event_bytes, overflow
        )
        conn.execute("BEGIN IMMEDIATE")
        for n in range(sizes.other_sessions // 2):
            insert_session(conn, n, other_state(n), [other_event(n, i) for i in range(sizes.other_events)])
        target = insert_session(conn, 9999, state, events)
        for n in range(sizes.other_sessions // 2, sizes.other_sessions):
            insert_session(conn, n, other_state(n), [other_event(n, i) for i in range(sizes.other_events)])
        conn.execute("COMMIT")

        before = scan_database(db)
        before_ok = expected_forms() <= all_hits(before)

        if config.open_reader:
            reader = sqlite3.connect(db, timeout=20, isolation_level=None)
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM events").fetchone()  # read transaction now open

        watcher = Watcher(db)
        conn.set_progress_handler(watcher, 20)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM sessions WHERE id = ?", (target,))
        conn.set_progress_handler(None, 0)
        watcher.poll()
        pre_commit = scan_database(db)
        journal_max = max(watcher.journal_max, pre_commit["-journal"].size)
        conn.execute("COMMIT")
        rows_left = (
            conn.execute("SELECT count(*) FROM sessions WHERE id = ?", (target,)).fetchone()[0],
            conn.execute("SELECT count(*) FROM events WHERE session_id = ?", (target,)).fetchone()[0],
        )

        checkpoint = checkpoint_seconds = None
        if config.checkpoint:
            conn.execute(f"PRAGMA busy_timeout={checkpoint_timeout_ms}")
            t0 = time.monotonic()
            checkpoint = tuple(conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())
            checkpoint_seconds = time.monotonic() - t0

        after = scan_database(db)
        if reader is not None:
            reader.execute("ROLLBACK")
            reader.close()
            reader = None
        conn.close()
        after_close = scan_database(db)
        return Result(
            config=config,
            before=before,
            before_ok=before_ok,
            pre_commit=pre_commit,
            journal_max_during=journal_max,
            temp_files_during=dict(watcher.temp_files),
            after=after,
            after_close=after_close,
            rows_left=rows_left,
            checkpoint=checkpoint,
            checkpoint_seconds=checkpoint_seconds,
            seconds=time.monotonic() - started,
        )
    finally:
        if reader is not None:
            reader.close()
        conn.close()
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------
# Measurement: temp_store and statement journals
# ---------------------------------------------------------------------------

TEMP_SCENARIOS = {
    # The TTL purge shape: one DELETE with a subquery, cascading to events.
    "purge": [
        "DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE updated_at < :cutoff)",
    ],
    # A transaction that first touches the rows and then deletes them. This
    # UPDATE cannot fail half-way (no constraint on the column it sets).
    "update then purge": [
        "UPDATE sessions SET turn_started_at = :cutoff WHERE updated_at < :cutoff",
        "DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE updated_at < :cutoff)",
    ],
    # The same with an UPDATE that can fail half-way (CHECK (revision >= 0)),
    # so SQLite opens a statement journal for it.
    "abortable update then purge": [
        "UPDATE sessions SET revision = revision + 1 WHERE updated_at < :cutoff",
        "DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE updated_at < :cutoff)",
    ],
    # Two multi-row UPDATEs, then the purge. The CHECK (revision >= 0) may fail
    # mid-statement, so the second UPDATE needs a statement journal holding the
    # before-images of the pages the first one already wrote.
    "update twice then purge": [
        "UPDATE sessions SET revision = revision + 1 WHERE updated_at < :cutoff",
        "UPDATE sessions SET revision = revision + 1 WHERE updated_at < :cutoff",
        "DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE updated_at < :cutoff)",
    ],
}


@dataclass
class TempResult:
    scenario: str
    journal_mode: str
    temp_store: str
    rows: int
    temp_files: dict[str, int]
    temp_hits: frozenset
    observable: bool
    progress_calls: int
    main_after: FileState
    tmpdir_left: list[str]

    @property
    def verdict(self) -> str:
        if not self.observable:
            return "not observable (/proc/self/fd missing)"
        if not self.temp_files:
            return "no temp file"
        if self.temp_hits:
            return "LEAK: markers written to an unlinked temp file"
        return "temp file without markers"


def measure_temp_store(
    scenario: str,
    temp_store: str,
    journal_mode: str = "DELETE",
    rows: int = 300,
    sizes: Sizes = Sizes(),
    workdir: str | None = None,
) -> TempResult:
    tmp = Path(tempfile.mkdtemp(prefix="journal_modes_temp_", dir=workdir))
    db = tmp / "sessions.db"
    config = Config(journal_mode, "ON", temp_store=temp_store)
    conn = connect(db, config)
    try:
        conn.executescript(SCHEMA)
        state = marker_state(sizes.state_bytes, overflow=False)
        events = marker_events(2, sizes.event_bytes, overflow=False)
        conn.execute("BEGIN IMMEDIATE")
        for n in range(rows):
            insert_session(conn, n, state, events, updated_days=-100)
        for n in range(rows, rows + sizes.other_sessions):
            insert_session(conn, n, other_state(n), [other_event(n, 0)])
        conn.execute("COMMIT")
        if journal_mode == "WAL":
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        watcher = Watcher()
        conn.set_progress_handler(watcher, 20)
        conn.execute("BEGIN IMMEDIATE")
        for sql in TEMP_SCENARIOS[scenario]:
            conn.execute(sql, {"cutoff": _now(-50)})
            watcher.poll()
        conn.set_progress_handler(None, 0)
        conn.execute("COMMIT")
        if journal_mode == "WAL":
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        main_after = scan_database(db)["main"]
        tmpdir = os.environ.get("SQLITE_TMPDIR")
        left = sorted(os.listdir(tmpdir)) if tmpdir and os.path.isdir(tmpdir) else []
        return TempResult(
            scenario=scenario,
            journal_mode=journal_mode,
            temp_store=temp_store,
            rows=rows,
            temp_files=dict(watcher.temp_files),
            temp_hits=watcher.temp_hits,
            observable=watcher.proc_fd,
            progress_calls=watcher.calls,
            main_after=main_after,
            tmpdir_left=left,
        )
    finally:
        conn.close()
        shutil.rmtree(tmp, ignore_errors=True)


def default_temp_cases() -> list[tuple[str, str, str]]:
    return [
        (scenario, temp_store, mode)
        for mode in ("DELETE", "WAL")
        for scenario in TEMP_SCENARIOS
        for temp_store in ("DEFAULT", "MEMORY")
    ]


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB"


def _hits(state: FileState) -> str:
    if not state.exists:
        return "no file"
    if not state.hits:
        return "0"
    markers = {m for m, _ in state.hits}
    forms = sorted({f for _, f in state.hits})
    short = {"utf-8": "utf-8", "json-escaped": "\\u", "json-escaped-upper": "\\U"}
    return f"**{len(markers)}/{len(MARKERS)}** ({'+'.join(short[f] for f in forms)})"


def _sidecars(scan: dict[str, FileState]) -> str:
    files = [f"{name} {_size(s.size)}" for name, s in scan.items() if name != "main" and s.exists]
    return ", ".join(files) if files else "none"


def _note(r: Result) -> str:
    notes = []
    main = r.after["main"]
    if main.hits:
        notes.append(f"main: markers on {main.pages[0]} page(s), {main.pages[1]} of them on the freelist")
    if r.checkpoint is not None:
        busy, log, done = r.checkpoint
        notes.append(
            f"checkpoint busy={busy} log={log} checkpointed={done} in {r.checkpoint_seconds:.2f} s"
        )
    if r.temp_files_during:
        notes.append(f"{len(r.temp_files_during)} temp file(s) during delete")
    return "; ".join(notes)


def render(results: list[Result], temp_results: list[TempResult], command: str) -> str:
    out = []
    out.append(f"Command: `{command}`  ")
    out.append(f"Date (UTC): {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M:%S')}  ")
    out.append(f"Machine: `{platform.uname().system} {platform.uname().release} {platform.uname().machine}`, "
               f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}  ")
    out.append(f"Markers: {len(MARKERS)} ({sum(1 for m in MARKERS if not m.isascii())} Traditional Chinese, "
               f"{sum(1 for m in MARKERS if m.isascii())} English), each searched as UTF-8 and as \\uXXXX "
               "(lower- and upper-case hex).")
    out.append("")
    out.append("### After DELETE + COMMIT of the marker session")
    out.append("")
    out.append(
        "| # | config | layout | secure_delete | markers before (all forms found) | main after "
        "| -journal after | -wal after | sidecar files after | verdict | after all connections closed | note |"
    )
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for i, r in enumerate(results, 1):
        c = r.config
        before = "yes" if r.before_ok else "**NO**"
        close = "clean" if not leaking_files(r.after_close) else "LEAK: " + ", ".join(leaking_files(r.after_close))
        out.append(
            f"| {i} | {c.label} | {c.layout} | {c.secure_delete} | {before} | {_hits(r.after['main'])} "
            f"| {_hits(r.after['-journal'])} | {_hits(r.after['-wal'])} | {_sidecars(r.after)} "
            f"| {r.verdict if r.clean else '**' + r.verdict + '**'} | {close} | {_note(r)} |"
        )
    out.append("")
    out.append("`**n/7**` = n of the 7 markers found in that file (forms: utf-8 = raw UTF-8, \\u = json.dumps "
               "escapes). `0` = file present, nothing found. temp_store=MEMORY in all rows above.")
    out.append("")
    out.append("### The rollback journal during the delete transaction (before COMMIT)")
    out.append("")
    out.append("| config | layout | secure_delete | -journal max size during delete | markers in -journal before COMMIT "
               "| -journal after COMMIT |")
    out.append("|---|---|---|---|---|---|")
    for r in results:
        c = r.config
        if c.journal_mode not in ("DELETE", "TRUNCATE", "PERSIST") or c.secure_delete != "ON":
            continue
        j = r.after["-journal"]
        after = "unlinked" if not j.exists else f"{_size(j.size)} kept"
        out.append(
            f"| {c.label} | {c.layout} | {c.secure_delete} | {_size(r.journal_max_during)} "
            f"| {_hits(r.pre_commit['-journal'])} | {after} |"
        )
    out.append("")
    out.append("### temp_store: statement journals of large transactions (secure_delete=ON)")
    out.append("")
    out.append("| scenario | journal_mode | temp_store | rows | temp files seen in /proc/self/fd (max size) "
               "| markers in temp file | main after | verdict |")
    out.append("|---|---|---|---|---|---|---|---|")
    for t in temp_results:
        files = ", ".join(f"{Path(k.replace(' (deleted)', '')).name} (deleted) {_size(v)}"
                          for k, v in t.temp_files.items()) or "none"
        found = (f"**{len({m for m, _ in t.temp_hits})}/{len(MARKERS)}**" if t.temp_hits else "0") if t.temp_files else "-"
        out.append(
            f"| {t.scenario} | {t.journal_mode} | {t.temp_store} | {t.rows} | {files} | {found} "
            f"| {_hits(t.main_after)} | {t.verdict} |"
        )
    out.append("")
    return "\n".join(out)


def run_all(sizes: Sizes = Sizes(), checkpoint_timeout_ms: int = 1000) -> tuple[list[Result], list[TempResult]]:
    results = [measure(c, sizes, checkpoint_timeout_ms=checkpoint_timeout_ms) for c in default_configs()]
    temp_results = [
        measure_temp_store(scenario, temp_store, mode, rows=sizes.temp_rows, sizes=sizes)
        for scenario, temp_store, mode in default_temp_cases()
    ]
    return results, temp_results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="var/journal_modes.md", help="Markdown output (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help="small sizes (what the tests use)")
    parser.add_argument("--checkpoint-timeout-ms", type=int, default=1000,
                        help="busy timeout of the checkpoint that an open reader blocks (default: %(default)s)")
    args = parser.parse_args(argv)

    # A dedicated, empty temp dir for SQLite (read once, when SQLite initializes).
    sqlite_tmp = tempfile.mkdtemp(prefix="journal_modes_sqlite_tmp_")
    os.environ["SQLITE_TMPDIR"] = sqlite_tmp
    try:
        sizes = Sizes.quick() if args.quick else Sizes()
        results, temp_results = run_all(sizes, args.checkpoint_timeout_ms)
        command = " ".join([".venv/bin/python", "benchmarks/journal_modes.py", *(argv if argv is not None else sys.argv[1:])])
        report = render(results, temp_results, command)
        left = os.listdir(sqlite_tmp)
        report += f"\nSQLITE_TMPDIR={sqlite_tmp} held {len(left)} file(s) after the run (temp files are unlinked at open).\n"
    finally:
        shutil.rmtree(sqlite_tmp, ignore_errors=True)
    print(report)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report, encoding="utf-8")
    print(f"written to {out}", file=sys.stderr)
    return 0 if all(r.before_ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
