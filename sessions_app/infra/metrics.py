"""The service's Prometheus metrics: every one is defined here, and nowhere else (docs/OBSERVABILITY.md,
"Metrics", says what each counts and which labels it has).

The official client (prometheus_client). Under `make run` (`manage.py serve`) its multiprocess mode
is on: `serve` makes (and empties) METRICS_DIRECTORY under var/ and names it in
PROMETHEUS_MULTIPROC_DIR before anything imports the client, so each web worker and each of the
scheduler's processes writes its values to files there, and a scrape of any worker adds them up
(`collect`). Elsewhere (tests, runserver, a management command run by hand) the values are the
process's own.

A label's value is always one of a closed set, named where the event is decided (a failure reason,
an erasure trigger, a throttle's scope, a URL pattern): never a session id, a token, an owner id, a
client's address or anything a person wrote. Knows nothing of the domain: callers pass the values.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.exposition import choose_encoder
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from sessions_app.infra.private_files import private_directory

MULTIPROCESS_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
METRICS_DIRECTORY = "metrics"  # under var/ (settings.VAR_DIR)
PREFIX = "resume_agent"

# Seconds: a turn waits for a model that may take a minute (AGENT_TURN_TIMEOUT_SECONDS).
TURN_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120)
PURGE_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300)

TURNS = Counter(
    f"{PREFIX}_turns",
    "Turns by how they ended: stored, model_failure (reason: the model's failure), refused before the model"
    " ran (reason: why), error, abandoned (the client went away).",
    ["outcome", "reason"],
)
TURN_SECONDS = Histogram(
    f"{PREFIX}_turn_duration_seconds",
    "A turn that ran, from its request to its end, by outcome.",
    ["outcome"],
    buckets=TURN_BUCKETS,
)
TURN_MODEL_SECONDS = Histogram(
    f"{PREFIX}_turn_model_seconds",
    "The model's part of a turn (the agent's run, tools included).",
    buckets=TURN_BUCKETS,
)
TURN_FIRST_PROGRESS_SECONDS = Histogram(
    f"{PREFIX}_turn_first_progress_seconds",
    "A streamed turn: from its request to the first stage the running agent reports.",
    buckets=TURN_BUCKETS,
)
# AGENT_MAX_TURNS_IN_FLIGHT bounds each process: the busiest one meets it first (its 503s).
TURNS_IN_FLIGHT = Gauge(
    f"{PREFIX}_turns_in_flight", "Turns running now, in all the live processes.", multiprocess_mode="livesum"
)
TURNS_IN_FLIGHT_BUSIEST = Gauge(
    f"{PREFIX}_turns_in_flight_busiest_process",
    "Turns running now in the live process that runs the most (its bound: resume_agent_turns_in_flight_limit).",
    multiprocess_mode="livemax",
)
BUSY_ANSWERS = Counter(
    f"{PREFIX}_busy_answers",
    "503s answered busy, by cause: turns (the process's bound), pool (PostgreSQL's).",
    ["cause"],
)
MODEL_RETRIES = Counter(f"{PREFIX}_model_retries", "Model calls tried again, by the status that failed.", ["status"])
ANSWERS = Counter(
    f"{PREFIX}_http_answers",
    "Answers by URL pattern (route: the pattern, never the path), method and status.",
    ["route", "method", "status"],
)
THROTTLED = Counter(f"{PREFIX}_throttled_requests", "Requests a rate limit refused, by its scope.", ["scope"])
SESSIONS_CREATED = Counter(f"{PREFIX}_sessions_created", "Sessions created.")
SESSIONS_ERASED = Counter(f"{PREFIX}_sessions_erased", "Sessions erased (committed), by trigger.", ["trigger"])
PURGE_RUNS = Counter(
    f"{PREFIX}_purge_runs", "Purges of expired sessions, by trigger and outcome.", ["trigger", "outcome"]
)
PURGE_SECONDS = Histogram(
    f"{PREFIX}_purge_duration_seconds", "A purge's duration, by trigger.", ["trigger"], buckets=PURGE_BUCKETS
)
PURGE_LAST_SUCCESS = Gauge(
    f"{PREFIX}_purge_last_success_timestamp_seconds",
    "When the last purge that succeeded ended (Unix time), since the service started.",
    multiprocess_mode="max",
)
INTEGRITY_FAILURES = Counter(
    f"{PREFIX}_integrity_failures", "Reads refused because a stored session did not verify, by kind.", ["kind"]
)
UNKNOWN_TOOL_CALLS = Counter(
    f"{PREFIX}_unknown_tool_calls", "Model calls, in stored turns, to tools that do not exist."
)
SCREEN_FLAGS = Counter(
    f"{PREFIX}_injection_flags",
    "Prompt-injection flags raised: by the screen at a session's creation (its kinds), or by the model (kind model).",
    ["kind"],
)


def multiprocess_directory() -> Path | None:
    """The directory this process writes its values to, or None (the values are its own)."""
    value = os.environ.get(MULTIPROCESS_VARIABLE)
    return Path(value) if value else None


def prepare_directory(path: Path) -> None:
    """Empties `path` of the values of processes that ran before (made if missing), as the client
    asks before its processes start."""
    for stale in private_directory(path).glob("*.db"):
        stale.unlink()


def process_ended(pid: int) -> None:
    """A worker `pid` has ended: its live gauges (turns in flight) stop counting. Its counters stay."""
    if multiprocess_directory() is not None:
        mark_process_dead(pid)


class _Ours:
    """The service's own families of `collectors`: the same in either mode (a single process's
    registry also holds the client's process and garbage-collector metrics, multiprocess mode none)."""

    def __init__(self, collectors: Iterable):
        self.collectors = list(collectors)

    def collect(self):
        for collector in self.collectors:
            yield from (family for family in collector.collect() if family.name.startswith(f"{PREFIX}_"))


def exposition(accept: str, *extra_collectors) -> tuple[bytes, str]:
    """Every process's values (one view in multiprocess mode), then `extra_collectors`' (read at
    this scrape), in the format `accept` asks for: (body, content type)."""
    directory = multiprocess_directory()
    values = MultiProcessCollector(None, path=str(directory)) if directory is not None else REGISTRY
    encoder, content_type = choose_encoder(accept)
    return encoder(_Ours([values, *extra_collectors])), content_type
