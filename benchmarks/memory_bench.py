#!/usr/bin/env python3
"""Memory of the `make run` process tree: `manage.py serve` (which becomes the supervisor),
gunicorn's master and workers, the django-q2 cluster. Proportional set size (PSS): a page
that forked processes share is counted once in all, split between them (a sum of RSS would
count it once per process). Idle, then while 8 clients talk to it.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common, loadgen  # noqa: E402

PACKAGES = ["Django", "google-adk", "google-genai", "gunicorn", "django-q2"]
PY = sys.executable
TARGET_MB = 200  # idle, the whole tree (issue: the person's side / the first ten minutes)


def pss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def process_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ").strip()[:80]
    except OSError:
        return "?"


def snapshot(root: int) -> dict:
    processes = {pid: pss_kb(pid) for pid in loadgen.process_tree(root)}
    return {
        "total_mb": sum(processes.values()) / 1024,
        "processes": [{"pid": pid, "name": process_name(pid), "pss_mb": kb / 1024} for pid, kb in processes.items()],
    }


def under_load(root: int, target, clients: int, duration: float) -> dict:
    """PSS of the tree sampled every second while `clients` closed-loop clients run."""
    samples, done = [], threading.Event()

    def sample():
        while not done.wait(1.0):
            samples.append(snapshot(root)["total_mb"])

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    result = loadgen.run_load(target, clients, 2, duration)
    done.set()
    sampler.join()
    summary = result.summary()
    return {
        "clients": clients,
        "median_mb": statistics.median(samples),
        "max_mb": max(samples),
        "turns_per_s": summary["turns_per_s"],
        "errors": summary["errors_all_phases"],
        "samples": len(samples),
    }


def render(idle: dict, loaded: dict, after: dict) -> list[str]:
    met = idle["total_mb"] < TARGET_MB
    lines = [
        "The tree `make run` starts (`manage.py serve --bind 127.0.0.1:PORT` on a fresh SQLite file, offline"
        " model), measured from /proc/<pid>/smaps_rollup.",
        "",
        f"**Idle: {idle['total_mb']:.1f} MB PSS over {len(idle['processes'])} processes; target < {TARGET_MB} MB:"
        f" {'MET' if met else 'MISSED'}.** Under {loaded['clients']} clients: median {loaded['median_mb']:.1f} MB,"
        f" max {loaded['max_mb']:.1f} MB ({loaded['samples']} samples, {loaded['turns_per_s']:.1f} turns/s,"
        f" {loaded['errors']} errors); idle again after the load: {after['total_mb']:.1f} MB.",
        "",
        "### Idle, per process",
        "",
    ]
    rows = [[p["pid"], f"`{p['name']}`", f"{p['pss_mb']:.1f}"] for p in idle["processes"]]
    return lines + _common.md_table("pid | process | PSS MB", rows)


def run(args) -> tuple[list[str], dict]:
    with tempfile.TemporaryDirectory(prefix="memory-bench-") as tmp:
        env = loadgen.ours_env(Path(tmp) / "ours.db", Path(tmp)) | {"DJANGO_VAR_DIR": str(Path(tmp) / "var")}
        migrate = [PY, "manage.py", "migrate", "--noinput", "-v0"]
        subprocess.run(migrate, cwd=_common.ROOT_DIR, env=env, check=True, timeout=120)
        bind = f"{loadgen.LOOPBACK}:{loadgen.free_port()}"
        # Up once the person's page answers (what a newcomer opens first), not the OpenAPI schema,
        # which the load generator's other benchmarks poll and whose generation a person never asks for.
        command = [PY, "manage.py", "serve", "--bind", bind]
        process = loadgen.start_server(
            command, Path(tmp) / "server.log", f"http://{bind}/", cwd=_common.ROOT_DIR, env=env
        )
        target = loadgen.OursTarget(f"http://{bind}")
        try:
            time.sleep(5 if args.quick else 15)  # the cluster's processes start after the web server answers
            idle = snapshot(process.pid)
            loaded = under_load(process.pid, target, 8, 8 if args.quick else 30)
            time.sleep(3)
            after = snapshot(process.pid)
        finally:
            loadgen.stop_server(process)
    data = {"idle": idle, "under_load": loaded, "idle_after_load": after, "target_mb": TARGET_MB}
    return render(idle, loaded, after), data


if __name__ == "__main__":
    sys.exit(_common.main("memory", "Memory of the `make run` process tree (PSS)", PACKAGES, run))
