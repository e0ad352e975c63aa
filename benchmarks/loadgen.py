"""The one load generator (asyncio + httpx) both HTTP servers are measured with, and their processes: N closed-loop
clients repeat create -> 3 turns -> read -> delete, counting only operations inside the measured window; loopback only.
"""

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
from collections import Counter, defaultdict, namedtuple
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from benchmarks import _common
from benchmarks._common import percentile, pss_kb, summarize_ms  # noqa: F401 (also imported from here)

LOOPBACK = "127.0.0.1"
MESSAGES = ("Please draft my job-search plan", "Focus on remote roles", "Add a networking step each week")
KINDS, MIGRATE = ("create", "turn", "read", "delete"), ("manage.py", "migrate", "--noinput", "-v0")
COLLECT = ("manage.py", "collectstatic", "--noinput", "-v0")
Handle = namedtuple("Handle", "session_id user_id token", defaults=("", ""))  # one session as a client knows it
Op = namedtuple("Op", "kind started ended ok error", defaults=("",))  # one request: its times, whether it answered


class OursTarget:
    """This service's API (docs/API.md)."""

    name, expected = "ours", {"create": 201, "turn": 200, "read": 200, "delete": 204}
    ROUTES = {"turn": ("POST", "/messages"), "read": ("GET", "/messages"), "delete": ("DELETE", "")}
    ROUTES["history"] = ("GET", "/export")

    def __init__(self, base_url: str):
        self.base_url = base_url

    async def create(self, client):
        r = await client.post("/agent/sessions", json={"resume_text": _common.RESUME})
        return r, Handle(r.json()["session_id"], token=r.json()["token"]) if r.status_code == 201 else None

    def call(self, client, kind: str, handle: Handle, message: str = ""):
        """A request of `kind` (turn, read, delete, history: every stored event as ADK Event dicts)."""
        (method, suffix), body = self.ROUTES[kind], {"json": {"message": message}} if kind == "turn" else {}
        headers = {"X-Session-Token": handle.token}
        return client.request(method, f"/agent/sessions/{handle.session_id}{suffix}", headers=headers, **body)


class AdkTarget:
    """ADK's `adk api_server` (google/adk/cli/api_server.py): sessions with state, then POST /run."""

    name, expected = "adk api_server", {"create": 200, "turn": 200, "read": 200, "delete": 200}

    def __init__(self, base_url: str, app_name: str):
        self.base_url, self.app_name = base_url, app_name

    async def create(self, client):
        user_id = f"user-{uuid.uuid4().hex[:12]}"
        state = {"resume_text": _common.RESUME, "plan_versions": [], "suspicious_flags": []}
        r = await client.post(f"/apps/{self.app_name}/users/{user_id}/sessions", json={"state": state})
        return r, Handle(r.json()["id"], user_id=user_id) if r.status_code == 200 else None

    def call(self, client, kind: str, handle: Handle, message: str = ""):
        if kind == "turn":
            ids = {"app_name": self.app_name, "user_id": handle.user_id, "session_id": handle.session_id}
            return client.post("/run", json={**ids, "new_message": {"role": "user", "parts": [{"text": message}]}})
        url = f"/apps/{self.app_name}/users/{handle.user_id}/sessions/{handle.session_id}"
        return client.delete(url) if kind == "delete" else client.get(url)


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
        inside = [op for op in self.ops if self.t_measure <= op.started and op.ended <= self.t_end]  # the window
        ok, errors = defaultdict(list), Counter(f"{op.kind}: {op.error}" for op in inside if not op.ok)
        for op in (op for op in inside if op.ok):
            ok[op.kind].append(op.ended - op.started)
        measured = self.t_end - self.t_measure
        per_s = (lambda n: n / measured) if measured > 0 else (lambda n: math.nan)
        run = {"target": self.target, "clients": self.clients, "warmup_s": self.warmup_s}
        run |= {"measured_s": round(measured, 3), "turns": len(ok["turn"]), "turns_per_s": per_s(len(ok["turn"]))}
        run |= {"requests_per_s": per_s(sum(len(v) for v in ok.values()))}
        run |= {"latency_ms": {kind: summarize_ms(ok[kind]) for kind in KINDS}, "errors": dict(errors.most_common())}
        run |= {"error_count": sum(errors.values()), "errors_all_phases": sum(not op.ok for op in self.ops)}
        return run  # errors_all_phases: the warm-up and the wind-down too


def describe_error(response: httpx.Response) -> str:  # a short, stable key: the status and the body's start
    return f"HTTP {response.status_code}: " + response.text.replace("\n", " ")[:60]


async def _client_loop(target, result: LoadResult, timeout: float, stop: threading.Event | None):
    async def timed(kind: str, call):
        started = time.monotonic()
        try:
            response = await call
        except (httpx.HTTPError, OSError, ValueError, KeyError) as exc:
            return result.ops.append(Op(kind, started, time.monotonic(), False, type(exc).__name__))
        r = response[0] if isinstance(response, tuple) else response  # create answers (response, handle)
        ok = r.status_code == target.expected[kind]
        result.ops.append(Op(kind, started, time.monotonic(), ok, "" if ok else describe_error(r)))
        return response

    def out_of_time() -> bool:
        return time.monotonic() >= result.t_end or (stop is not None and stop.is_set())

    async with httpx.AsyncClient(base_url=target.base_url, timeout=timeout) as client:
        while not out_of_time():
            created = await timed("create", target.create(client))
            if not created or created[1] is None:
                await asyncio.sleep(0.05)  # do not spin on a failing create
                continue
            for message in MESSAGES:
                if out_of_time():  # out of time mid-cycle: still delete it (not measured), so nothing is left behind
                    with contextlib.suppress(httpx.HTTPError):
                        await target.call(client, "delete", created[1])
                    break
                await timed("turn", target.call(client, "turn", created[1], message))
            else:
                await timed("read", target.call(client, "read", created[1]))
                await timed("delete", target.call(client, "delete", created[1]))
                result.cycles_completed += 1


def run_load(target, clients: int, warmup_s: float, duration_s: float, timeout=60.0, stop=None, started=None):
    """N closed-loop clients for warmup_s + duration_s (or until `stop` is set), hard-stopped `timeout` + 30 s later."""
    result = LoadResult(target=target.name, clients=clients, warmup_s=warmup_s, duration_s=duration_s)

    async def main():
        result.t_measure = time.monotonic() + warmup_s
        result.t_end = result.t_measure + duration_s
        tasks = [asyncio.create_task(_client_loop(target, result, timeout, stop)) for _ in range(clients)]
        if started is not None:
            started.set()
        done, pending = await asyncio.wait(tasks, timeout=warmup_s + duration_s + timeout + 30)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        if failed := [task.exception() for task in done if task.exception()]:
            raise failed[0]
        if stop is not None and stop.is_set():
            result.t_end = min(result.t_end, time.monotonic())

    asyncio.run(main())
    return result


def measured_load(target, clients: int, warmup: float, duration: float, pids: list[int], sampler=None, **kwargs):
    """run_load's summary, the CPU of the trees `pids` (per successful turn) and the machine's cores over the run."""
    before, machine = sum(map(tree_cpu_seconds, pids)), MachineCpu()
    if sampler:
        sampler.start()
    result = run_load(target, clients, warmup, duration, **kwargs)
    if sampler:
        sampler.stop.set()
        sampler.join()
    servers = sum(map(tree_cpu_seconds, pids)) - before
    turns = sum(1 for op in result.ops if op.kind == "turn" and op.ok)
    m, per_turn = machine.stop(servers), 1000 * servers / turns if turns else math.nan
    summary = result.summary() | {"cpu_seconds": servers, "cycles_completed": result.cycles_completed}
    return summary | {"cpu_ms_per_turn": per_turn, "machine": m}


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
            pairs = ((c1, "first"), (c2, "second"))
            for _ in range(trials):
                r, handle = await target.create(c1)
                if handle is None:
                    outcomes[f"create failed: {describe_error(r)}"] += 1
                    continue
                turns = (target.call(c, "turn", handle, f"{n} of two at once") for c, n in pairs)
                pair = await asyncio.gather(*turns, return_exceptions=True)
                codes = sorted(str(x.status_code) if isinstance(x, httpx.Response) else type(x).__name__ for x in pair)
                outcomes[" + ".join(codes)] += 1
                history = await target.call(c1, "history", handle)
                totals.update(check_history(history.raise_for_status().json()["events"]))
                await target.call(c1, "delete", handle)
        counts = {k: totals[k] for k in ("user_messages", "final_replies", "half_saved")}
        return {"trials": trials, "outcomes": dict(outcomes.most_common()), **counts}

    return asyncio.run(main())


def _stat(pid: int) -> list[str]:
    """Fields of /proc/<pid>/stat after the command name: [0] state, [11] utime, [12] stime."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return ["Z"]


def process_tree(pid: int) -> list[int]:  # pid and all its descendants (/proc/<pid>/task/*/children)
    seen, stack = [], [pid]
    while stack:
        if (p := stack.pop()) not in seen:
            seen.append(p)
            with contextlib.suppress(OSError):
                for task in os.listdir(f"/proc/{p}/task"):
                    stack += [int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split()]
    return seen


def cpu_seconds(pid: int) -> float:  # utime + stime of one process
    fields = _stat(pid)
    return sum(map(int, fields[11:13])) / os.sysconf("SC_CLK_TCK") if len(fields) > 14 else 0.0


def tree_cpu_seconds(pid: int) -> float:  # of pid and its live descendants
    return sum(map(cpu_seconds, process_tree(pid)))


def tree_pss_kb(pid: int) -> int:
    return sum(pss_kb(p) for p in process_tree(pid))


class MachineCpu:
    """The whole machine's CPU over an interval (/proc/stat), in cores: the rest of it competes for the same cores."""

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
        other = max(0.0, (busy - steal - sum(server_cpu_seconds)) / wall - loadgen)
        cores = {"wall_s": wall, "steal_cores": steal / wall, "loadgen_cores": loadgen}
        return cores | {"server_cores": [s / wall for s in server_cpu_seconds], "other_cores": other}


# The page's GETs come from a process of their own, as a person's browser does: from a thread of the
# load generator, each waited for its interpreter behind 128 clients' coroutines (the peer's trivial
# page measured 145 ms at p99 so). One GET each line read; its seconds written back.
PAGE_PROBE = """import sys, time, httpx
with httpx.Client(timeout=10) as client:
    while sys.stdin.readline():
        started = time.monotonic()
        try:
            client.get(sys.argv[1]).raise_for_status()
            print(time.monotonic() - started, flush=True)
        except httpx.HTTPError:
            print(10.0, flush=True)
"""


class Sampler(threading.Thread):
    """While a load runs: the tree's PSS every `every` s; with `page_url`, a GET every 0.1 s (10 s when unanswered)."""

    def __init__(self, pid: int, every: float = 0.5, page_url: str | None = None):
        super().__init__(daemon=True)
        self.pid, self.every, self.page_url, self.stop = pid, every, page_url, threading.Event()
        self.pss_kb, self.page_s = [], []

    def run(self):
        next_pss, probe = time.monotonic() + self.every, None
        if self.page_url:
            command = [_common.PY, "-c", PAGE_PROBE, self.page_url]
            probe = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            while not self.stop.wait(0.1 if self.page_url else self.every):
                if probe:
                    probe.stdin.write("\n")
                    probe.stdin.flush()
                    self.page_s.append(float(probe.stdout.readline()))
                if time.monotonic() >= next_pss:
                    self.pss_kb.append(tree_pss_kb(self.pid))
                    next_pss += self.every
        finally:
            if probe:
                probe.stdin.close()
                probe.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def ours_env(db: Path, tmp: Path) -> dict:
    """Our server's environment: its own database and cache, the message throttles lifted."""
    return _common.clean_env(DATABASE_URL=f"sqlite:///{db}", DJANGO_CACHE_DIR=str(tmp / "cache"), **_common.UNTHROTTLED)


def gunicorn_line() -> str:  # gunicorn's arguments as `manage.py serve` starts it
    from sessions_app.infra.supervisor import gunicorn_command

    return " ".join(gunicorn_command("python", "127.0.0.1:PORT")[1:])


def start_ours(env: dict, log_path: Path, gunicorn: bool = False, health: str = "/api/schema/", migrate=True):
    """`manage.py serve` (or gunicorn as it starts it), migrated unless told not to, once `health` answers."""
    from sessions_app.infra.supervisor import gunicorn_command

    if migrate:
        subprocess.run([_common.PY, *MIGRATE], cwd=_common.ROOT_DIR, env=env, check=True, timeout=120)
        subprocess.run([_common.PY, *COLLECT], cwd=_common.ROOT_DIR, env=env, check=True, timeout=120)  # as make run
    bind = f"{LOOPBACK}:{free_port()}"
    command = gunicorn_command(_common.PY, bind) if gunicorn else [_common.PY, "manage.py", "serve", "--bind", bind]
    process = start_server(command, log_path, f"http://{bind}{health}", env=env)
    return process, OursTarget(f"http://{bind}")


def spawn(command: list[str], log_path: Path, cwd=_common.ROOT_DIR, **popen) -> subprocess.Popen:  # output to log_path
    with open(log_path, "wb") as log:
        return subprocess.Popen(command, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, **popen)


def start_server(command: list[str], log_path: Path, health_url: str, **popen) -> subprocess.Popen:
    """Starts a server we own, logging to `log_path`, and waits (60 s at most) until it answers."""
    process, deadline = spawn(command, log_path, **popen), time.monotonic() + 60
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
    for pid in (p for p in descendants if _stat(p)[0] != "Z"):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def log_counts(log_path: Path) -> dict:
    text = log_path.read_text(errors="replace")
    return {k: text.count(k) for k in ("database is locked", "disk I/O error", "Traceback")}
