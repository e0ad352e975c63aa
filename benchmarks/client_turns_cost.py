"""What bounding turns in flight per client costs a turn: `client_turns.take` then `release` (turns/client_turns.py)
on the SQLite cache file or, with `--redis URL`, on Redis; for docs/SERVING.md (results/client_turns_cost.md)."""

import argparse
import ipaddress
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROUNDS = 2000


def measure() -> list[str]:
    from sessions_app.turns import client_turns

    rows = []
    for label, address in (("IPv4 (address, /24)", "203.0.113.50"), ("IPv6 (/64, /56, /48)", "2001:db8:5::1")):
        ip, samples = ipaddress.ip_address(address), []
        for _ in range(ROUNDS):
            started = time.perf_counter()
            client_turns.release(client_turns.take(ip))
            samples.append((time.perf_counter() - started) * 1e3)
        samples.sort()
        median, p99 = statistics.median(samples), samples[int(len(samples) * 0.99)]
        rows.append(f"| {label} | {median:.3f} | {p99:.3f} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--redis", help="a Redis URL (CACHE_URL); default: the SQLite cache file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache_dir:
        os.environ.update(DJANGO_SETTINGS_MODULE="config.settings", DJANGO_DEBUG="1", DJANGO_CACHE_DIR=cache_dir)
        if args.redis:
            os.environ["CACHE_URL"] = args.redis
        import django

        django.setup()
        print(f"{'Redis' if args.redis else 'SQLite cache file'}, {ROUNDS} turns one after another, one process:\n")
        print("| client | take + release, median ms | p99 ms |\n|---|---|---|")
        print("\n".join(measure()))


if __name__ == "__main__":
    main()
