"""The one load generator both HTTP servers are measured with (asyncio + httpx), and their processes.

Same clients, same cycle, same counting for ours and ADK's `adk api_server`, so their figures compare:
`run_load` runs N closed-loop clients repeating create -> 3 turns -> read -> delete and counts only
operations inside the measured window. Every request has a timeout, every run a deadline; loopback only.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from benchmarks import _common

LOOPBACK = "127.0.0.1"
MESSAGES = ("Please draft my job-search plan", "Focus on remote roles", "Add a networking step each week")
KINDS = ("create", "turn", "read", "delete")
# One client address sends every message, far faster than a person types: the throttles are lifted.
UNTHROTTLED = {
    "SESSION_MESSAGE_RATE": "1000000/min",
    "CLIENT_MESSAGE_RATE": "1000000/min",
    "SESSION_CREATE_RATE": "1000000/hour",
}


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100), linear between closest ranks (numpy's default); NaN for none."""
    if not values:
        return math.nan
    if not 0 <= q <= 100:
        raise ValueError("q must be within 0..100")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summarize_ms(latencies_s: list[float]) -> dict:
    ms = [x * 1000 for x in latencies_s]
    return {"n": len(ms), **{f"p{q}": percentile(ms, q) for q in (50, 95, 99)}, "max": max(ms) if ms else math.nan}


@dataclass
class Handle:  # one session as a client knows it
    session_id: str
    user_id: str = ""
    token: str = ""


class OursTarget:
    """This service's API (docs/API.md)."""

    name = "ours"
    expected = {"create": 201, "turn": 200, "read": 200, "delete": 204}

    def __init__(self, base_url: str):
        self.base_url = base_url

    async def create(self, client):
        r = await client.post("/agent/sessions", json={"resume_text": _common.RESUME})
        return r, Handle(r.json()["session_id"], token=r.json()["token"]) if r.status_code == 201 else None

    def _call(self, client, method, handle, suffix="", **kwargs):
        headers = {"X-Session-Token": handle.token}
        return client.request(method, f"/agent/sessions/{handle.session_id}{suffix}", headers=headers, **kwargs)

    def turn(self, client, handle, message):
        return self._call(client, "POST", handle, "/messages", json={"message": message})

    def read(self, client, handle):
        return self._call(client, "GET", handle, "/messages")

    def delete(self, client, handle):
        return self._call(client, "DELETE", handle)

    async def history(self, client, handle) -> list[dict]:
        """Every stored event, oldest first, as ADK Event dicts."""
        return (await self._call(client, "GET", handle, "/export")).raise_for_status().json()["events"]


class AdkTarget:
    """ADK's `adk api_server` (google/adk/cli/api_server.py): sessions with state, then POST /run."""

    name = "adk api_server"
    expected = {"create": 200, "turn": 200, "read": 200, "delete": 200}

    def __init__(self, base_url: str, app_name: str):
        self.base_url, self.app_name = base_url, app_name

    async def create(self, client):
        user_id = f"user-{uuid.uuid4().hex[:12]}"
        state = {"resume_text": _common.RESUME, "plan_versions": [], "suspicious_flags": []}
        r = await client.post(f"/apps/{self.app_name}/users/{user_id}/sessions", json={"state": state})
        return r, Handle(r.json()["id"], user_id=user_id) if r.status_code == 200 else None

    def turn(self, client, handle, message):
        ids = {"app_name": self.app_name, "user_id": handle.user_id, "session_id": handle.session_id}
        return client.post("/run", json={**ids, "new_message": {"role": "user", "parts": [{"text": message}]}})

    def _url(self, handle):
        return f"/apps/{self.app_name}/users/{handle.user_id}/sessions/{handle.session_id}"

    def read(self, client, handle):
        return client.get(self._url(handle))

    def delete(self, client, handle):
        return client.delete(self._url(handle))

    async def history(self, client, handle) -> list[dict]:
        return (await client.get(self._url(handle))).raise_for_status().json()["events"]


@dataclass
class Op:
    kind: str
    started: float
    ended: float
    ok: bool
    error: str = ""


@dataclass
class LoadResult:
    target: str
    clients: int
    warmup_s: float
    duration_s: float
    ops: list[Op] = field(default_factory=list)
    cycles_completed: int = 0
    t_measure: float = 0.0
    t_end: float = 0.0

    def summary(self) -> dict:
        ok, errors = defaultdict(list), Counter()
        for op in self.ops:
            if self.t_measure <= op.started and op.ended <= self.t_end:  # inside the measured window
                if op.ok:
                    ok[op.kind].append(op.ended - op.started)
                else:
                    errors[f"{op.kind}: {op.error}"] += 1
        measured = self.t_end - self.t_measure
        per_s = (lambda n: n / measured) if measured > 0 else (lambda n: math.nan)
        return {
            "target": self.target,
            "clients": self.clients,
            "warmup_s": self.warmup_s,
            "measured_s": round(measured, 3),
            "turns": len(ok["turn"]),
            "turns_per_s": per_s(len(ok["turn"])),
            "requests_per_s": per_s(sum(len(v) for v in ok.values())),
            "latency_ms": {kind: summarize_ms(ok[kind]) for kind in KINDS},
            "errors": dict(errors.most_common()),
            "error_count": sum(errors.values()),
            # Errors outside the window too: the warm-up and the wind-down.
            "errors_all_phases": sum(1 for op in self.ops if not op.ok),
        }


def describe_error(response: httpx.Response) -> str:
    """A short, stable key for a failed request: its status and the start of its body."""
    return f"HTTP {response.status_code}: " + response.text.replace("\n", " ")[:60]


async def _timed(result: LoadResult, kind: str, call, expected: int):
    started = time.monotonic()
    try:
        response = await call
    except (httpx.HTTPError, OSError, ValueError, KeyError) as exc:
        result.ops.append(Op(kind, started, time.monotonic(), False, type(exc).__name__))
        return None
    ended = time.monotonic()
    r = response[0] if isinstance(response, tuple) else response  # create answers (response, handle)
    ok = r.status_code == expected
    result.ops.append(Op(kind, started, ended, ok, "" if ok else describe_error(r)))
    return response


async def _client_loop(
    target, base_url: str, result: LoadResult, stop_at: float, timeout: float, stop: threading.Event | None
):
    def out_of_time() -> bool:
        return time.monotonic() >= stop_at or (stop is not None and stop.is_set())

    async with httpx.AsyncClient(base_url=base_url, timeout=timeout) as client:
        while not out_of_time():
            created = await _timed(result, "create", target.create(client), target.expected["create"])
            handle = created[1] if created else None
            if handle is None:
                await asyncio.sleep(0.05)  # do not spin on a failing create
                continue
            for message in MESSAGES:
                if out_of_time():
                    break
                await _timed(result, "turn", target.turn(client, handle, message), target.expected["turn"])
            else:
                await _timed(result, "read", target.read(client, handle), target.expected["read"])
                await _timed(result, "delete", target.delete(client, handle), target.expected["delete"])
                result.cycles_completed += 1
                continue
            # Out of time mid-cycle: still delete it (not measured), so nothing is left behind.
            with contextlib.suppress(httpx.HTTPError):
                await target.delete(client, handle)


def run_load(target, clients: int, warmup_s: float, duration_s: float, timeout=60.0, stop=None, started=None, urls=()):
    """N closed-loop clients for warmup_s + duration_s (or until the threading.Event `stop` is set, if
    sooner); hard-stopped at warmup + duration + timeout + 30 s. `started` is set once the clients run.
    `urls`: the base URLs of several servers of one deployment, client i talking to urls[i % len(urls)]
    (default: the target's own)."""
    result = LoadResult(target=target.name, clients=clients, warmup_s=warmup_s, duration_s=duration_s)
    urls = list(urls) or [target.base_url]

    async def main():
        result.t_measure = time.monotonic() + warmup_s
        result.t_end = result.t_measure + duration_s
        tasks = [
            asyncio.create_task(_client_loop(target, urls[i % len(urls)], result, result.t_end, timeout, stop))
            for i in range(clients)
        ]
        if started is not None:
            started.set()
        done, pending = await asyncio.wait(tasks, timeout=warmup_s + duration_s + timeout + 30)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for task in done:
            if task.exception():
                raise task.exception()
        if stop is not None and stop.is_set():
            result.t_end = min(result.t_end, time.monotonic())

    asyncio.run(main())
    return result


def check_history(events: list[dict]) -> dict:
    """Counts user messages and complete agent replies in a stored history (by field name, as our
    export dumps events, or by alias, as ADK's api_server does). A turn is complete when a final agent
    reply (model text, no function call left unanswered) follows before the next user message."""
    user_messages = final_replies = half_saved = 0
    open_turn, pending = False, set()
    for event in events:
        parts = (event.get("content") or {}).get("parts") or []
        calls = [c for p in parts if (c := p.get("function_call") or p.get("functionCall"))]
        answers = [r for p in parts if (r := p.get("function_response") or p.get("functionResponse"))]
        if event.get("author") == "user" and any(p.get("text") for p in parts) and not answers:
            half_saved += open_turn
            user_messages += 1
            open_turn, pending = True, set()
            continue
        answered = {r.get("id") or r.get("name") for r in answers}
        pending = (pending | {c.get("id") or c.get("name") for c in calls}) - answered
        text = any(p.get("text") and not p.get("thought") for p in parts)
        if event.get("author") != "user" and text and not calls and not pending and open_turn:
            final_replies += 1
            open_turn = False
    return {"user_messages": user_messages, "final_replies": final_replies, "half_saved": half_saved + open_turn}


def concurrent_turn_check(target, trials: int = 20, timeout: float = 60.0) -> dict:
    """Per trial: a new session, two turns fired at once, then its stored history is checked."""

    async def main():
        outcomes, totals = Counter(), Counter()
        async with (
            httpx.AsyncClient(base_url=target.base_url, timeout=timeout) as c1,
            httpx.AsyncClient(base_url=target.base_url, timeout=timeout) as c2,
        ):
            for _ in range(trials):
                r, handle = await target.create(c1)
                if handle is None:
                    outcomes[f"create failed: {describe_error(r)}"] += 1
                    continue
                pair = await asyncio.gather(
                    target.turn(c1, handle, "first of two at once"),
                    target.turn(c2, handle, "second of two at once"),
                    return_exceptions=True,
                )
                codes = sorted(str(x.status_code) if isinstance(x, httpx.Response) else type(x).__name__ for x in pair)
                outcomes[" + ".join(codes)] += 1
                totals.update(check_history(await target.history(c1, handle)))
                await target.delete(c1, handle)
        counts = {k: totals[k] for k in ("user_messages", "final_replies", "half_saved")}
        return {"trials": trials, "outcomes": dict(outcomes.most_common()), **counts}

    return asyncio.run(main())


def _stat(pid: int) -> list[str]:
    """Fields of /proc/<pid>/stat after the command name: [0] state, [1] ppid, [11] utime, [12] stime,
    [13] cutime, [14] cstime (of the children it has reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return ["Z"]


def process_tree(pid: int) -> list[int]:
    """pid and all its descendants (from /proc/<pid>/task/*/children)."""
    seen, stack = [], [pid]
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.append(p)
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{p}/task"):
                stack += [int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split()]
    return seen


def cpu_seconds(pid: int, reaped: bool = False) -> float:
    """utime + stime of one process; with `reaped`, plus that of the children it has waited for."""
    fields = _stat(pid)
    ticks = fields[11:15] if reaped else fields[11:13]
    return sum(map(int, ticks)) / os.sysconf("SC_CLK_TCK") if len(fields) > 14 else 0.0


def tree_cpu_seconds(pid: int, reaped: bool = False) -> float:
    """CPU time of pid and its live descendants. `reaped` also counts children gone since: a server
    that forks a process per connection (PostgreSQL) reaps them all the time."""
    return sum(cpu_seconds(p, reaped) for p in process_tree(pid))


class MachineCpu:
    """CPU use of the whole machine over an interval (/proc/stat), in cores: the rest of the
    machine competes for the same cores, and a result measured next to it is marked as such."""

    def __init__(self):
        self.start, self.self_start, self.t0 = self._read(), sum(os.times()[:2]), time.monotonic()

    @staticmethod
    def _read() -> list[int]:
        return [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]

    def stop(self, *server_cpu_seconds: float) -> dict:
        d = [b - a for a, b in zip(self.start, self._read(), strict=True)]
        wall, hz = time.monotonic() - self.t0, os.sysconf("SC_CLK_TCK")
        busy, steal = (sum(d) - d[3] - d[4]) / hz, d[7] / hz  # all but idle and iowait
        loadgen = (sum(os.times()[:2]) - self.self_start) / wall
        return {
            "wall_s": wall,
            "steal_cores": steal / wall,
            "loadgen_cores": loadgen,
            "server_cores": [s / wall for s in server_cpu_seconds],
            "other_cores": max(0.0, (busy - steal - sum(server_cpu_seconds)) / wall - loadgen),
        }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def clean_env(**extra: str) -> dict:
    """The environment for a process we start: no model credentials, this project importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "PYTEST", "DJANGO_"))}
    return {**env, "PYTHONPATH": str(_common.ROOT_DIR), "DJANGO_SECRET_KEY": "benchmark-only-key", **extra}


def ours_env(db: Path, tmp: Path) -> dict:
    """Our server's environment: its own database and cache, the message throttles lifted."""
    return clean_env(DATABASE_URL=f"sqlite:///{db}", DJANGO_CACHE_DIR=str(tmp / "cache"), **UNTHROTTLED)


def start_ours(command: list[str], bind: str, env: dict, log_path: Path) -> tuple[subprocess.Popen, OursTarget]:
    """Starts our server (`command`, listening on `bind`) and waits until its API answers."""
    process = start_server(command, log_path, f"http://{bind}/api/schema/", cwd=_common.ROOT_DIR, env=env)
    return process, OursTarget(f"http://{bind}")


def start_server(command: list[str], log_path: Path, health_url: str, **popen) -> subprocess.Popen:
    """Starts a server we own, logging to `log_path`, and waits (60 s at most) until it answers."""
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, **popen)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}: see {log_path}")
        try:
            httpx.get(health_url, timeout=2)
            return process
        except httpx.TransportError:
            time.sleep(0.2)
    stop_server(process)
    raise RuntimeError(f"{health_url} did not answer within 60 s")


def stop_server(process: subprocess.Popen, sig: int = signal.SIGINT, timeout: float = 30) -> None:
    """Sends `sig` to a process we started, then SIGKILLs, by pid, whatever of its tree is left."""
    descendants = process_tree(process.pid)[1:]
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_stat(p)[0] != "Z" for p in descendants):
        time.sleep(0.2)
    for pid in descendants:
        if _stat(pid)[0] != "Z":
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def log_counts(log_path: Path) -> dict:
    text = log_path.read_text(errors="replace")
    return {k: text.count(k) for k in ("database is locked", "disk I/O error", "Traceback")}
