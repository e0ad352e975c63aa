"""The two paths docs/ARCHITECTURE.md traces (one JSON turn, one owner's DELETE), measured: which
of our modules each runs, from the URL conf's view to the answer, and that none of them calls
back up into a higher layer (the layers of pyproject.toml's import-linter contract).

Measured with a profile hook on every thread the request uses (the request's, the turn's event
loop's), not read from the imports: a hop added to either path fails here. The middleware (it
runs before the URL conf) and logging's filters (they run for any log record) are not the path's.
"""

from __future__ import annotations

import sys
import threading
import tomllib
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import resolve

from sessions_app.turns import loop as event_loop
from tests.support.scripted_llm import text_response

pytestmark = pytest.mark.django_db

# Today's counts (docs/ARCHITECTURE.md, "Two paths, measured"). Lower them when a path gets
# shorter; a change that needs them higher adds a module to a path a newcomer follows.
TURN_MODULES = 35  # 34, then infra/traces.py: the session's name in ADK's spans
DELETE_MODULES = 22

OURS = ("sessions_app", "config")
BOUNDARIES = ("asgiref", "concurrent.futures", "asyncio", "threading")  # where a thread's stack starts


def _layers() -> list[list[str]]:
    """The layers, top to bottom: config, the contract's, then infra and the agent (which the
    contracts keep below everything: they import nothing of the domain)."""
    config = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    rows = [row.replace(":", "|").split("|") for row in contract["layers"]]
    inner = [[f"sessions_app.{name.strip()}" for name in row] for row in rows]
    return [["config"], *inner, ["sessions_app.infra"], ["agent"]]


LAYERS = _layers()


def layer(module: str) -> int:
    """The index of the innermost layer entry naming `module` (or a package above it)."""
    named = [
        (len(name), index)
        for index, row in enumerate(LAYERS)
        for name in row
        if module == name or module.startswith(name + ".")
    ]
    assert named, f"{module} is in no layer"
    return max(named)[1]


class PathTrace:
    """Our modules entered while the block runs, on every thread, with who called each."""

    def __init__(self, view_module: str):
        self.view_module = view_module
        self.skipped = {"logging", *(path.rsplit(".", 1)[0] for path in settings.MIDDLEWARE if path.startswith(OURS))}
        self.modules: set[str] = set()
        self.agent: set[str] = set()
        self.edges: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def _profile(self, frame, event, arg) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__") or ""
        if module in self.skipped or not module.startswith((*OURS, "agent")):
            return
        caller, up = None, frame.f_back
        while up is not None:
            name = up.f_globals.get("__name__") or ""
            if name.startswith(BOUNDARIES):
                break
            if name in self.skipped:
                return  # run by the middleware or by logging: not the path's
            if caller is None and name.startswith((*OURS, "agent")):
                caller = name
            if name == self.view_module:
                break
            up = up.f_back
        with self._lock:
            (self.agent if module.startswith("agent") else self.modules).add(module)
            if caller is not None and caller != module:
                self.edges.add((caller, module))

    def _on_the_turns_loop(self, hook) -> None:
        set_on_loop = threading.Event()
        event_loop.process_loop().call_soon_threadsafe(lambda: (sys.setprofile(hook), set_on_loop.set()))
        assert set_on_loop.wait(10)

    def __enter__(self) -> PathTrace:
        self._on_the_turns_loop(self._profile)
        threading.setprofile(self._profile)
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc_info) -> None:
        sys.setprofile(None)
        threading.setprofile(None)
        self._on_the_turns_loop(None)

    def descents(self) -> set[tuple[str, str]]:
        return {(a, b) for a, b in self.edges if layer(b) > layer(a)}

    def climbs(self) -> set[tuple[str, str]]:
        """Calls from a module into one of a higher layer: a step down that comes back up."""
        return {(a, b) for a, b in self.edges if layer(b) < layer(a)}


def traced(api, method: str, path: str, **request) -> PathTrace:
    with PathTrace(resolve(path).func.view_class.__module__) as trace:
        response = getattr(api, method)(path, **request)
    assert response.status_code in (200, 204), response.content
    return trace


def test_one_json_turn_stays_short_and_never_climbs(api, new_session, scripted_model):
    session_id, token = new_session()
    scripted_model(text_response("A first answer."), text_response("Your plan, step by step."))
    path = f"/agent/sessions/{session_id}/messages"
    say = {"format": "json", "HTTP_X_SESSION_TOKEN": token}
    api.post(path, {"message": "Hello"}, **say)  # the first turn builds what every later one reuses
    trace = traced(api, "post", path, data={"message": "Please draft my plan"}, **say)
    assert trace.climbs() == set()
    assert len(trace.modules) <= TURN_MODULES, sorted(trace.modules)
    assert "sessions_app.turns.service" in trace.modules  # what is measured is the turn


def test_one_delete_stays_short_and_never_climbs(api, new_session):
    first_id, first_token = new_session()
    # The first erasure builds the deletion log's statements for this database (infra/sql.py).
    assert api.delete(f"/agent/sessions/{first_id}", HTTP_X_SESSION_TOKEN=first_token).status_code == 204
    session_id, token = new_session()
    trace = traced(api, "delete", f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token)
    assert trace.climbs() == set()
    assert len(trace.modules) <= DELETE_MODULES, sorted(trace.modules)
    assert "sessions_app.erasure" in trace.modules
