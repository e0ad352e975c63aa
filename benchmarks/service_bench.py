"""Service vs ADK api_server: does our service (`manage.py serve`, as `make run` starts it) carry more turns,
faster, than `adk api_server` serving the same agent (offline, then with a slow model), and never half-save a
turn when two arrive at once? Same load generator (loadgen.py), fresh SQLite files. Figures: results/service.md."""

import functools
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import _common, loadgen  # noqa: E402
from benchmarks._common import fmt, md_table, slashed, tally, verdict  # noqa: E402

PACKAGES = "Django djangorestframework django-q2 google-adk google-genai gunicorn uvicorn fastapi aiosqlite httpx"
PY, APP_NAME, PEER = _common.PY, "resume_agent", "adk api_server"
# Our agent, offline model, as a module for `adk api_server`.
PEER_AGENT = f"""import sys; sys.path.insert(0, {str(_common.ROOT_DIR)!r})
from agent.agent import build_agent; from agent.offline import OfflineResumeModel
root_agent = build_agent(OfflineResumeModel())
"""
SLOW_LATENCIES, SLOW_CLIENTS = (0, 0.5, 2, 10), (8, 32, 128)


def start_ours(tmp: Path, model_env: dict):
    return loadgen.start_ours(loadgen.ours_env(tmp / "ours.db", tmp) | model_env, tmp / "server.log")


def start_peer(tmp: Path, model_env: dict):
    """`adk api_server` on our agent (with a slow model: the model the environment names, as ours)."""
    (agents := tmp / "agents" / APP_NAME).mkdir(parents=True)
    (agents / "__init__.py").write_text("from . import agent\n")
    agent = PEER_AGENT.replace("build_agent(OfflineResumeModel())", "build_agent()") if model_env else PEER_AGENT
    (agents / "agent.py").write_text(agent)
    port, peer_db = loadgen.free_port(), f"sqlite:///{tmp / 'peer.db'}"
    command = [str(Path(PY).parent / "adk"), "api_server", "--host", loadgen.LOOPBACK, "--port", str(port)]
    command += ["--no-reload", "--session_service_uri", peer_db, str(tmp / "agents")]
    base, env = f"http://{loadgen.LOOPBACK}:{port}", _common.clean_env(**model_env)
    process = loadgen.start_server(command, tmp / "server.log", f"{base}/list-apps", cwd=tmp, env=env)
    return process, loadgen.AdkTarget(base, APP_NAME)


def each_server(tmp: Path, name: str, bench, model_env: dict | None = None) -> dict:
    """`bench(process, target)` on ours, then on the peer, each started in a folder of its own."""
    results = {}
    for label, start in (("ours", start_ours), (PEER, start_peer)):
        (folder := Path(tmp) / f"{name}{label.replace(' ', '-')}").mkdir()
        print(f"starting {label}{' on the Gemini double' * bool(model_env)} ...", flush=True)
        process, target = start(folder, model_env or {})
        try:
            results[label] = bench(process, target)
        finally:
            loadgen.stop_server(process)
    return results


def bench_server(process, target, params: dict) -> dict:
    runs = []
    for clients in params["clients"]:
        run = loadgen.measured_load(target, clients, params["warmup"], params["duration"], [process.pid])
        m = run.pop("machine")
        cores = (m["server_cores"][0], m["loadgen_cores"], m["other_cores"], m["steal_cores"])
        runs.append(run | {"cores": [round(c, 2) for c in cores]})
        print(f"  {target.name} {clients} clients: {run['turns_per_s']:.1f} turns/s, errors {run['errors_all_phases']}")
    concurrency = loadgen.concurrent_turn_check(target, trials=params["trials"])
    print(f"  {target.name} two turns at once: {concurrency['outcomes']}, half-saved {concurrency['half_saved']}")
    return {"runs": runs, "concurrency": concurrency}


def render(params: dict, results: dict) -> list[str]:
    lines = [
        f"Closed-loop clients, each repeating create -> {len(loadgen.MESSAGES)} turns -> read -> delete;"
        f" {params['warmup']} s warm-up, then {params['duration']} s measured per run (only operations that"
        " start and end inside the measured window count; latencies are of successful requests).",
        f"Ours: `manage.py serve` (`{params['ours_server']}`, plus qcluster); peer: `adk api_server --no-reload"
        " --session_service_uri sqlite:///<tmp>/peer.db` (one uvicorn process, ADK's SqliteSessionService)."
        " Both on fresh temp SQLite files, 127.0.0.1 only, load generator on the same machine.",
        "",
    ]
    runs = [(name, run) for name, res in results.items() for run in res["runs"]]
    rows = [
        [name, run["clients"], fmt(run["turns_per_s"]), fmt(run["requests_per_s"])]
        + [slashed(run["latency_ms"][k]) for k in loadgen.KINDS]
        + [run["errors_all_phases"], fmt(run["cpu_ms_per_turn"], 0), " / ".join(map(str, run["cores"][:3]))]
        for name, run in runs
    ]
    latencies = " | ".join(f"{k} p50/p95/p99 ms" for k in loadgen.KINDS)
    header = f"server | clients | turns/s | req/s | {latencies} | errors | server CPU ms/turn"
    lines += md_table(header + " | cores: server / load gen / other", rows)
    lines += [
        "",
        "Errors: every failed request of the run (warm-up and wind-down included). Server CPU ms/turn:"
        " the CPU time of the server's whole process tree (ours: gunicorn and the scheduler)"
        " over the run / turns (create, read and delete included). Cores: average over the run; 'other' is"
        " everything else on the machine.",
        *_common.section("Errors"),
    ]
    for name, res in results.items():
        for run in res["runs"]:
            detail = tally(run["errors"], "{} x{}") or "none in the window"
            lines.append(f"- {name}, {run['clients']} clients: {detail} (all phases: {run['errors_all_phases']})")
        lines.append(f"- {name} server log: " + tally(res["log"]))
    lines += _common.section(f"Two turns at once on one session ({params['trials']} trials each)")
    header = "server | outcomes (status codes of the pair) | user messages stored | complete replies stored"
    counts = [(n, r["concurrency"], ("user_messages", "final_replies", "half_saved")) for n, r in results.items()]
    rows = [[n, tally(c["outcomes"], "{}: {}"), *(c[k] for k in keys)] for n, c, keys in counts]
    return lines + md_table(header + " | half-saved turns", rows)


def judge(results: dict) -> list[str]:
    run = {(name, r["clients"]): r for name, res in results.items() for r in res["runs"]}
    o8, p8, errors = run[("ours", 8)], run[(PEER, 8)], run[("ours", 32)]["errors_all_phases"]
    ratio = o8["turns_per_s"] / p8["turns_per_s"] if p8["turns_per_s"] else float("inf")
    op99, pp99 = o8["latency_ms"]["turn"]["p99"], p8["latency_ms"]["turn"]["p99"]
    c = results["ours"]["concurrency"]
    good = c["outcomes"].get("200 + 409", 0)
    ok = good == c["trials"] and c["half_saved"] == 0 and c["user_messages"] == c["final_replies"]
    return [
        verdict(ratio >= 2, "turns/s at 8 clients >= 2x the peer's:")
        + f" {o8['turns_per_s']:.1f} vs {p8['turns_per_s']:.1f} = {ratio:.2f}x",
        verdict(op99 <= pp99 / 2, f"turn p99 at 8 clients <= half the peer's: {op99:.0f} ms vs {pp99:.0f} ms")
        + f" = {op99 / pp99:.2f}x",
        verdict(errors == 0, f"zero errors at 32 clients: {errors} errors"),
        verdict(ok, "two turns at once give one 200 and one 409 and no half-saved turn:")
        + f" {good}/{c['trials']} trials 200 + 409, {c['half_saved']} half-saved",
    ]


def slow_runs(process, target, double_url: str, params: dict) -> list[dict]:
    runs, page_url = [], target.base_url + ("/" if target.name == "ours" else "/list-apps")
    for latency in params["latencies"]:
        httpx.put(f"{double_url}/latency", content=str(latency), timeout=10).raise_for_status()
        duration = max(params["duration"], 6 * latency)
        for clients in params["clients"]:
            idle_pss, sampler = loadgen.tree_pss_kb(process.pid), loadgen.Sampler(process.pid, page_url=page_url)
            load = (target, clients, params["warmup"] + latency, duration, [process.pid])
            s = loadgen.measured_load(*load, sampler=sampler, timeout=120)
            run = {"latency_s": latency, "clients": clients, "turns_per_s": s["turns_per_s"]}
            run |= {"turn_ms": s["latency_ms"]["turn"], "errors": s["errors_all_phases"]}
            run |= {"cpu_ms_per_turn": s["cpu_ms_per_turn"], "page_ms": loadgen.summarize_ms(sampler.page_s)}
            runs.append(run | {"kb_per_client": (max(sampler.pss_kb, default=0) - idle_pss) / clients})
            print(f"  {target.name} {latency} s {clients} clients: {s['turns_per_s']:.1f} turns/s", flush=True)
    return runs


def slow_model(args, tmp: str) -> dict:
    """Both servers on the Gemini path, the model a local double answering each call after a latency."""
    params = {"latencies": (0, 2), "clients": (8, 32), "warmup": 2, "duration": 8} if args.quick else {}
    params = params or {"latencies": SLOW_LATENCIES, "clients": SLOW_CLIENTS, "warmup": 5, "duration": 20}
    with open(Path(tmp) / "double.log", "wb") as log:  # the double in a process of its own
        command = [PY, "-m", "tests.support.gemini_double"]
        double = subprocess.Popen(command, cwd=_common.ROOT_DIR, stdout=subprocess.PIPE, stderr=log)
    try:
        url = double.stdout.readline().decode().strip()
        model_env = {"GOOGLE_API_KEY": "key-of-the-local-double", "GOOGLE_GEMINI_BASE_URL": url}
        bench = functools.partial(slow_runs, double_url=url, params=params)
        results = each_server(tmp, "slow-", bench, model_env | {"AGENT_MODEL_ATTEMPTS": "1"})
    finally:
        double.kill()
        double.wait()
    return {"params": params, "results": results}


def render_slow(slow: dict) -> list[str]:
    params = slow["params"]
    lines = [
        *_common.section("With a slow model"),
        "Both servers on the real model path (ADK's Gemini class, google-genai over HTTP) to the local Gemini"
        " double (tests/support/gemini_double.py, its own process), which answers each model call after the latency"
        f" given; one model call per turn. Warm-up {params['warmup']} s plus the latency, then"
        f" max({params['duration']} s, 6 x latency) measured. Page: a `GET /` (the peer: `GET /list-apps`)"
        " every 0.1 s during the run (10 s when unanswered); its CPU (ours: ~6 ms a GET, 60 ms a second,"
        " issue43_inflight.md) is in the server's CPU per turn. Memory: the server tree's peak PSS during the run"
        " less its PSS before, per client (each client has at most one turn in flight).",
        "",
    ]
    rows = [
        [name, run["latency_s"], run["clients"], fmt(run["turns_per_s"])]
        + [slashed(run["turn_ms"], "p50 p99"), slashed(run["page_ms"], "p50 p99 max"), run["errors"]]
        + [fmt(run["cpu_ms_per_turn"], 0), fmt(run["kb_per_client"], 0)]
        for name, runs in slow["results"].items()
        for run in runs
    ]
    header = "server | model latency s | clients | turns/s | turn p50/p99 ms | page p50/p99/max ms | errors"
    return lines + md_table(header + " | server CPU ms/turn | KiB per client", rows)


def judge_slow(slow: dict) -> list[str]:
    run = {(name, r["latency_s"], r["clients"]): r for name, runs in slow["results"].items() for r in runs}
    if ("ours", 2, 128) not in run:
        return []
    o32, p32, o128, p128 = (run[(name, 2, n)] for n in (32, 128) for name in ("ours", PEER))
    ratio = o128["turns_per_s"] / p128["turns_per_s"] if p128["turns_per_s"] else float("inf")
    return [
        verdict(o32["turns_per_s"] >= p32["turns_per_s"], "2 s model, 32 clients, turns/s at least the peer's:")
        + f" {o32['turns_per_s']:.2f} vs {p32['turns_per_s']:.2f}",
        verdict(o32["turn_ms"]["p99"] <= p32["turn_ms"]["p99"], "2 s model, 32 clients, turn p99 no higher than")
        + f" the peer's: {o32['turn_ms']['p99']:.0f} ms vs {p32['turn_ms']['p99']:.0f} ms",
        verdict(ratio >= 1.5, "2 s model, 128 clients, turns/s at least 1.5x the peer's:")
        + f" {o128['turns_per_s']:.2f} vs {p128['turns_per_s']:.2f} = {ratio:.2f}x",
        verdict(o128["page_ms"]["p99"] <= 100, "2 s model, 128 clients, page GET p99 <= 100 ms:")
        + f" {o128['page_ms']['p99']:.0f} ms",
    ]


def run(args) -> tuple[list[str], dict]:
    params = {"duration": 8 if args.quick else 35, "trials": 5 if args.quick else 20, "warmup": 2 if args.quick else 5}
    params |= {"clients": [8, 32], "ours_server": loadgen.gunicorn_line()}
    with tempfile.TemporaryDirectory(prefix="service-bench-") as tmp:
        results = each_server(tmp, "", lambda *started: bench_server(*started, params))
        for label, res in results.items():  # the servers have stopped
            res["log"] = loadgen.log_counts(Path(tmp) / label.replace(" ", "-") / "server.log")
        slow = slow_model(args, tmp)
    verdicts = judge(results) + judge_slow(slow)
    lines = render(params, results) + _common.targets(verdicts) + render_slow(slow)
    return lines, {"params": params, "results": results, "slow_model": slow, "verdicts": verdicts}


if __name__ == "__main__":
    title = "Service vs ADK api_server (same load generator, same offline model)"
    sys.exit(_common.main("service", title, PACKAGES.split(), run))
