"""Helpers for the privacy tests: fixture resumes and raw byte scans.

A string can sit in a file in more than one form: `json.dumps` escapes
non-ASCII as \\uXXXX, while ADK's event JSON (pydantic) and plain text keep
UTF-8, and PostgreSQL's log writes a bytea value in hex. A scan that looked
for one form only could never fail on the other, so every marker is searched
in all of them.

Content is stored sealed (encryption at rest), so the markers are never in
the database files in clear. What a deleted session must not leave behind is
then its ciphertext: `sealed_chunks` records a piece of every sealed value
while it is stored, and `find_chunks` looks for those pieces in raw bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

FIXTURES = Path(__file__).parent.parent / "fixtures"
SIDECAR_SUFFIXES = ("", "-journal", "-wal", "-shm")
# LOG_FORMAT's values: a test of what a log holds runs in each (tests/conftest.py's captured_logs).
LOG_FORMATS = ("text", "json")


def fixture_resume() -> str:
    return (FIXTURES / "resume_lin.txt").read_text(encoding="utf-8")


def fixture_markers() -> list[str]:
    return json.loads((FIXTURES / "markers.json").read_text(encoding="utf-8"))


def encodings(marker: str) -> dict[str, bytes]:
    escaped = json.dumps(marker)[1:-1]  # lower-case \uXXXX, as json.dumps writes
    # Hex: how PostgreSQL writes a bytea value into a statement it logs.
    forms = {
        "utf-8": marker.encode("utf-8"),
        "json-escaped": escaped.encode("ascii"),
        "hex-of-utf-8": marker.encode("utf-8").hex().encode("ascii"),
    }
    if escaped.lower() != escaped.upper():
        forms["json-escaped-upper-hex"] = _upper_hex_escapes(escaped).encode("ascii")
    return forms


def _upper_hex_escapes(escaped: str) -> str:
    parts = escaped.split("\\u")
    return parts[0] + "".join("\\u" + part[:4].upper() + part[4:] for part in parts[1:])


def database_files(db_path: str | Path) -> list[Path]:
    """The database file and whichever of its sidecar files exist now."""
    return [Path(f"{db_path}{suffix}") for suffix in SIDECAR_SUFFIXES if Path(f"{db_path}{suffix}").exists()]


def find_markers(paths: list[Path], markers: list[str]) -> list[tuple[str, str, str]]:
    """Every (file name, marker, encoding) found in the raw bytes of `paths`."""
    hits = []
    for path in paths:
        data = path.read_bytes()
        for marker in markers:
            for name, needle in encodings(marker).items():
                if needle in data:
                    hits.append((path.name, marker, name))
    return hits


def find_in_text(text: str, markers: list[str]) -> list[tuple[str, str]]:
    """Markers found in captured text (logs, HTML) in any encoding."""
    data = text.encode("utf-8", "surrogateescape")
    return [(marker, name) for marker in markers for name, needle in encodings(marker).items() if needle in data]


# A sealed value starts with its version byte and 12 random nonce bytes, so its
# first 32 bytes are unique to it, and they sit in the row's own page (SQLite
# moves only a long record's tail to overflow pages).
SEALED_CHUNK_BYTES = 32


def sealed_chunks() -> list[bytes]:
    """The first bytes of every sealed value stored now: each session's state, each event, each user state."""
    from sessions_app.models import AgentSession, SessionEvent, UserState

    values = [
        *AgentSession.objects.values_list("state", flat=True),
        *SessionEvent.objects.values_list("event_data", flat=True),
        *UserState.objects.values_list("state", flat=True),
    ]
    return [bytes(value)[:SEALED_CHUNK_BYTES] for value in values]


def find_chunks(paths: list[Path], chunks: list[bytes]) -> list[tuple[str, int]]:
    """Every (file name, chunk index) found in the raw bytes of `paths`."""
    hits = []
    for path in paths:
        data = path.read_bytes()
        hits += [(path.name, index) for index, chunk in enumerate(chunks) if chunk in data]
    return hits
