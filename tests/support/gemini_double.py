"""A local double of the Gemini REST API, so the real model path (google-genai over HTTP) runs
in tests without the network. google-genai reads `GOOGLE_GEMINI_BASE_URL`: a service started
with it (and any `GOOGLE_API_KEY`) sends its model calls here, on 127.0.0.1.

It answers `POST /v1beta/models/<model>:generateContent` with the next scripted answer, or with
a short text reply when none is left, and keeps each request it was sent (in memory only).
`:streamGenerateContent?alt=sse` (ADK's SSE streaming mode) gets the same answers as Server-Sent
Events: a scripted body as one chunk, `Streamed` answers (`text_chunks`) in several, `interval`
seconds apart, as a model writing its reply sends them; an error status as its JSON body.
`hold()` keeps the next model calls waiting until released, to catch a turn mid-way; `latency`
makes every call take that many seconds, as a real model does (also set over HTTP, `PUT /latency`
with the seconds as the body, for a double in another process):

    .venv/bin/python -m tests.support.gemini_double --latency 2    # prints its URL, serves until killed
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GENERATE = re.compile(r"^/v1beta/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$")
DEFAULT_REPLY = "Here is what I would do next with your resume."
# The GOOGLE_API_KEY of a service whose model calls come here (`GeminiDouble.environment()`).
DOUBLE_KEY = "key-of-the-local-double"


def text_answer(text: str, model: str = "gemini-2.5-flash") -> dict:
    """A generateContent answer holding one text part."""
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": model,
    }


def call_answer(name: str, args: dict, model: str = "gemini-2.5-flash") -> dict:
    """A generateContent answer asking to call tool `name` with `args`."""
    part = {"functionCall": {"name": name, "args": args}}
    return {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": model,
    }


@dataclass
class Streamed:
    """An answer sent in `chunks` (generateContent bodies), `interval` seconds apart; to a call that
    does not stream, the chunks' texts as one answer."""

    chunks: list[dict]
    interval: float = 0.0

    def whole(self) -> dict:
        text = "".join(part.get("text", "") for chunk in self.chunks for part in _parts(chunk))
        return text_answer(text, self.chunks[-1].get("modelVersion", "gemini-2.5-flash"))


def _parts(body: dict) -> list[dict]:
    return body["candidates"][0]["content"]["parts"]


def text_chunks(*texts: str, interval: float = 0.0, model: str = "gemini-2.5-flash") -> Streamed:
    """A text reply sent as `texts`, one chunk each, `interval` seconds apart (the last one says STOP)."""
    chunks = [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}], "modelVersion": model}
        for text in texts
    ]
    chunks[-1] = text_answer(texts[-1], model)
    return Streamed(chunks, interval)


class Hold:
    """Model calls made while held wait until `release()`; `arrived` is set by the first one."""

    def __init__(self):
        self.arrived = threading.Event()
        self.released = threading.Event()

    def release(self) -> None:
        self.released.set()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # connections waiting to be accepted (5 by default): many turns at once


class GeminiDouble:
    def __init__(self, latency: float = 0.0, keep_requests: bool = True):
        self.latency = latency
        self.keep_requests = keep_requests  # off for a benchmark's thousands of calls
        self.calls = 0
        self.answered = 0  # model calls whose answer has been sent (or whose client had gone)
        self.requests: list[dict] = []
        # The client port of each model call's connection: one client with a connection
        # pool reuses its connection (HTTP/1.1 keep-alive), a new client opens a new one.
        self.client_ports: list[int] = []
        self.arrival_times: list[float] = []  # time.monotonic() of each model call
        self._answers: deque = deque()
        self._hold: Hold | None = None
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        # Polled every 10 ms for shutdown (the default, 0.5 s, is what stop() would wait, per test).
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.01,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def environment(self) -> dict[str, str]:
        """What points a process's google-genai here: any key (the double checks none), and this URL."""
        return {"GOOGLE_API_KEY": DOUBLE_KEY, "GOOGLE_GEMINI_BASE_URL": self.url}

    def start(self) -> GeminiDouble:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._hold:
            self._hold.release()
        self._server.shutdown()
        self._server.server_close()

    def answer(self, *answers: dict | tuple) -> None:
        """Queues answers: a body (200), or (status, body) for an error or a broken answer, or
        (status, body, headers)."""
        with self._lock:
            self._answers.extend(answers)

    @contextlib.contextmanager
    def hold(self):
        hold = self._hold = Hold()
        try:
            yield hold
        finally:
            hold.release()
            self._hold = None

    def _next(self, model: str, request: dict, client_port: int) -> tuple:
        """(status, body) or (status, body, headers) of the next call; a Streamed answer as such."""
        with self._lock:
            self.calls += 1
            if self.keep_requests:
                self.requests.append({"model": model, **request})
                self.client_ports.append(client_port)
                self.arrival_times.append(time.monotonic())
            scripted = self._answers.popleft() if self._answers else text_answer(DEFAULT_REPLY, model)
            hold = self._hold
        if hold is not None:
            hold.arrived.set()
            hold.released.wait(timeout=120)
        if self.latency:
            # The model's latency, the quantity given (a benchmark's slow model): not a wait for
            # anything. In this call's own thread: calls overlap as a real model's do.
            time.sleep(self.latency)
        return scripted if isinstance(scripted, tuple) else (200, scripted)

    def _finished(self) -> None:
        with self._lock:
            self.answered += 1

    def _handler(self):
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as Google's servers do
            # Headers and body go out in two writes: without TCP_NODELAY the body waits for the
            # client's delayed ACK (about 40 ms a call), a delay no real server adds.
            disable_nagle_algorithm = True

            def do_POST(self):
                match = GENERATE.match(self.path.split("?")[0])
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if match is None:
                    return self._send(404, {"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}})
                answer = double._next(match["model"], json.loads(body), self.client_address[1])
                streams = match["method"] == "streamGenerateContent"
                if answer[0] == 200 and streams:
                    return self._stream(answer[1] if isinstance(answer[1], Streamed) else Streamed([answer[1]]))
                if isinstance(answer[1], Streamed):
                    answer = (answer[0], answer[1].whole(), *answer[2:])
                return self._send(*answer)

            def do_PUT(self):
                if self.path != "/latency":
                    return self._send(404, {"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}})
                double.latency = float(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                return self._send(200, {"latency": double.latency})

            def _send(self, status: int, body: dict | str, headers: dict | None = None):
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)
                with double._lock:
                    double.answered += 1

            def _stream(self, answer: Streamed):
                """Server-Sent Events, one `data:` line per chunk, in HTTP/1.1 chunked encoding (the
                connection is kept, as for every other answer)."""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    for index, chunk in enumerate(answer.chunks):
                        if index and answer.interval:
                            time.sleep(answer.interval)
                        data = f"data: {json.dumps(chunk)}\r\n\r\n".encode()
                        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                double._finished()

            def log_message(self, format, *args):  # requests hold resumes: never printed
                pass

        return Handler


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="A local double of the Gemini REST API")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds each model call takes")
    double = GeminiDouble(parser.parse_args().latency, keep_requests=False).start()
    print(double.url, flush=True)
    threading.Event().wait()
