"""The deletion log at 1,000,000 entries (issue 39), bulk-inserted into a scratch SQLite file under var/: public
reads' times, a worker's memory for the log, owners' turns while the whole log is verified. Figures: results/log.md."""

import datetime as dt
import hashlib
import json
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import _common  # noqa: E402
from benchmarks._common import fmt, fmt_ms, percentile, verdict  # noqa: E402

SCRATCH, EVERY = _common.ROOT_DIR / "var" / "log-bench", 1000
SESSION = ("log-bench-session", "anon-log-bench-owner", dt.datetime(2026, 1, 1, tzinfo=dt.UTC), 14, 40_000)


def _log(url: str):  # the storage module, Django set up on `url`
    _common.setup_django(url)
    from sessions_app.deletion_log import store as deletion_log

    return deletion_log


def _append(log) -> None:
    from django.db import transaction

    with transaction.atomic():
        log.append([log.ErasedSession(*SESSION)], "api")


def child_build(url: str, entries: str) -> None:
    """Entry 0 appended as an erasure appends it, then copies of it under other digests, inserted in bulk."""
    log = _log(url)
    from django.db import connection, transaction

    from sessions_app.deletion_log.formats.checkpoint import Checkpoint
    from sessions_app.deletion_log.formats.merkle import RightEdge, leaf_hash, post_order
    from sessions_app.models import DeletionLogCheckpoint, DeletionLogEntry, DeletionLogNode

    _append(log)
    first, signer, now = DeletionLogEntry.objects.get(index=0), log.log_key.signer(), dt.datetime.now(dt.UTC)
    template, digest, signed_at = bytes(first.leaf), first.session_digest, connection.ops.adapt_datetimefield_value(now)
    edge, rows, nodes, signed = RightEdge(), [], [], []
    for index in range(int(entries)):
        name = hashlib.sha256(f"log-bench-{index}".encode()).hexdigest() if index else digest
        leaf = template.replace(digest.encode(), name.encode())
        rows.append((index, name, leaf, leaf_hash(leaf)))
        nodes += [(post_order(height, at), node) for height, at, node in edge.append(rows[-1][3])]
        if edge.size % EVERY == 0 or edge.size == int(entries):
            note = Checkpoint(signer.name, edge.size, edge.root()).sign(signer)
            signed.append((edge.size, edge.root(), note, edge.to_bytes(), signed_at))
    with transaction.atomic(), connection.cursor() as cursor:
        for model, values in ((DeletionLogEntry, rows[1:]), (DeletionLogNode, nodes), (DeletionLogCheckpoint, signed)):
            columns = ", ".join(connection.ops.quote_name(field.column) for field in model._meta.concrete_fields)
            sql = f"INSERT INTO {model._meta.db_table} ({columns}) VALUES ({', '.join(['%s'] * len(values[0]))})"
            for start in range(0, len(values), 50_000):
                cursor.executemany(sql, values[start : start + 50_000])
    print(json.dumps({"entries": edge.size, "checkpoints": len(signed), "nodes": len(nodes)}))


def _between(newer: int, rng: random.Random) -> str:
    return f"/deletions/consistency?from={rng.randrange(1, newer + 1)}&to={newer}"


def child_reads(url: str, rounds: str) -> None:
    """As a web worker: the public reads through Django's test client, the older size changing every request."""
    log = _log(url)
    from django.test import Client

    size, client, rng = log.status().size, Client(), random.Random(39)
    sizes, digests = list(range(EVERY, size + 1, EVERY)), log.DeletionLogEntry.objects.values_list("session_digest")
    kinds = {
        "receipt": lambda: f"/deletions/{digests.get(index=rng.randrange(size))[0]}",
        "checkpoint": lambda: "/deletions/checkpoint",
        "consistency from an old size to the latest": lambda: f"/deletions/consistency?from={rng.choice(sizes)}",
        "consistency between two old sizes": lambda: _between(rng.choice(sizes), rng),
    }
    client.get(kinds["receipt"]())  # the first request's imports are not the log's memory
    before, times = _common.pss_kb("self") / 1024, {kind: [] for kind in kinds}
    for _ in range(int(rounds)):
        for kind, path in kinds.items():
            path, started = path(), time.perf_counter()  # the receipt's digest is looked up before the clock
            assert client.get(path).status_code == 200, path
            times[kind].append(time.perf_counter() - started)
    after = _common.pss_kb("self") / 1024
    print(json.dumps({"size": size, "pss_before_mb": before, "pss_after_mb": after, "times": times}))


def child_turns(url: str, stop_file: str) -> None:
    """An owner's turn (the API, offline model) every 20 ms until `stop_file` is gone, a new session every 20
    turns: each turn's time."""
    _log(url)
    from django.test import Client

    client, times = Client(), []
    session_id, headers = _common.api_session(client)
    for _ in range(5):  # warm: the first turns of a process import and build the agent
        _common.api_turn(client, session_id, headers, "Make a plan for the next month.")
    while Path(stop_file).exists():
        session_id, headers = _common.api_session(client)
        for _ in range(20):
            started = time.perf_counter()
            assert _common.api_turn(client, session_id, headers, "Make a plan for the next month.").status_code == 200
            times.append(time.perf_counter() - started)
            time.sleep(0.02)
    print(json.dumps({"times": times}))


def child_verify(url: str) -> None:
    """The admin's check, as its task runs it, each chunk's reads (its read transactions) timed."""
    log, reads, started = _log(url), [], time.perf_counter()
    read_chunk = log._read_chunk

    def timed(*args):
        began = time.perf_counter()
        found = read_chunk(*args)
        reads.append(time.perf_counter() - began)
        return found

    with mock.patch.object(log, "_read_chunk", timed):
        checked = log.verify_whole_log()
    print(json.dumps({"checked": checked, "seconds": time.perf_counter() - started, "reads": reads}))


def _turns(url: str, env: dict, verify: bool) -> tuple[list[float], dict | None]:
    """Turn latencies for 10 s (quiet), or while the whole log is verified in another process."""
    (stop := SCRATCH / "turning").touch()
    writer = subprocess.Popen([_common.PY, __file__, "turns", url, str(stop)], env=env, stdout=subprocess.PIPE)
    time.sleep(3)  # the turns' process warms up (its first turns build the agent) before anything is timed
    verified = _common.run_child(__file__, ["verify", url], env, timeout=1800)[0] if verify else time.sleep(10)
    stop.unlink()
    return json.loads(writer.communicate(timeout=60)[0].decode().splitlines()[-1])["times"], verified


def run(args):
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    url, env = f"sqlite:///{SCRATCH / 'log.db'}", _common.clean_env(DJANGO_VAR_DIR=str(SCRATCH))
    env |= {"DJANGO_CACHE_DIR": str(SCRATCH / "cache"), "DELETION_LOG_RATE": "1000000/min", **_common.UNTHROTTLED}
    env["DJANGO_ALLOWED_HOSTS"] = "testserver"
    started, entries = time.monotonic(), 20_000 if args.quick else int(args.entries or 1_000_000)
    built = _common.run_child(__file__, ["build", url, str(entries)], env, timeout=1800)[0]
    built["build_s"] = time.monotonic() - started
    reads = _common.run_child(__file__, ["reads", url, "50" if args.quick else "250"], env)[0]
    (quiet, _), (during, verify) = _turns(url, env, verify=False), _turns(url, env, verify=True)
    p99, growth = {"quiet": percentile(quiet, 99), "during": percentile(during, 99)}, reads["pss_after_mb"]
    growth -= reads["pss_before_mb"]
    rows = [
        [kind, len(t), fmt_ms(statistics.median(t)), fmt_ms(percentile(t, 99)), fmt_ms(max(t))]
        for kind, t in reads["times"].items()
    ]
    worst, longest = max(percentile(t, 99) for t in reads["times"].values()), max(verify["reads"])
    body = [f"A log of {built['entries']:,} entries, {built['checkpoints']:,} checkpoints, {built['nodes']:,} stored"]
    body[0] += f" subtrees, built in {built['build_s']:.0f} s ({SCRATCH.relative_to(_common.ROOT_DIR)}/log.db)."
    body += _common.section("Public reads (one worker, Django's test client; the older size changes every request)")
    body += _common.md_table("read | requests | p50 ms | p99 ms | max ms", rows)
    body += ["", f"Worker PSS {fmt(reads['pss_before_mb'])} MB before the reads, {fmt(reads['pss_after_mb'])} after."]
    body += _common.section("Owners' turns while the whole log is verified (API, offline model, a turn every 20 ms)")
    body += [
        f"Verify: {verify['checked']:,} entries in {verify['seconds']:.0f} s, {len(verify['reads'])} chunks, the"
        f" longest chunk's reads {fmt_ms(longest)} ms. Turns: {len(during)} answered during it, p99"
        f" {fmt_ms(p99['during'])} ms; quiet: {len(quiet)} in 10 s, p99 {fmt_ms(p99['quiet'])} ms."
    ]
    reads_ok = f"each read's p99 <= 20 ms at {reads['size']:,} entries (worst {fmt_ms(worst)} ms)"
    verdicts = [verdict(worst <= 0.020, reads_ok)]
    verdicts.append(verdict(growth <= 50, f"a worker's memory for the log <= 50 MB (PSS grew {growth:.1f} MB)"))
    verdicts.append(verdict(p99["during"] <= 1.5 * p99["quiet"], "turns' p99 during the verify within 1.5x of quiet"))
    verdicts.append(verdict(longest <= 0.5, "each chunk's reads under 0.5 s (no writer waits longer)"))
    body += _common.targets(verdicts)
    shutil.rmtree(SCRATCH, ignore_errors=True)
    reads["times"] = {k: [min(t), statistics.median(t), percentile(t, 99), max(t)] for k, t in reads["times"].items()}
    verify["reads"] = {"chunks": len(verify["reads"]), "longest_s": longest}
    return body, {"built": built, "reads_min_p50_p99_max_s": reads, "verify": verify, "turns_p99_s": p99}


if __name__ == "__main__":
    children = {"build": child_build, "reads": child_reads, "turns": child_turns, "verify": child_verify}
    options = [("--entries", "the log's size (default 1,000,000)")]
    sys.exit(_common.main("log", "The deletion log at scale", ["Django"], run, children, options))
