"""A resume sent as a file (issue 46) leaves neither its text nor its bytes anywhere but the
session's sealed rows: after uploading a PDF and a DOCX whose text holds markers (visible and
hidden lines), a turn on each and the export, a raw scan of the database's files (both backends:
the `stored_files` fixture), every log line at DEBUG, the cache and the files written to the
temporary directory meanwhile finds no marker (UTF-8, JSON-escaped, hex) and no piece of either
file. The session's delete then leaves them nowhere either.

Seen failing with the protection off: the view made to log the file's bytes at DEBUG
(`logger.debug("%r", data)`) fails the log scan on the file's pieces.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.erasure.test_erasure_e2e import _cache_text
from tests.support.documents import Text, content, docx, lines_at, pdf
from tests.support.privacy import find_in_text, find_markers
from tests.support.session_client import answer_to

pytestmark = pytest.mark.django_db(transaction=True)

VISIBLE_MARKER = "Quillmarsh-Upload-4417"
HIDDEN_MARKER = "Brackenfold-Hidden-9052"
DOCX_MARKER = "Saltmere-Docx-6630"
PIECE = 24  # bytes of a file searched for, from several places in it


def files_with_markers() -> dict[str, bytes]:
    resume = ["Ada Brightwater", "Experience", f"Logistics Analyst, Harbor Freight {VISIBLE_MARKER}"]
    return {
        "resume.pdf": pdf([content([*lines_at(resume), Text(HIDDEN_MARKER, y=300, rgb=(1, 1, 1))])], compress=True),
        "resume.docx": docx([("Ada Brightwater", {"style": "Heading 1"}), (f"Analyst {DOCX_MARKER}", {})]),
    }


def pieces(data: bytes) -> list[bytes]:
    """Pieces of a file from its middle and its end (its start is every PDF's or zip's)."""
    return [data[at : at + PIECE] for at in (len(data) // 3, len(data) // 2, len(data) - 2 * PIECE)]


def files_found_in(files: dict[str, bytes], paths: list[Path]) -> list[str]:
    """The names of `files` a piece of which is in the raw bytes of `paths`."""
    stored = [path.read_bytes() for path in paths]
    return [name for name, data in files.items() if any(p in raw for p in pieces(data) for raw in stored)]


def piece_forms(data: bytes) -> list[str]:
    """A file's pieces as a log or a text store would hold them: hex, and Python's repr of bytes."""
    return [form for piece in pieces(data) for form in (piece.hex(), repr(piece)[2:-1])]


def written_since(started: float) -> list[Path]:
    root = Path(tempfile.gettempdir())
    found = []
    for path in root.glob("*"):
        try:
            if path.is_file() and path.stat().st_mtime >= started:
                found.append(path)
        except OSError:
            continue
    return found


def test_an_uploaded_file_leaves_no_text_and_no_bytes_outside_the_sealed_rows(api, stored_files, captured_logs):
    protected_logs, _raw = captured_logs
    started = time.time() - 1
    files = files_with_markers()
    markers = [VISIBLE_MARKER, HIDDEN_MARKER, DOCX_MARKER]
    sessions = []
    for name, data in files.items():
        created = api.post("/agent/sessions", {"file": SimpleUploadedFile(name, data)}, format="multipart")
        assert created.status_code == 201, created.content
        body = created.json()
        sessions.append((body["session_id"], body["token"]))
        answer_to(api, body["session_id"], body["token"])
        export = api.get(f"/agent/sessions/{body['session_id']}/export", HTTP_X_SESSION_TOKEN=body["token"])
        assert export.status_code == 200
    # The control: the text did reach the session (it is in its export, decrypted).
    assert (
        VISIBLE_MARKER
        in api.get(f"/agent/sessions/{sessions[0][0]}/export", HTTP_X_SESSION_TOKEN=sessions[0][1]).content.decode()
    )

    def leaks() -> list:
        stored = stored_files()
        found = [("database", hit) for hit in find_markers(stored, markers)]
        found += [("database", name) for name in files_found_in(files, stored)]
        for place, text in (("log", protected_logs.getvalue()), ("cache", _cache_text())):
            found += [(place, hit) for hit in find_in_text(text, markers)]
            found += [(place, name) for name, data in files.items() for form in piece_forms(data) if form in text]
        temporary = written_since(started)
        found += [("temporary file", hit) for hit in find_markers(temporary, markers)]
        found += [("temporary file", name) for name in files_found_in(files, temporary)]
        return found

    assert leaks() == []
    for session_id, token in sessions:
        assert api.delete(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).status_code == 204
    assert leaks() == []
