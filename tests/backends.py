"""The scale-out backends the suite also runs on: a PostgreSQL and a Redis.

`make test` runs the whole suite on SQLite (nothing to install) and, at the same
time, again on PostgreSQL with Redis as the cache, when both answer at
TEST_POSTGRES_URL and TEST_REDIS_URL. Where they do not, that leg is skipped and
the run says so; with REQUIRE_SCALE_OUT_BACKENDS=1 (set by .ci/run) a missing
backend fails the run instead, so CI can never pass without the PostgreSQL leg.

    .venv/bin/python -m tests.backends [pytest arguments]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POSTGRES_URL = os.environ.get("TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
# A database number of its own: the suite clears the cache between tests.
REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def required() -> bool:
    return os.environ.get("REQUIRE_SCALE_OUT_BACKENDS", "").strip() == "1"


def postgres_problem(url: str = POSTGRES_URL) -> str | None:
    """None when a PostgreSQL answers at `url`, else why not."""
    try:
        import psycopg

        with psycopg.connect(url, connect_timeout=3) as connection:
            connection.execute("SELECT 1")
    except Exception as exc:  # any failure to connect means the leg cannot run
        return f"no PostgreSQL at {url} ({type(exc).__name__})"
    return None


def redis_problem(url: str = REDIS_URL) -> str | None:
    try:
        import redis

        redis.Redis.from_url(url, socket_connect_timeout=3).ping()
    except Exception as exc:
        return f"no Redis at {url} ({type(exc).__name__})"
    return None


def _leg(name: str, env: dict, args: list[str], output) -> subprocess.Popen:
    print(f"== {name} leg: pytest {' '.join(args)}", flush=True)
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", *args], cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT
    )


def main(args: list[str]) -> int:
    base = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CACHE_URL", "REDIS_URL")}
    problems = [p for p in (postgres_problem(), redis_problem()) if p]
    if problems and required():
        print(f"REQUIRE_SCALE_OUT_BACKENDS=1 but {'; '.join(problems)}: failing", flush=True)
        return 1
    scale_out = None
    if problems:
        print(f"== skipping the PostgreSQL + Redis leg: {'; '.join(problems)}", flush=True)
    else:
        # Its output waits in a file while the SQLite leg prints, then follows it.
        log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (read once the leg has ended)
        env = {**base, "DATABASE_URL": POSTGRES_URL, "CACHE_URL": REDIS_URL}
        scale_out = (_leg("PostgreSQL + Redis", env, args, log), log)
    sqlite_leg = _leg("SQLite", base, args, None)
    codes = {"SQLite": sqlite_leg.wait()}
    if scale_out:
        process, log = scale_out
        codes["PostgreSQL + Redis"] = process.wait()
    print("== " + ", ".join(f"{name}: {'passed' if code == 0 else f'exit {code}'}" for name, code in codes.items()))
    if scale_out:  # last, so the run ends with that leg's pytest summary
        log.seek(0)
        print("== PostgreSQL + Redis leg, its output:", flush=True)
        sys.stdout.write(log.read())
    return max(codes.values())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
