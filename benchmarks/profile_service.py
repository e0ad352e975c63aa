"""Where the server's CPU goes: py-spy (`record --subprocesses --format raw`) on `manage.py serve`, as `make run`
starts it, under closed-loop load (loadgen.py): the offline model, or the local Gemini double at a latency.
Only samples of a thread holding its process's GIL count (`--gil`): py-spy's idle detection let threads waiting
in epoll, a queue, a lock, `time.sleep` or SQLite's fsync through as busy (a third of the samples here), while
the GIL is held by Python running, not waiting (SQLite's C work, done without it, is not seen). Prints the samples
by whose code runs (the innermost frame outside the standard library) and the top functions.
Usage: profile_service.py offline|LATENCY_S CLIENTS SECONDS RAW_OUT [AGGREGATE_ONLY]"""

import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import _common, loadgen, service_bench  # noqa: E402

OURS = ("sessions_app", "config", "agent", "manage.py")
# py-spy names a file from its sys.path entry: google/adk/x.py is adk/x.py, opentelemetry's are trace/, context/...
OWNERS = {"rest_framework": "Django/DRF", "django": "Django/DRF", "adk/": "ADK", "genai/": "google-genai"}
OWNERS |= dict.fromkeys(("opentelemetry", "trace/", "context/", "_logs/", "_decorator.py"), "OpenTelemetry")


def owner(file: str) -> str:
    if file.startswith(OURS):
        return "ours"
    return next((name for prefix, name in OWNERS.items() if file.startswith(prefix)), file.split("/")[0])


def stdlib(file: str) -> bool:
    return file.startswith("<") or file.split("/")[0].removesuffix(".py") in sys.stdlib_module_names


# Parts of a request or a turn, each counted in every sample whose stack holds its frame (inclusive).
PARTS = {
    "a turn's request (SessionMessagesView, the model's run excluded)": "SessionMessagesView",
    "a create (SessionCreateView: the screen, sealing, the insert)": "SessionCreateView",
    "a delete (SessionDetailView: the erasure and its receipt)": "SessionDetailView",
    "ADK's Runner, the offline model or the model call included (BaseLlmFlow.run_async)": "BaseLlmFlow.run_async ",
    "our guards in ADK's callbacks (agent/guards.py)": "(agent/guards.py",
    "agent/screening.py (the screen at a create, its readings in the guards)": "(agent/screening.py",
    "ADK's span attributes (use_inference_span, trace_inference_result)": "_inference_span (|_inference_result (",
    "a new database connection (Django's connect, our receiver and file modes)": "BaseDatabaseWrapper.connect ",
    "commits and the write gate (_commit, WriteGate.acquire)": "WriteGate.acquire (|BaseDatabaseWrapper._commit (",
    "a hand-off to a thread and back (asgiref's SyncToAsync.__call__ on the loop)": "SyncToAsync.__call__ (",
}


def aggregate(raw: Path, top: int = 25) -> list[str]:
    """Each sample given to its innermost frame outside the standard library (who called into it)."""
    by_owner, by_self, parts, total = Counter(), Counter(), Counter(), 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():  # a process's command line broken over lines
            continue
        frames = [f.rsplit(" (", 1) for f in stack.split(";")[1:] if " (" in f]  # [0]: the process
        frames = [(name, where.rsplit(":", 1)[0]) for name, where in frames]
        total += int(count)
        mine = next(((n, f) for n, f in reversed(frames) if not stdlib(f)), None)
        by_owner["standard library only (event loop, threads)" if mine is None else owner(mine[1])] += int(count)
        if mine:
            by_self[f"{owner(mine[1])}: `{mine[0]}` ({mine[1]})"] += int(count)
        parts.update({p: int(count) for p, marks in PARTS.items() if any(m in stack for m in marks.split("|"))})
    share = lambda n: f"{100 * n / total:.1f}%"  # noqa: E731
    out = [f"{total:,} samples holding the GIL.", "", "| whose code (self) | share |", "|---|---|"]
    out += [f"| {k} | {share(n)} |" for k, n in by_owner.most_common(12)]
    out += ["", "| part (inclusive) | share |", "|---|---|"]
    out += [f"| {p} | {share(parts[p])} |" for p in PARTS]
    out += ["", "| function, with what it calls in the standard library (self) | share |", "|---|---|"]
    return out + [f"| {k} | {share(n)} |" for k, n in by_self.most_common(top)]


def profile(model: str, clients: int, seconds: float, raw: Path) -> None:
    env = {"AGENT_MAX_TURNS_PER_CLIENT": "0", "AGENT_MAX_TURNS_PER_IPV4_24": "0"}  # every client is 127.0.0.1
    with tempfile.TemporaryDirectory(prefix="profile-") as tmp:
        double = None
        if model != "offline":
            command = [_common.PY, "-m", "tests.support.gemini_double"]
            double = subprocess.Popen(command, cwd=_common.ROOT_DIR, stdout=subprocess.PIPE)
            url = double.stdout.readline().decode().strip()
            httpx.put(f"{url}/latency", content=model, timeout=10).raise_for_status()
            env |= {"GOOGLE_API_KEY": "key-of-the-local-double", "GOOGLE_GEMINI_BASE_URL": url}
            env |= {"AGENT_MODEL_ATTEMPTS": "1"}
        process, target = service_bench.start_ours(Path(tmp), env)
        try:
            warmup, result = 5 + float(model if double else 0), {}
            args = (target, clients, warmup, seconds + 2, [process.pid])
            load = threading.Thread(target=lambda: result.update(loadgen.measured_load(*args, timeout=120)))
            load.start()
            time.sleep(warmup)
            spy = [str(Path(_common.PY).parent / "py-spy"), "record", "--pid", str(process.pid), "--subprocesses"]
            spy += ["--gil", "--format", "raw", "-o", str(raw), "-d", str(int(seconds))]
            subprocess.run(spy, check=True)
            load.join()
        finally:
            loadgen.stop_server(process)
            if double:
                double.kill()
    print(f"under py-spy: {result['turns_per_s']:.1f} turns/s, {result['cpu_ms_per_turn']:.0f} ms CPU a turn,")
    print(f"errors {result['errors_all_phases']}, cores {result['machine']['server_cores'][0]:.2f} (server tree)")


if __name__ == "__main__":
    model, clients, seconds, raw = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), Path(sys.argv[4])
    if len(sys.argv) < 6:
        profile(model, clients, seconds, raw)
    print("\n".join(aggregate(raw)))
