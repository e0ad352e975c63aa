"""The one load generator both HTTP servers are measured with (asyncio + httpx).

`run_load` starts N closed-loop clients; each repeats one session life cycle
(create -> 3 turns -> read -> delete) until the run's time is up. Only
operations that start after the warm-up and end before the deadline count.
A `Target` adapts the cycle to one server's API: `OursTarget` for this
service's REST API, `AdkTarget` for ADK's own `adk api_server`.

Also here: percentiles, peak RSS and CPU of a process tree (/proc
sampling), the machine's other load, the two-concurrent-turns check and the
"no half-saved turn" check of a stored history. Report headers and results
files come from benchmarks/_common.py.

Everything is bounded: every request has a timeout, every run a deadline
(duration + grace), every check a fixed number of trials. Loopback only.
"""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
LOOPBACK = "127.0.0.1"

# A fictional resume (no real person), the size of the test fixture.
RESUME = """\
Chen Mei-Ling 陳美玲
Email: meiling.chen@example.test | Phone: +886 900 123 456 (fictional)

Experience
- Data Analyst, Harbor Logistics 港灣物流 (2020-2024)
  Built a Python forecasting model that cut late deliveries by 15%.
  Automated the weekly SLA report with SQL and Airflow, saving 6 hours a week.
- Junior Analyst, Lantern Retail 燈籠零售 (2018-2020)
  Maintained Tableau dashboards for 40 stores and cleaned the loyalty-card data.

Projects
- Tide Table Predictor: an open-source tidal forecast library in Python, 300 GitHub stars.
- Night Market Map: a Flask web map of Taipei night-market stalls, 5,000 monthly users.

Education
- B.S. Statistics, Imaginary Ocean University 想像海洋大學 (2014-2018)

Skills
Python, SQL, Tableau, Airflow, pandas, scikit-learn

Languages
Mandarin (native), English (fluent)
"""
MESSAGES = ("Please draft my job-search plan", "Focus on remote roles", "Add a networking step each week")
TURNS_PER_CYCLE = 3
KINDS = ("create", "turn", "read", "delete")


# --------------------------------------------------------------------------- math


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between closest ranks.

    The same definition as numpy's default ("linear"): for sorted x of length
    n the value at rank (n - 1) * q / 100, interpolated. NaN for no values.
    """
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
    return {
        "n": len(ms),
        "p50": percentile(ms, 50),
        "p95": percentile(ms, 95),
        "p99": percentile(ms, 99),
        "max": max(ms) if ms else math.nan,
    }


# --------------------------------------------------------------------------- targets


@dataclass
class Handle:
    """One session as a client knows it."""

    session_id: str
    user_id: str = ""
    token: str = ""


class Target:
    name = "target"
    expected = {"create": (201,), "turn": (200,), "read": (200,), "delete": (204,)}

    def __init__(self, base_url: str):
        self.base_url = base_url

    async def create(self, client: httpx.AsyncClient) -> tuple[httpx.Response, Handle | None]:
        raise NotImplementedError

    async def turn(self, client: httpx.AsyncClient, handle: Handle, message: str) -> httpx.Response:
        raise NotImplementedError

    async def read(self, client: httpx.AsyncClient, handle: Handle) -> httpx.Response:
        raise NotImplementedError

    async def delete(self, client: httpx.AsyncClient, handle: Handle) -> httpx.Response:
        raise NotImplementedError

    async def history(self, client: httpx.AsyncClient, handle: Handle) -> list[dict]:
        """Every stored event of the session, oldest first, as ADK Event dicts."""
        raise NotImplementedError


class OursTarget(Target):
    """This service's API (README: The API)."""

    name = "ours"

    async def create(self, client, resume=RESUME):
        r = await client.post("/agent/sessions", json={"resume_text": resume})
        if r.status_code != 201:
            return r, None
        body = r.json()
        return r, Handle(session_id=body["session_id"], token=body["token"])

    @staticmethod
    def _headers(handle):
        return {"X-Session-Token": handle.token}

    async def turn(self, client, handle, message):
        return await client.post(
            f"/agent/sessions/{handle.session_id}/messages", json={"message": message}, headers=self._headers(handle)
        )

    async def read(self, client, handle):
        return await client.get(f"/agent/sessions/{handle.session_id}/messages", headers=self._headers(handle))

    async def delete(self, client, handle):
        return await client.delete(f"/agent/sessions/{handle.session_id}", headers=self._headers(handle))

    async def history(self, client, handle):
        r = await client.get(f"/agent/sessions/{handle.session_id}/export", headers=self._headers(handle))
        r.raise_for_status()
        return r.json()["events"]


class AdkTarget(Target):
    """ADK's `adk api_server` (google/adk/cli/api_server.py): sessions with state, then POST /run."""

    name = "adk api_server"
    expected = {"create": (200,), "turn": (200,), "read": (200,), "delete": (200,)}

    def __init__(self, base_url: str, app_name: str):
        super().__init__(base_url)
        self.app_name = app_name

    async def create(self, client, resume=RESUME):
        user_id = f"user-{uuid.uuid4().hex[:12]}"
        state = {"resume_text": resume, "plan_versions": [], "suspicious_flags": []}
        r = await client.post(f"/apps/{self.app_name}/users/{user_id}/sessions", json={"state": state})
        if r.status_code != 200:
            return r, None
        return r, Handle(session_id=r.json()["id"], user_id=user_id)

    async def turn(self, client, handle, message):
        body = {
            "app_name": self.app_name,
            "user_id": handle.user_id,
            "session_id": handle.session_id,
            "new_message": {"role": "user", "parts": [{"text": message}]},
        }
        return await client.post("/run", json=body)

    def _url(self, handle):
        return f"/apps/{self.app_name}/users/{handle.user_id}/sessions/{handle.session_id}"

    async def read(self, client, handle):
        return await client.get(self._url(handle))

    async def delete(self, client, handle):
        return await client.delete(self._url(handle))

    async def history(self, client, handle):
        r = await client.get(self._url(handle))
        r.raise_for_status()
        return r.json()["events"]


# --------------------------------------------------------------------------- load


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

    def window(self) -> list[Op]:
        return [op for op in self.ops if op.started >= self.t_measure and op.ended <= self.t_end]

    t_measure: float = 0.0
    t_end: float = 0.0

    def summary(self) -> dict:
        ops = self.window()
        ok = defaultdict(list)
        errors: Counter = Counter()
        for op in ops:
            if op.ok:
                ok[op.kind].append(op.ended - op.started)
            else:
                errors[f"{op.kind}: {op.error}"] += 1
        measured = self.t_end - self.t_measure
        return {
            "target": self.target,
            "clients": self.clients,
            "warmup_s": self.warmup_s,
            "measured_s": round(measured, 3),
            "turns": len(ok["turn"]),
            "turns_per_s": len(ok["turn"]) / measured if measured > 0 else math.nan,
            "requests_per_s": sum(len(v) for v in ok.values()) / measured if measured > 0 else math.nan,
            "latency_ms": {kind: summarize_ms(ok[kind]) for kind in KINDS},
            "errors": dict(errors.most_common()),
            "error_count": sum(errors.values()),
            # Errors outside the window too: the warm-up and the wind-down.
            "errors_all_phases": sum(1 for op in self.ops if not op.ok),
        }


def describe_error(response: httpx.Response | None = None, exc: BaseException | None = None) -> str:
    """A short, stable key for an error: the status and a snippet, or the exception type."""
    if exc is not None:
        text = str(exc)
        if "database is locked" in text:
            return f"{type(exc).__name__}: database is locked"
        return type(exc).__name__
    body = (response.text or "").replace("\n", " ")
    if "database is locked" in body:
        return f"HTTP {response.status_code}: database is locked"
    if "Stale" in body or "stale" in body:
        return f"HTTP {response.status_code}: stale session"
    return f"HTTP {response.status_code}: {body[:60]}"


async def _timed(result: LoadResult, kind: str, call, expected: tuple[int, ...]):
    started = time.monotonic()
    try:
        response = await call
    except (httpx.HTTPError, OSError, ValueError, KeyError) as exc:
        result.ops.append(Op(kind, started, time.monotonic(), False, describe_error(exc=exc)))
        return None
    ended = time.monotonic()
    handle = None
    if isinstance(response, tuple):
        response, handle = response
    ok = response.status_code in expected
    result.ops.append(Op(kind, started, ended, ok, "" if ok else describe_error(response)))
    return (response, handle) if handle is not None or kind == "create" else response


async def _client_loop(target: Target, result: LoadResult, stop_at: float, timeout: float,
                       stop: threading.Event | None = None) -> None:
    exp = target.expected

    def out_of_time() -> bool:
        return time.monotonic() >= stop_at or (stop is not None and stop.is_set())

    async with httpx.AsyncClient(base_url=target.base_url, timeout=timeout) as client:
        while not out_of_time():
            created = await _timed(result, "create", target.create(client), exp["create"])
            handle = created[1] if created else None
            if handle is None:
                await asyncio.sleep(0.05)  # do not spin on a failing create
                continue
            for message in MESSAGES[:TURNS_PER_CYCLE]:
                if out_of_time():
                    break
                await _timed(result, "turn", target.turn(client, handle, message), exp["turn"])
            else:
                await _timed(result, "read", target.read(client, handle), exp["read"])
                await _timed(result, "delete", target.delete(client, handle), exp["delete"])
                result.cycles_completed += 1
                continue
            # Out of time mid-cycle: still delete it (not measured), so nothing is left behind.
            try:
                await target.delete(client, handle)
            except httpx.HTTPError:
                pass


def run_load(target: Target, clients: int, warmup_s: float, duration_s: float, timeout: float = 60.0,
             stop: threading.Event | None = None, started: threading.Event | None = None) -> LoadResult:
    """N closed-loop clients for warmup_s + duration_s (or until `stop` is set, if sooner).

    Hard-stopped at warmup + duration + timeout + 30 s whatever happens.
    `started` is set once the clients run (for callers that time phases).
    """
    result = LoadResult(target=target.name, clients=clients, warmup_s=warmup_s, duration_s=duration_s)

    async def main():
        start = time.monotonic()
        result.t_measure = start + warmup_s
        result.t_end = result.t_measure + duration_s
        tasks = [asyncio.create_task(_client_loop(target, result, result.t_end, timeout, stop))
                 for _ in range(clients)]
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


# --------------------------------------------------------------------------- concurrency check


def _part_field(part: dict, snake: str, camel: str):
    # Our export dumps ADK events by field name, ADK's api_server by alias (camelCase).
    return part.get(snake) or part.get(camel)


def check_history(events: list[dict]) -> dict:
    """Counts user messages and complete agent replies in a stored history.

    A turn is complete when its user message is followed, before the next
    user message, by a final agent reply (model text with no function call
    left unanswered). Half-saved: a user message without that reply.
    """
    user_messages = final_replies = half_saved = 0
    open_turn = False
    pending_calls: set[str] = set()
    for event in events:
        content = event.get("content") or {}
        parts = content.get("parts") or []
        author = event.get("author")
        calls = [c for c in (_part_field(p, "function_call", "functionCall") for p in parts) if c]
        responses = [r for r in (_part_field(p, "function_response", "functionResponse") for p in parts) if r]
        if author == "user" and any(p.get("text") for p in parts) and not responses:
            if open_turn:
                half_saved += 1
            user_messages += 1
            open_turn, pending_calls = True, set()
            continue
        pending_calls |= {c.get("id") or c.get("name") for c in calls}
        pending_calls -= {r.get("id") or r.get("name") for r in responses}
        is_text = any(p.get("text") and not p.get("thought") for p in parts)
        if author != "user" and is_text and not calls and not pending_calls and open_turn:
            final_replies += 1
            open_turn = False
    if open_turn:
        half_saved += 1
    return {"user_messages": user_messages, "final_replies": final_replies, "half_saved": half_saved}


def concurrent_turn_check(target: Target, trials: int = 20, timeout: float = 60.0) -> dict:
    """Per trial: a new session, two turns fired at once, then its stored history is checked."""

    async def main():
        outcomes: Counter = Counter()
        totals = Counter()
        bad_trials = []
        async with httpx.AsyncClient(base_url=target.base_url, timeout=timeout) as c1, httpx.AsyncClient(
            base_url=target.base_url, timeout=timeout
        ) as c2:
            for trial in range(trials):
                r, handle = await target.create(c1)
                if handle is None:
                    outcomes[f"create failed: {describe_error(r)}"] += 1
                    continue
                results = await asyncio.gather(
                    target.turn(c1, handle, "first of two at once"),
                    target.turn(c2, handle, "second of two at once"),
                    return_exceptions=True,
                )
                codes = sorted(
                    str(x.status_code) if isinstance(x, httpx.Response) else type(x).__name__ for x in results
                )
                outcomes[" + ".join(codes)] += 1
                errors = [describe_error(x) for x in results if isinstance(x, httpx.Response) and x.status_code >= 500]
                history = check_history(await target.history(c1, handle))
                ok_turns = sum(1 for x in results if isinstance(x, httpx.Response) and x.status_code == 200)
                totals.update(history)
                totals["ok_turns"] += ok_turns
                if history["half_saved"] or history["user_messages"] != history["final_replies"]:
                    bad_trials.append({"trial": trial, "codes": codes, **history, "errors": errors})
                await target.delete(c1, handle)
        return {
            "trials": trials,
            "outcomes": dict(outcomes.most_common()),
            "user_messages": totals["user_messages"],
            "final_replies": totals["final_replies"],
            "half_saved": totals["half_saved"],
            "ok_turns": totals["ok_turns"],
            "bad_trials": bad_trials,
        }

    return asyncio.run(main())


# --------------------------------------------------------------------------- processes


def process_tree(pid: int) -> list[int]:
    """pid and all its descendants (from /proc/<pid>/task/*/children)."""
    seen, stack = [], [pid]
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    stack += [int(c) for c in f.read().split()]
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            pass
    return seen


def rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (excluding reaped children)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return 0.0


def tree_cpu_seconds(pid: int) -> float:
    return sum(cpu_seconds(p) for p in process_tree(pid))


class MachineCpu:
    """CPU use of the whole machine over an interval (from /proc/stat), in cores.

    `other_cores(ours)` is what processes other than ours (the servers and this
    load generator) used: other work on a shared machine competes for the
    same cores, and a result measured next to it is marked as such.
    """

    def __init__(self):
        self.start = self._read()
        self.self_start = sum(os.times()[:2])
        self.t0 = time.monotonic()

    @staticmethod
    def _read() -> list[int]:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:]]

    def stop(self) -> dict:
        end, wall = self._read(), time.monotonic() - self.t0
        d = [b - a for a, b in zip(self.start, end)]
        hz = os.sysconf("SC_CLK_TCK")
        busy = (sum(d) - d[3] - d[4]) / hz  # all but idle and iowait
        steal = d[7] / hz if len(d) > 7 else 0.0
        self.result = {
            "wall_s": wall,
            "busy_cores": (busy - steal) / wall,
            "steal_cores": steal / wall,
            "loadgen_cores": (sum(os.times()[:2]) - self.self_start) / wall,
        }
        return self.result

    def other_cores(self, server_cpu_seconds: float) -> float:
        r = self.result
        return max(0.0, r["busy_cores"] - r["loadgen_cores"] - server_cpu_seconds / r["wall_s"])


class RssSampler:
    """Samples the summed VmRSS of each named process tree every `interval` s; keeps the peak."""

    def __init__(self, roots: dict[str, int], interval: float = 0.5):
        self.roots, self.interval = roots, interval
        self.peak_kb = {name: 0 for name in roots}
        self.peak_processes = {name: 0 for name in roots}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self):
        for name, root in self.roots.items():
            pids = process_tree(root)
            total = sum(rss_kb(p) for p in pids)
            if total > self.peak_kb[name]:
                self.peak_kb[name], self.peak_processes[name] = total, len(pids)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=5)
        self.sample()

    def peaks_mb(self) -> dict:
        return {name: {"peak_rss_mb": round(kb / 1024, 1), "processes": self.peak_processes[name]}
                for name, kb in self.peak_kb.items()}


def wait_http(url: str, deadline_s: float = 60, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before answering {url}")
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {deadline_s} s")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


# The load comes from one address, many times faster than any person types:
# the message throttles (per session token, per client address) are lifted.
UNTHROTTLED = {"SESSION_MESSAGE_RATE": "1000000/min", "CLIENT_MESSAGE_RATE": "1000000/min"}


def clean_env(**extra: str) -> dict:
    """The environment for a server we start: no model credentials, this project importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "PYTEST", "DJANGO_"))}
    env.update({"PYTHONPATH": str(ROOT), "DJANGO_SECRET_KEY": "benchmark-only-key", **extra})
    return env


def stop_process(process: subprocess.Popen, sig: int, timeout: float = 30) -> None:
    """Sends `sig` to one process we started, then kills it by pid if it does not stop."""
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def kill_pids(pids: list[int]) -> None:
    """Last resort for descendants left behind by a parent we started: SIGKILL by pid."""
    import signal

    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


# --------------------------------------------------------------------------- formatting


def fmt(x: float, digits: int = 1) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"
