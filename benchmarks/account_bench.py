"""Signed-in vs anonymous turns (issue 45): does a turn on a session kept in a passkey account cost what an
anonymous turn costs? One server (`manage.py serve`) on the Gemini double at a model latency of 0 and 2 s, the
same closed-loop load (loadgen.py) alternating anonymous and signed-in runs (A B B A). Signed in, each client's
session is kept in one account (its token wrapped as the page wraps it) and opened through the account (the
envelope read and unwrapped, as on another device) before its turns: the "create" column holds that too."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import _common, loadgen  # noqa: E402
from benchmarks._common import fmt, md_table, slashed, verdict  # noqa: E402
from tests.support.account_client import Device, unwrap, wrap  # noqa: E402
from tests.support.passkey_authenticator import ORIGIN, SoftPasskey, b64url, from_b64url  # noqa: E402

PACKAGES = "Django djangorestframework google-adk google-genai gunicorn uvicorn httpx webauthn"
ACCOUNT = "/agent/account"


class SignedInTarget(loadgen.OursTarget):
    """Our API as a signed-in page uses it: each new session kept in the account and opened through it."""

    name = "signed in"

    def __init__(self, base_url: str):
        super().__init__(base_url)
        self.device = Device(SoftPasskey(synced=True))
        with httpx.Client(base_url=base_url, timeout=30) as client:  # one account for every client
            options = client.post(f"{ACCOUNT}/registration/options", json={}).json()["options"]
            answer = client.post(f"{ACCOUNT}/registration", json={"credential": self.device.passkey.create(options)})
            self.account_token = answer.raise_for_status().json()["account_token"]

    async def create(self, client):
        response, handle = await super().create(client)
        if handle is None:
            return response, None
        salt, signed_in = os.urandom(32), {"X-Account-Token": self.account_token}
        wrapped = wrap(self.device.prf_output(), salt, handle.token)
        wrapping = {"credential_id": self.device.passkey.id, "salt": b64url(salt), "wrapped": b64url(wrapped)}
        body = {"session_id": handle.session_id, "wrapped_tokens": [wrapping]}
        keeping = signed_in | {"X-Session-Token": handle.token}
        kept = await client.post(f"{ACCOUNT}/sessions", json=body, headers=keeping)
        envelope = await client.get(f"{ACCOUNT}/sessions/{handle.session_id}", headers=signed_in)
        if kept.status_code != 201 or envelope.status_code != 200:
            return (kept if kept.status_code != 201 else envelope), None  # counted as a failed create
        first = envelope.json()["wrapped_tokens"][0]
        token = unwrap(self.device.prf_output(), from_b64url(first["salt"]), from_b64url(first["wrapped"]))
        return response, loadgen.Handle(handle.session_id, token=token)


def runs_at(process, targets, latency: float, clients: int, params: dict) -> list[dict]:
    runs = []
    for target in (targets[0], targets[1], targets[1], targets[0]):  # A B B A: the machine's drift cancels out
        load = (target, clients, params["warmup"] + latency, max(params["duration"], 6 * latency), [process.pid])
        s = loadgen.measured_load(*load, timeout=120)
        runs.append({"who": target.name, "latency_s": latency, "clients": clients, "turns_per_s": s["turns_per_s"]})
        runs[-1] |= {"turn_ms": s["latency_ms"]["turn"], "create_ms": s["latency_ms"]["create"]}
        runs[-1] |= {"cpu_ms_per_turn": s["cpu_ms_per_turn"], "errors": s["errors_all_phases"], "kinds": s["errors"]}
        print(f"  {target.name} {latency} s {clients} clients: {s['turns_per_s']:.1f} turns/s", flush=True)
    return runs


def run(args) -> tuple[list[str], dict]:
    params = {"latencies": (0, 2), "clients": (8, 32), "warmup": 2, "duration": 6 if args.quick else 15}
    with tempfile.TemporaryDirectory(prefix="account-bench-") as tmp:
        with open(Path(tmp) / "double.log", "wb") as log:
            command = [_common.PY, "-m", "tests.support.gemini_double"]
            double = subprocess.Popen(command, cwd=_common.ROOT_DIR, stdout=subprocess.PIPE, stderr=log)
        url = double.stdout.readline().decode().strip()
        env = loadgen.ours_env(Path(tmp) / "ours.db", Path(tmp)) | {"WEBAUTHN_ORIGINS": ORIGIN}
        env |= {"GOOGLE_API_KEY": "key-of-the-local-double", "GOOGLE_GEMINI_BASE_URL": url, "AGENT_MODEL_ATTEMPTS": "1"}
        process, anonymous = loadgen.start_ours(env, Path(tmp) / "server.log")
        try:
            targets, runs = (anonymous, SignedInTarget(anonymous.base_url)), []
            loadgen.run_load(anonymous, 8, 0, params["duration"])  # a warm-up, not measured
            for latency in params["latencies"]:
                httpx.put(f"{url}/latency", content=str(latency), timeout=10).raise_for_status()
                for clients in params["clients"]:
                    runs += runs_at(process, targets, latency, clients, params)
        finally:
            loadgen.stop_server(process)
            double.kill()
            double.wait()
    verdicts = judge(runs)
    return render(params, runs) + _common.targets(verdicts), {"params": params, "runs": runs, "verdicts": verdicts}


def paired(runs: list[dict]) -> dict:
    """(latency, clients) -> {who: the mean of its two runs' turns/s, turn p50 and CPU per turn}."""
    out = {}
    for r in runs:
        who = out.setdefault((r["latency_s"], r["clients"]), {}).setdefault(r["who"], [])
        who.append((r["turns_per_s"], r["turn_ms"]["p50"], r["cpu_ms_per_turn"]))
    mean = lambda figures: [sum(x) / len(x) for x in zip(*figures, strict=True)]  # noqa: E731
    return {key: {who: mean(figures) for who, figures in d.items()} for key, d in out.items()}


def render(params: dict, runs: list[dict]) -> list[str]:
    lines = [
        *_common.section("Runs"),
        f"Warm-up {params['warmup']} s plus the latency, then max({params['duration']} s, 6 x latency) measured;"
        " each (latency, clients) as anonymous, signed in, signed in, anonymous. Create: anonymous, the create alone;"
        " signed in, the create, the keep (POST /agent/account/sessions) and the envelope read. A client's cycle is a"
        " create, three turns, a read and a delete, so a signed-in run's turns/s and server CPU per turn also carry"
        " that keep and read, once per three turns: the turn itself is the turn column.",
        "",
    ]
    rows = [
        [r["who"], r["latency_s"], r["clients"], fmt(r["turns_per_s"]), slashed(r["turn_ms"], "p50 p99")]
        + [slashed(r["create_ms"], "p50 p99"), fmt(r["cpu_ms_per_turn"], 0), r["errors"]]
        for r in runs
    ]
    header = "who | model latency s | clients | turns/s | turn p50/p99 ms | create p50/p99 ms | server CPU ms/turn"
    return lines + md_table(header + " | errors", rows)


def judge(runs: list[dict]) -> list[str]:
    out = []
    for (latency, clients), who in paired(runs).items():
        (a_rate, a_p50, a_cpu), (s_rate, s_p50, s_cpu) = who["ours"], who["signed in"]
        out.append(
            verdict(s_p50 <= 1.1 * a_p50, f"{latency} s model, {clients} clients, a signed-in turn's p50 within 10%")
            + " of an anonymous one's:"
            + f" {s_p50:.0f} vs {a_p50:.0f} ms ({s_rate:.2f} vs {a_rate:.2f} turns/s, CPU {s_cpu:.0f} vs"
            f" {a_cpu:.0f} ms/turn; means of two runs each)"
        )
    return out


if __name__ == "__main__":
    sys.exit(_common.main("account", "Signed-in vs anonymous turns", PACKAGES.split(), run))
