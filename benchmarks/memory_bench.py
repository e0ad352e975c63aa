"""Memory of the `make run` process tree (`manage.py serve`, which becomes the supervisor, gunicorn's master and
workers, the django-q2 cluster) as proportional set size (loadgen.pss_kb), idle, then while 8 clients talk to it.
Figures: results/memory.md."""

import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import _common, loadgen  # noqa: E402

PACKAGES = ["Django", "google-adk", "google-genai", "gunicorn", "django-q2"]
TARGET_MB = 200  # idle, the whole tree (issue: the person's side / the first ten minutes)


def snapshot(root: int) -> dict:
    rows = []
    for pid in loadgen.process_tree(root):
        with contextlib.suppress(OSError):  # a process gone meanwhile
            name = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ").strip()[:80]
            rows.append({"pid": pid, "name": name, "pss_mb": loadgen.pss_kb(pid) / 1024})
    return {"total_mb": sum(row["pss_mb"] for row in rows), "processes": rows}


def run(args) -> tuple[list[str], dict]:
    with tempfile.TemporaryDirectory(prefix="memory-bench-") as tmp:
        env = loadgen.ours_env(Path(tmp) / "ours.db", Path(tmp)) | {"DJANGO_VAR_DIR": str(Path(tmp) / "var")}
        # Up once the person's page answers (what a newcomer opens first), not the OpenAPI schema,
        # which the load generator's other benchmarks poll and whose generation a person never asks for.
        process, target = loadgen.start_ours(env, Path(tmp) / "server.log", health="/")
        try:
            time.sleep(5 if args.quick else 15)  # the cluster's processes start after the web server answers
            idle, sampler = snapshot(process.pid), loadgen.Sampler(process.pid, every=1.0)
            load = loadgen.measured_load(target, 8, 2, 8 if args.quick else 30, [process.pid], sampler=sampler)
            time.sleep(3)
            after = snapshot(process.pid)
        finally:
            loadgen.stop_server(process)
    samples, rows = [kb / 1024 for kb in sampler.pss_kb], idle["processes"]
    loaded = {"clients": 8, "median_mb": statistics.median(samples), "max_mb": max(samples)}
    loaded |= {"turns_per_s": load["turns_per_s"], "errors": load["errors_all_phases"], "samples": len(samples)}
    lines = [
        "The tree `make run` starts (`manage.py serve --bind 127.0.0.1:PORT` on a fresh SQLite file, offline"
        " model), measured from /proc/<pid>/smaps_rollup.",
        "",
        f"**Idle: {idle['total_mb']:.1f} MB PSS over {len(idle['processes'])} processes; target < {TARGET_MB} MB:"
        f" {'MET' if idle['total_mb'] < TARGET_MB else 'MISSED'}.** Under {loaded['clients']} clients: median"
        f" {loaded['median_mb']:.1f} MB, max {loaded['max_mb']:.1f} MB ({loaded['samples']} samples,"
        f" {loaded['turns_per_s']:.1f} turns/s, {loaded['errors']} errors); idle again after the load:"
        f" {after['total_mb']:.1f} MB.",
        *_common.section("Idle, per process"),
        *_common.md_table("pid | process | PSS MB", [[p["pid"], f"`{p['name']}`", f"{p['pss_mb']:.1f}"] for p in rows]),
    ]
    return lines, {"idle": idle, "under_load": loaded, "idle_after_load": after, "target_mb": TARGET_MB}


if __name__ == "__main__":
    sys.exit(_common.main("memory", "Memory of the `make run` process tree (PSS)", PACKAGES, run))
