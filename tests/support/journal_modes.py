"""Which SQLite settings leave no byte of a deleted session in any file of the database? The measurement of the
journal-modes study (docs/JOURNAL_MODES.md), sqlite3 only, which tests/storage/test_journal_modes.py runs: ours (CHOSEN)
and the controls that must leak. The study's report, benchmarks/journal_modes.py, is retired (its first line in
benchmarks/results/journal_modes.md says how to bring it back)."""

import contextlib
import datetime as dt
import json
import os
import re
import sqlite3
import tempfile
import time
from collections import namedtuple
from dataclasses import dataclass
from pathlib import Path

from tests.support import privacy

# A fictional resume and its 7 markers (4 Traditional Chinese, 3 English): the tests' fixtures.
MARKERS: tuple[str, ...] = tuple(privacy.fixture_markers())
RESUME = privacy.fixture_resume()
LINES = [line for line in RESUME.splitlines() if line.strip()]
_FILLER = "The assistant reviewed wording, tense and ordering of the bullet points and suggested shorter sentences"
_FILLER += " with measurable outcomes for each role. "


def _filler(n: int) -> str:
    return (_FILLER * (n // len(_FILLER) + 1))[:n]  # "" for n <= 0


def marker_forms(marker: str) -> dict[str, bytes]:
    """The distinct byte forms a marker can take in the files: UTF-8, json.dumps's lower-case \\uXXXX, upper-case."""
    escaped = json.dumps(marker)[1:-1]
    upper = re.sub(r"\\u([0-9a-f]{4})", lambda m: "\\u" + m[1].upper(), escaped)
    forms = {upper.encode(): "json-escaped-upper", escaped.encode(): "json-escaped", marker.encode(): "utf-8"}
    return {form: text for text, form in reversed(forms.items())}


def scan_bytes(data: bytes) -> frozenset[tuple[str, str]]:
    return frozenset((m, form) for m, form, needle in NEEDLES if needle in data)


@dataclass(frozen=True)
class Sizes:
    other_sessions: int = 4
    other_events: int = 3
    events: int = 14
    state_bytes: int = 3_000  # fits in one 4 KiB page: no overflow pages
    event_bytes: int = 1_000
    temp_rows: int = 300  # sessions touched by the temp_store transactions

    @classmethod
    def quick(cls) -> "Sizes":
        return cls(other_sessions=2, other_events=2, temp_rows=60)


@dataclass(frozen=True)
class Config:
    journal_mode: str = "DELETE"  # DELETE PERSIST WAL
    secure_delete: str = "ON"  # ON OFF FAST
    temp_store: str = "MEMORY"  # DEFAULT MEMORY
    checkpoint: bool = False  # PRAGMA wal_checkpoint(TRUNCATE) after the delete
    open_reader: bool = False  # WAL only: another connection holds a read transaction across the delete


NEEDLES = [(m, form, needle) for m in MARKERS for form, needle in marker_forms(m).items()]
# What a correct insert must put on disk: UTF-8 (events) and \uXXXX (state).
EXPECTED = frozenset((m, form) for m, form, _ in NEEDLES if form != "json-escaped-upper")
# pages: main file only, (pages with hits, of which on the freelist)
FileState = namedtuple("FileState", "exists size hits pages")
# temp_files: the unlinked temp files seen in /proc/self/fd -> their largest size
TempResult = namedtuple("TempResult", "scenario temp_store rows temp_files temp_hits main_after")
CHOSEN = Config("DELETE", "ON", temp_store="MEMORY")
SCHEMA = """
CREATE TABLE sessions (id INTEGER PRIMARY KEY AUTOINCREMENT, app_name varchar(128) NOT NULL,
    user_id varchar(128) NOT NULL, session_id varchar(128) NOT NULL,
    state text NOT NULL CHECK ((JSON_VALID(state) OR state IS NULL)), created_at datetime NOT NULL,
    updated_at datetime NOT NULL, revision bigint unsigned NOT NULL CHECK (revision >= 0),
    turn_started_at datetime NULL, UNIQUE (app_name, user_id, session_id));
CREATE INDEX sessions_updated_at ON sessions (updated_at);
CREATE INDEX session_id_idx ON sessions (session_id);
CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id bigint NOT NULL REFERENCES sessions (id) ON DELETE CASCADE, event_id varchar(128) NOT NULL,
    invocation_id varchar(256) NOT NULL, author varchar(256) NOT NULL, timestamp real NOT NULL,
    event_data text NOT NULL);
CREATE INDEX event_session_time_idx ON events (session_id, timestamp);
"""
ROWS_LEFT = "SELECT (SELECT count(*) FROM sessions WHERE id = ?), (SELECT count(*) FROM events WHERE session_id = ?)"
# The TTL purge shape: one DELETE with a subquery, cascading to events.
PURGE = "DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE updated_at < :cutoff)"
# An UPDATE that cannot fail half-way (no constraint on the column it sets) ...
TOUCH = "UPDATE sessions SET turn_started_at = :cutoff WHERE updated_at < :cutoff"
# ... and one that can (CHECK (revision >= 0)), so SQLite opens a statement journal for it; run
# twice, the second needs the before-images of the pages the first one already wrote.
BUMP = "UPDATE sessions SET revision = revision + 1 WHERE updated_at < :cutoff"
TEMP_SCENARIOS = {"purge": [PURGE], "update then purge": [TOUCH, PURGE], "abortable update then purge": [BUMP, PURGE]}
TEMP_SCENARIOS["update twice then purge"] = [BUMP, BUMP, PURGE]


def marker_state(target_bytes: int) -> str:  # JSONField-style (json.dumps: non-ASCII escaped), about this long
    state = {"resume_text": RESUME, "target_role": "Staff Backend Engineer", "notes": ""}
    return json.dumps(state | {"notes": _filler(target_bytes - len(json.dumps(state)))})


def marker_events(count: int, target_bytes: int) -> list[str]:  # ADK-style event JSON, raw UTF-8, quoting the resume
    out = []
    for i in range(count):
        quote, model = f"{LINES[i % len(LINES)]} / {LINES[(i + count) % len(LINES)]}", i % 2 == 1
        role = "model" if model else "user"
        event = {"id": f"evt-{i:04d}", "invocation_id": f"inv-{i // 2}", "author": "resume_agent" if model else "user"}
        event |= {"timestamp": 1_800_000_000.0 + i, "content": {"role": role, "parts": [{"text": quote}]}}
        event |= {"actions": {"state_delta": {"last_quote": quote} if model else {}}, "summary": ""}
        event["summary"] = _filler(target_bytes - len(json.dumps(event, ensure_ascii=False).encode()))
        out.append(json.dumps(event, ensure_ascii=False))
    return out


def insert_other(conn, n: int, events: int) -> None:
    state = json.dumps({"resume_text": f"Placeholder resume {n}: " + _filler(600), "target_role": "Analyst"})
    other = [json.dumps({"id": f"o{n}-{i}", "content": {"parts": [{"text": _filler(400)}]}}) for i in range(events)]
    insert_session(conn, n, state, other)


def _now(offset_days: int = 0) -> str:
    return (dt.datetime(2026, 1, 1) + dt.timedelta(days=offset_days)).isoformat(sep=" ")


def connect(db: Path, config: Config) -> sqlite3.Connection:  # configured like ours; explicit BEGIN IMMEDIATE
    conn = sqlite3.connect(db, timeout=20.0, isolation_level=None)
    conn.execute(f"PRAGMA secure_delete={config.secure_delete}")
    got = conn.execute("PRAGMA secure_delete").fetchone()[0]
    if got != {"OFF": 0, "ON": 1, "FAST": 2}[config.secure_delete]:
        raise RuntimeError(f"secure_delete={config.secure_delete} not applied (got {got})")
    mode = conn.execute(f"PRAGMA journal_mode={config.journal_mode}").fetchone()[0]
    if mode.upper() != config.journal_mode:
        raise RuntimeError(f"journal_mode={config.journal_mode} not applied (got {mode})")
    conn.execute(f"PRAGMA temp_store={config.temp_store}")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.executescript(SCHEMA)
    return conn


def insert_session(conn, n: int, state: str, events: list[str], updated_days: int = 0) -> int:
    sid = conn.execute(
        "INSERT INTO sessions (app_name, user_id, session_id, state, created_at, updated_at, revision)"
        " VALUES ('resume_agent', ?, ?, ?, ?, ?, ?)",
        (f"owner-{n:04d}", f"00000000-0000-4000-8000-{n:012d}", state, _now(), _now(updated_days), len(events)),
    ).lastrowid
    rows = [(sid, f"e{sid}-{i}", f"inv-{i // 2}", "user", 1_800_000_000.0 + i, data) for i, data in enumerate(events)]
    columns = "session_id, event_id, invocation_id, author, timestamp, event_data"
    conn.executemany(f"INSERT INTO events ({columns}) VALUES (?, ?, ?, ?, ?, ?)", rows)
    return sid


def scan_database(db: Path) -> dict[str, FileState]:
    out = {}
    for suffix in ("", "-journal", "-wal", "-shm"):
        path, name = Path(f"{db}{suffix}"), suffix or "main"
        data = path.read_bytes() if path.exists() else b""
        hits = scan_bytes(data)
        out[name] = FileState(path.exists(), len(data), hits, hit_pages(data) if suffix == "" and hits else (0, 0))
    return out


def hit_pages(data: bytes) -> tuple[int, int]:  # (pages holding any marker, of which on the freelist)
    page_size = int.from_bytes(data[16:18], "big") if len(data) >= 100 else 4096
    page_size = 65536 if page_size == 1 else page_size
    hits = (hit.start() for *_, needle in NEEDLES for hit in re.finditer(b"(?=%s)" % re.escape(needle), data))
    pages = {start // page_size + 1 for start in hits}
    free: set[int] = set()  # the freelist: trunk pages, each listing leaf pages
    trunk = int.from_bytes(data[32:36], "big") if data.startswith(b"SQLite format 3\x00") else 0
    while trunk and trunk not in free and trunk * page_size <= len(data):
        free.add(trunk)
        off = (trunk - 1) * page_size
        leaves = range(min(int.from_bytes(data[off + 4 : off + 8], "big"), page_size // 4 - 2))  # its leaf count
        free |= {int.from_bytes(data[off + 8 + 4 * k : off + 12 + 4 * k], "big") for k in leaves}
        trunk = int.from_bytes(data[off : off + 4], "big")
    return len(pages), len(pages & free)


def leaking_files(scan: dict[str, FileState]) -> list[str]:
    return [name for name, s in scan.items() if s.hits]


class Watcher:
    """Progress handler: the -journal's size and SQLite's temp files (`etilqs_*`, unlinked at open: only
    /proc/self/fd shows them) while a statement runs, each one seen read through that link and scanned."""

    def __init__(self, db: Path | None = None):
        self.journal, self.journal_max = Path(f"{db}-journal") if db else None, 0
        self.temp_files: dict[str, int] = {}  # link target -> max size seen
        self.temp_hits: frozenset = frozenset()

    def __call__(self) -> int:
        with contextlib.suppress(Exception):  # never abort the statement being measured
            self.poll()
        return 0

    def poll(self) -> None:
        if self.journal is not None and self.journal.exists():
            self.journal_max = max(self.journal_max, self.journal.stat().st_size)
        for name in os.listdir("/proc/self/fd") if Path("/proc/self/fd").is_dir() else []:
            link = f"/proc/self/fd/{name}"
            with contextlib.suppress(OSError):  # a descriptor closed meanwhile
                target = os.readlink(link)
                if "etilqs_" in target:
                    size = os.stat(link).st_size
                    if size != self.temp_files.get(target, -1):
                        self.temp_hits |= scan_bytes(Path(link).read_bytes())
                    self.temp_files[target] = max(size, self.temp_files.get(target, 0))


@dataclass
class Result:
    config: Config
    before_ok: bool  # every expected form of every marker was on disk before the delete
    pre_commit: dict[str, FileState]  # after the DELETE statement, before COMMIT
    journal_max_during: int
    after: dict[str, FileState]  # right after COMMIT (and the checkpoint, if any)
    after_close: dict[str, FileState]  # once every connection is closed
    rows_left: tuple[int, int]
    checkpoint: tuple | None = None
    checkpoint_seconds: float | None = None

    @property
    def verdict(self) -> str:
        if not self.before_ok:
            return "INVALID: markers not found before the delete"
        if self.rows_left != (0, 0):
            return f"INVALID: rows left {self.rows_left}"
        leaks = leaking_files(self.after)
        return "LEAK: " + ", ".join(leaks) if leaks else "clean"


def measure(config: Config, sizes: Sizes = Sizes(), *, checkpoint_timeout_ms: int = 1000) -> Result:
    # Insert, commit, delete the marker session (cascade), commit, scan every file.
    with tempfile.TemporaryDirectory(prefix="journal_modes_", ignore_cleanup_errors=True) as tmp:
        db = Path(tmp) / "sessions.db"
        connections = [conn := connect(db, config)]  # closed in this order: the last one to close checkpoints a WAL
        conn.execute("BEGIN IMMEDIATE")
        others = list(range(sizes.other_sessions))
        for n in others[: len(others) // 2]:
            insert_other(conn, n, sizes.other_events)
        state, events = marker_state(sizes.state_bytes), marker_events(sizes.events, sizes.event_bytes)
        target = insert_session(conn, 9999, state, events)
        for n in others[len(others) // 2 :]:
            insert_other(conn, n, sizes.other_events)
        conn.execute("COMMIT")
        before_ok = frozenset().union(*(s.hits for s in scan_database(db).values())) >= EXPECTED
        if config.open_reader:
            connections.insert(0, reader := sqlite3.connect(db, timeout=20, isolation_level=None))
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM events").fetchone()  # read transaction now open
        conn.set_progress_handler(watcher := Watcher(db), 20)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM sessions WHERE id = ?", (target,))
        conn.set_progress_handler(None, 0)
        watcher.poll()
        pre_commit = scan_database(db)
        conn.execute("COMMIT")
        rows_left, checkpoint = tuple(conn.execute(ROWS_LEFT, (target, target)).fetchone()), (None, None)
        if config.checkpoint:
            conn.execute(f"PRAGMA busy_timeout={checkpoint_timeout_ms}")
            started = time.monotonic()
            checkpoint = (tuple(conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()), time.monotonic() - started)
        after = scan_database(db)
        for connection in connections:
            connection.close()  # the reader's read transaction ends with it
        journal_max = max(watcher.journal_max, pre_commit["-journal"].size)
        return Result(config, before_ok, pre_commit, journal_max, after, scan_database(db), rows_left, *checkpoint)


def measure_temp_store(scenario: str, temp_store: str, rows: int = 300, sizes: Sizes = Sizes()) -> TempResult:
    """One large transaction (TEMP_SCENARIOS) over `rows` marker sessions, its temp files watched."""
    with tempfile.TemporaryDirectory(prefix="journal_modes_temp_", ignore_cleanup_errors=True) as tmp:
        db = Path(tmp) / "sessions.db"
        conn = connect(db, Config(CHOSEN.journal_mode, "ON", temp_store=temp_store))
        state, events = marker_state(sizes.state_bytes), marker_events(2, sizes.event_bytes)
        conn.execute("BEGIN IMMEDIATE")
        for n in range(rows):
            insert_session(conn, n, state, events, updated_days=-100)
        for n in range(rows, rows + sizes.other_sessions):
            insert_other(conn, n, 1)
        conn.execute("COMMIT")
        conn.set_progress_handler(watcher := Watcher(), 20)
        conn.execute("BEGIN IMMEDIATE")
        for sql in TEMP_SCENARIOS[scenario]:
            conn.execute(sql, {"cutoff": _now(-50)})
            watcher.poll()
        conn.set_progress_handler(None, 0)
        conn.execute("COMMIT")
        main_after = scan_database(db)["main"]
        conn.close()
        return TempResult(scenario, temp_store, rows, dict(watcher.temp_files), watcher.temp_hits, main_after)
