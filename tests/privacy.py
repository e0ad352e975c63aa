"""Helpers for the privacy tests: fixture resumes and raw byte scans.

A string can sit in a SQLite file in more than one form: Django's JSONField
writes `json.dumps` output, which escapes non-ASCII as \\uXXXX, while ADK's
event JSON (pydantic) and plain text columns keep UTF-8. A scan that looked
for one form only could never fail on the other, so every marker is searched
in all of them.
"""

from __future__ import annotations

import json
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
SIDECAR_SUFFIXES = ("", "-journal", "-wal", "-shm")


def fixture_resume() -> str:
    return (FIXTURES / "resume_lin.txt").read_text(encoding="utf-8")


def fixture_markers() -> list[str]:
    return json.loads((FIXTURES / "markers.json").read_text(encoding="utf-8"))


def encodings(marker: str) -> dict[str, bytes]:
    escaped = json.dumps(marker)[1:-1]  # lower-case \uXXXX, as json.dumps writes
    forms = {"utf-8": marker.encode("utf-8"), "json-escaped": escaped.encode("ascii")}
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
    return [
        (marker, name)
        for marker in markers
        for name, needle in encodings(marker).items()
        if needle in data
    ]
