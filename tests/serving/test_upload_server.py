"""Resume files on `make run`'s own server (issue 46): one gunicorn worker, as production starts it.
Every hostile file is answered 4xx within the read's bound and the same worker then serves the next
request; a file of 1.5 MB is held in memory while it arrives (nothing of it in the worker's open
files or the temporary directory), and a body over the upload limit is refused before it is read.

Seen failing with the protection off: FILE_UPLOAD_MAX_MEMORY_SIZE set back to REQUEST_MAX_BODY_BYTES
(Django's ASGI handler then spools the body to a temporary file) fails the in-memory test.
"""

import json
import time

import httpx
import pytest

from tests.serving.test_bare_server import Server, _body_on_disk, _response
from tests.serving.test_bare_server import _serve as serve_bare
from tests.support.documents import HOSTILE, text_pdf
from tests.support.sockets import read_by_server
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.sqlite_only]

MARKER = b"Quillfeather-body-on-disk-"  # what _body_on_disk looks for
WALL_SECONDS = 6
BOUND_SECONDS = WALL_SECONDS + 10 + 2  # the read's wall bound, a new worker's start, the request
RESUME = ["Lin Yu-Ting", "Backend Engineer, Tidewater Freight (2019-2024)"]


@pytest.fixture(scope="module")
def server(tmp_path_factory, monkeypatch_module):
    yield from serve_bare(tmp_path_factory.mktemp("uploads"))


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        # The server's environment is made from this process's (tests/support/servers.py): bounds for the read.
        patch.setenv("DOCUMENT_READ_WALL_SECONDS", str(WALL_SECONDS))
        patch.setenv("DOCUMENT_READ_CPU_SECONDS", "3")
        patch.setenv("DOCUMENT_READ_MEMORY_MB", "512")
        yield patch


def post_file(server: Server, name: str, data: bytes) -> httpx.Response:
    return httpx.post(
        f"{server.base}/agent/sessions", files={"file": (name, data)}, headers={"Accept-Language": "en"}, timeout=60
    )


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_file_is_a_4xx_within_the_bound_and_the_worker_serves_the_next(server, kind):
    data = HOSTILE[kind]()
    worker = server.worker
    started = time.monotonic()
    refused = post_file(server, f"{kind}.pdf", data)
    assert time.monotonic() - started < BOUND_SECONDS
    assert 400 <= refused.status_code < 500, refused.text
    assert refused.json()["code"].startswith("file_")
    assert server.worker == worker  # the server's worker was never lost
    created = post_file(server, "resume.pdf", text_pdf(RESUME))
    assert created.status_code == 201 and created.json()["document"]["text"] == "\n".join(RESUME)
    pasted = httpx.post(f"{server.base}/agent/sessions", json={"resume_text": RESUME[0]}, timeout=30)
    assert pasted.status_code == 201
    assert server.worker == worker
    assert "Traceback" not in server.log()


def test_a_large_file_is_held_in_memory_while_it_arrives(server):
    """1.5 MB (five times the JSON body limit): all but its last bytes sent, the worker's open files
    and the temporary directory are searched for it; then it is read."""
    padding = b"\n%" + MARKER * (1_500_000 // len(MARKER))
    data = text_pdf(RESUME) + padding  # a comment after the end: the PDF reads the same
    boundary = "upload-boundary-4417"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="resume.pdf"\r\n'
            "Content-Type: application/pdf\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    sock = server.connect()
    sock.sendall(
        f"POST /agent/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary={boundary}"
        f"\r\nContent-Length: {len(body)}\r\nAccept-Language: en\r\n\r\n".encode()
    )
    sock.sendall(body[:-64])
    assert wait_until(lambda: read_by_server(server.port, sock), timeout=10, interval=0.01)
    assert _body_on_disk(server) == []
    sock.sendall(body[-64:])
    status, _headers, answer = _response(sock, within=30)
    sock.close()
    assert status == 201, answer
    assert _body_on_disk(server) == []
    assert MARKER.decode() not in server.log()


def test_a_body_over_the_upload_limit_is_refused_before_it_is_read(server):
    from django.conf import settings

    sock = server.connect()
    sock.sendall(
        b"POST /agent/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=x\r\n"
        b"Accept-Language: en\r\nContent-Length: %d\r\n\r\n" % (settings.UPLOAD_MAX_BODY_BYTES + 1)
    )
    status, _headers, body = _response(sock)
    assert status == 413 and json.loads(body) == {"detail": "The request body is too large."}
