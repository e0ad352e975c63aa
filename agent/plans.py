"""Where saved plan versions live in session state, and the one way to read them.

Each version has its own state key (`plan_v1`, `plan_v2`, ...) and
`plan_count` holds the number of the latest, so the state delta of a
save_plan event carries only the new version: what a session stores grows
linearly with its turns. (One `plan_versions` list rewritten whole by every
save made each event carry every earlier version: quadratic.)

Only the newest `max_plan_versions()` versions are kept in state; saving one
more drops the oldest by setting its key to None (ADK applies a state delta
key by key, so None is the only way a delta can clear a key). Version
numbers keep counting, so export shows e.g. v31..v50.

Everything that reads plan versions (the API's metadata and export, the
prompt, the evals, the tests) calls `plan_versions(state)`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from agent.config import AgentConfig
from agent.screening import screen

PLAN_KEY_PREFIX = "plan_v"
PLAN_COUNT_KEY = "plan_count"
# Sessions saved before versions had keys of their own kept a list here; it
# is still read (never written), so those sessions lose nothing.
LEGACY_LIST_KEY = "plan_versions"


def initial_state(resume_text: str, concealed_lines: Iterable[int] = ()) -> dict:
    """A new session's state: the resume, no plan yet, and the screen's flags (agent/screening.py),
    each with source "screen": every resume is screened once, when its session is created. A resume
    read from a file names the lines its reader could not see (`concealed_lines`, 0 = the first)."""
    flagged_at = datetime.now(UTC).isoformat(timespec="seconds")
    flags = [finding.as_flag(flagged_at) for finding in screen(resume_text, concealed_lines)]
    return {"resume_text": resume_text, PLAN_COUNT_KEY: 0, "suspicious_flags": flags}


def max_plan_versions() -> int:
    """Versions kept in state (PLAN_MAX_VERSIONS, agent.config)."""
    return AgentConfig.from_env().plan_max_versions


def plan_key(version: int) -> str:
    return f"{PLAN_KEY_PREFIX}{version}"


def plan_count(state: Mapping) -> int:
    """The number of the latest saved version (0: none saved yet)."""
    count = state.get(PLAN_COUNT_KEY)
    if isinstance(count, int):
        return count
    return len(_legacy_versions(state))


def plan_versions(state: Mapping) -> list[dict]:
    """The kept versions, oldest first: [{"version", "plan", "saved_at"}, ...]."""
    versions = _legacy_versions(state) if PLAN_COUNT_KEY not in state else []
    count = plan_count(state)
    first = max(1, count - max_plan_versions() + 1)
    for version in range(first, count + 1):
        value = state.get(plan_key(version))
        if isinstance(value, dict):
            versions.append(value)
    return versions


def new_version_delta(state: Mapping, version_value: dict) -> tuple[int, dict]:
    """(the new version's number, the state delta that saves it and drops what falls past the cap)."""
    version = plan_count(state) + 1
    delta = {plan_key(version): {"version": version, **version_value}, PLAN_COUNT_KEY: version}
    if PLAN_COUNT_KEY not in state and LEGACY_LIST_KEY in state:
        # The first keyed save of an older session moves its list into keys once.
        for old in _legacy_versions(state):
            delta.setdefault(plan_key(old["version"]), old)
        delta[LEGACY_LIST_KEY] = None
    dropped = version - max_plan_versions()
    for old in range(1, dropped + 1):
        if state.get(plan_key(old)) is not None or plan_key(old) in delta:
            delta[plan_key(old)] = None
    return version, delta


def _legacy_versions(state: Mapping) -> list[dict]:
    value = state.get(LEGACY_LIST_KEY)
    if not isinstance(value, list):
        return []
    return [dict(item) for item in value if isinstance(item, dict) and isinstance(item.get("version"), int)]
