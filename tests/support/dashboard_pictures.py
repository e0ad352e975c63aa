"""Pictures of the Grafana dashboard's panels with real data, for docs/OBSERVABILITY.md (issue 42).

Grafana cannot be installed here, so the pictures are Prometheus's own graph page (Debian's
`prometheus`, its classic UI) showing the dashboard's own queries, read from
config/grafana/resume-agent.json by panel title (`$job` is the job, `$__rate_interval` is 1m; a
panel of several queries is drawn as one graph: its queries joined by `or`, each labelled with its
legend). Everything runs on the loopback, in a temporary directory removed afterwards:
`manage.py serve` (`make run`'s server: four workers and the scheduler) on a fresh SQLite database,
its model on the local Gemini double, the fictional resumes of tests/fixtures; Prometheus scraping
it every 2 s; a scripted flow of about five minutes (creates, turns some streamed, model failures
and a retry through the double, 503s busy, deletes, the scheduled purge every minute with a 72 s
TTL); then headless Chromium (Debian's) takes one PNG per page. A helper, not a test:

    .venv/bin/python -m tests.support.dashboard_pictures    # writes docs/dashboard-prometheus-*.png
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.support.browser import chromium
from tests.support.gemini_double import GeminiDouble
from tests.support.servers import ROOT, children_of, free_port, launch, migrated_env, stop_serve, wait_until_serving
from tests.support.waiting import wait_until

JOB, TOKEN, RATE_INTERVAL, STEP = "resume-agent", "dashboard-pictures-metrics-token", "1m", 2
BOUND, AT_ONCE = 2, 10  # turns one process runs at once; turns sent together in a burst
UNAVAILABLE = (503, {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}})
QUOTA = (429, {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}})
RESUMES = ["resume_lin.txt", "resume_chen_en.txt", "resume_ellery_en.txt", "resume_wang_zh.txt"]
MESSAGES = ["Please draft my plan", "What should I change first?", "And for remote roles?", "Make it shorter"]
# One PNG per page, each a few of the dashboard's panels (fewer than 10: the page sorts g10 before g2).
PAGES = {
    "turns": [
        "Turns by outcome",
        "Model failures and refusals by reason",
        "Model failure ratio",
        "Turns in flight against the bound",
    ],
    "latency-failures": [
        "Whole turn (stored)",
        "The model's part",
        "503 busy answers by cause",
        "Model retries by status",
    ],
    "purge-disk-log": [
        "Sessions created and erased",
        "Purge runs by outcome",
        "Since the last successful purge",
        "Sessions past their TTL, not yet purged",
        "Free space against the headroom",
        "Age of the log's latest checkpoint",
    ],
}
# Two graphs a row, as the dashboard's half-width panels; the page's buttons (and the step, 2 s) hidden, its
# navigation bar at the top of the picture (not fixed), graphs lower than its 400 px. Set before the graphs are
# drawn (their size is read then); then each graph is put under its panel's title, its whole query shown, nothing
# focused.
CSS = """
.navbar.fixed-top { position: absolute !important; }
.query-history, .execute_btn, .expression_select, .stacked_btn, a[name=remove], #add_graph,
.prometheus_input_group:has(> input[name=step_input]) { display: none !important; }
#graph_container { display: flex; flex-wrap: wrap; overflow: hidden; }
.graph_wrapper { width: 50%; padding: 0 12px; }
.graph { min-height: 200px !important; }
"""
STYLE = f"document.head.insertAdjacentHTML('beforeend', {json.dumps('<style>' + CSS + '</style>')})"
SHOWN = """titles => {
  document.querySelectorAll('.graph_wrapper').forEach((graph, i) =>
    graph.insertAdjacentHTML('afterbegin', '<h5 style="margin: 14px 0 4px">' + titles[i] + '</h5>'));
  document.querySelectorAll('textarea').forEach(t => { t.style.height = t.scrollHeight + 2 + 'px'; });
  document.activeElement.blur();
  $(window).trigger('resize');  // each graph drawn again, as wide as its column
}"""
SCRAPE_CONFIG = """
global: {{scrape_interval: {step}s, evaluation_interval: {step}s}}
scrape_configs:
  - job_name: {job}
    authorization: {{credentials_file: {token_file}}}
    static_configs: [{{targets: ["127.0.0.1:{port}"]}}]
"""


def panel_expr(title: str) -> str:
    """The dashboard panel's query as one PromQL expression for Prometheus's graph page."""
    dashboard = json.loads((ROOT / "config" / "grafana" / "resume-agent.json").read_text())
    panels = [p for row in dashboard["panels"] for p in [row, *row.get("panels", [])] if p.get("title") == title]
    targets = panels[0]["targets"]
    exprs = [t["expr"].replace("$job", JOB).replace("$__rate_interval", RATE_INTERVAL) for t in targets]
    if len(exprs) == 1:
        return exprs[0]
    legends = [t["legendFormat"].split("{{")[0].strip(" :") or "series" for t in targets]
    labelled = zip(exprs, legends, strict=True)
    return " or ".join(f'label_replace({e}, "legend", {json.dumps(n)}, "", "")' for e, n in labelled)


def flow(app: str, double: GeminiDouble, minutes: float) -> dict:
    """Traffic for `minutes`, in rounds of 15 s; returns what it did, counted (nothing of the content)."""
    rng, done, resumes = random.Random(42), {}, [(ROOT / "tests" / "fixtures" / n).read_text("utf-8") for n in RESUMES]
    client = httpx.Client(base_url=app, timeout=60, limits=httpx.Limits(max_connections=AT_ONCE + 4))

    def count(what: str) -> None:
        done[what] = done.get(what, 0) + 1

    def create() -> tuple[str, str]:
        answer = client.post("/agent/sessions", json={"resume_text": rng.choice(resumes)})
        count(f"create {answer.status_code}")
        return answer.json()["session_id"], answer.json()["token"]

    def say(session: tuple[str, str], stream: bool = False) -> int:
        headers = {"X-Session-Token": session[1], **({"Accept": "text/event-stream"} if stream else {})}
        path = f"/agent/sessions/{session[0]}/messages"
        status = client.post(path, json={"message": rng.choice(MESSAGES)}, headers=headers).status_code
        count(f"turn{' streamed' if stream else ''} {status}")
        return status

    def talk(session: tuple[str, str], turns: int) -> None:
        for turn in range(turns):
            say(session, stream=turn % 2 == 1)

    rounds = int(minutes * 60 / 15)
    for number in range(rounds):
        started = time.monotonic()
        double.latency = rng.uniform(0.2, 2.5)  # a model slower or faster from round to round
        sessions = [create(), create()]
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(talk, sessions, [rng.randint(1, 3), rng.randint(1, 3)]))
        double.latency = 0.3
        if number % 7 == 3:  # a model failure: the double unavailable twice (one retry)
            double.answer(UNAVAILABLE, UNAVAILABLE)
            say(sessions[0])
        if number % 7 == 5:  # the model out of quota twice
            double.answer(QUOTA, QUOTA)
            say(sessions[1])
        if number % 5 == 2:  # unavailable once: retried, then stored
            double.answer(UNAVAILABLE)
            say(sessions[1])
        if number % 8 == 6:  # a burst: more turns than the four processes' bounds, held by the model
            together = [create() for _ in range(AT_ONCE)]
            with double.hold() as hold, ThreadPoolExecutor(AT_ONCE) as pool:
                before = double.calls
                sent = [pool.submit(say, session) for session in together]
                wait_until(lambda s=sent, b=before: sum(t.done() for t in s) + double.calls - b == AT_ONCE, timeout=30)
                time.sleep(6)  # held long enough for a scrape to see them
                hold.release()
                [turn.result() for turn in sent]
        if number % 4 == 1:  # the owner deletes a session
            deleted = client.delete(f"/agent/sessions/{sessions[0][0]}", headers={"X-Session-Token": sessions[0][1]})
            count(f"delete {deleted.status_code}")
        time.sleep(max(0.0, 15 - (time.monotonic() - started)))
        print(f"round {number + 1}/{rounds}", file=sys.stderr, flush=True)
    return done


def screenshots(prometheus: str, out: Path, work: Path, range_minutes: int) -> list[Path]:
    written = []
    with chromium(work, viewport={"width": 1280, "height": 800}, timezone_id="UTC") as browser:
        page = browser.new_page()
        page.add_init_script(f"document.addEventListener('DOMContentLoaded', () => {STYLE})")
        for name, titles in PAGES.items():
            params = []
            for index, title in enumerate(titles):
                params += [(f"g{index}.expr", panel_expr(title)), (f"g{index}.tab", "0")]
                params += [(f"g{index}.range_input", f"{range_minutes}m"), (f"g{index}.step_input", str(STEP))]
            page.goto(f"{prometheus}/graph?{urllib.parse.urlencode(params)}")
            page.wait_for_function(f"document.querySelectorAll('.graph svg').length == {len(titles)}", timeout=30000)
            page.evaluate(SHOWN, titles)
            errors = [e for e in page.locator(".alert-danger").all_inner_texts() if e.strip()]
            assert not errors, (name, errors)
            page.mouse.move(0, 0)
            page.wait_for_timeout(500)
            path = out / f"dashboard-prometheus-{name}.png"
            page.screenshot(path=path, full_page=True)
            written.append(path)
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="how long the flow runs (default 5)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs", help="where the PNGs go (default docs/)")
    args = parser.parse_args()
    prometheus_binary = shutil.which("prometheus") or "/usr/bin/prometheus"
    work = Path(tempfile.mkdtemp(prefix="dashboard-pictures-"))
    double = GeminiDouble(keep_requests=False).start()
    serve = prometheus = None
    try:
        env = migrated_env(
            work,
            **double.environment(),
            DJANGO_VAR_DIR=str(work / "var"),
            METRICS_TOKEN=TOKEN,
            MODEL_PROVIDER="gemini-api-paid",  # the double stands for a paid Gemini API
            PURGE_INTERVAL_MINUTES="1",
            AGENT_SESSION_TTL_HOURS="0.02",  # 72 s
            AGENT_MODEL_ATTEMPTS="2",
            AGENT_MODEL_RETRY_DELAY_SECONDS="0.2",
            AGENT_MAX_TURNS_IN_FLIGHT=str(BOUND),
            AGENT_SESSION_MESSAGE_RATE="1000/min",
            CLIENT_MESSAGE_RATE="1000/min",
        )
        port = free_port()
        command = [sys.executable, "manage.py", "serve", "--bind", f"127.0.0.1:{port}"]
        serve, app = wait_until_serving(launch(command, env, work / "serve.log"), command, work / "serve.log", port)
        children = children_of(serve.pid)
        (work / "token").write_text(TOKEN)
        (work / "prometheus.yml").write_text(
            SCRAPE_CONFIG.format(step=STEP, job=JOB, token_file=work / "token", port=port)
        )
        prometheus_url = f"http://127.0.0.1:{free_port()}"
        prometheus = subprocess.Popen(
            [
                prometheus_binary,
                f"--config.file={work / 'prometheus.yml'}",
                f"--storage.tsdb.path={work / 'prometheus-data'}",
                f"--web.listen-address={prometheus_url.removeprefix('http://')}",
            ],
            cwd=work,
            stdout=(work / "prometheus.log").open("wb"),
            stderr=subprocess.STDOUT,
        )

        def scraped() -> bool:
            try:
                answer = httpx.get(f"{prometheus_url}/api/v1/query", params={"query": f'up{{job="{JOB}"}}'}).json()
                return [r["value"][1] for r in answer["data"]["result"]] == ["1"]
            except (httpx.TransportError, KeyError, ValueError):
                return False

        assert wait_until(scraped, timeout=60, interval=0.5), (work / "prometheus.log").read_text()[-2000:]
        started = time.monotonic()
        done = flow(app, double, args.minutes)
        time.sleep(3 * STEP)  # the last answers scraped
        range_minutes = int((time.monotonic() - started) / 60) + 1
        print(json.dumps(dict(sorted(done.items()))), file=sys.stderr)
        for path in screenshots(prometheus_url, args.out, work, range_minutes):
            print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}", file=sys.stderr)
        stop_serve(serve, children)
    finally:
        if prometheus is not None:
            prometheus.terminate()
            prometheus.wait(timeout=30)
        if serve is not None and serve.poll() is None:
            stop_serve(serve, children_of(serve.pid))
        double.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
