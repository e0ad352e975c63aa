"""What three modules rely on in the pinned Django, DRF and WhiteNoise beyond their documented
API, so that an upgrade that changes it fails here, naming the module to re-check (as
tests/adk/test_adk_marker.py does for ADK):

- sessions_app/infra/loop_middleware.py overrides Django's `MiddlewareMixin.__acall__`;
- sessions_app/infra/static_files.py calls WhiteNoise's `files`, `find_file` and `serve`;
- sessions_app/api/asynchronous.py is DRF's `APIView.dispatch`, step for step, awaited.

Each check compares the steps (the attributes of `self` a method uses) of the framework's method
with ours: a step added, renamed or dropped upstream fails the test. What they do is tested by
tests/infra/test_loop_middleware.py and the API's own tests.
"""

import ast
import inspect
import textwrap

import pytest
from django.utils.deprecation import MiddlewareMixin
from rest_framework.views import APIView
from whitenoise.middleware import WhiteNoiseMiddleware

from sessions_app.api.asynchronous import AwaitingAPIView
from sessions_app.infra.loop_middleware import HooksOnTheLoop
from sessions_app.infra.static_files import AsyncCapableWhiteNoiseMiddleware

pytestmark = pytest.mark.backend_independent


def _steps(method) -> set[str]:
    """The attributes of `self` that `method`'s body reads, calls or sets."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(method)))
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
    }


def test_djangos_middleware_calls_the_acall_that_loop_middleware_overrides():
    assert "__acall__" in _steps(MiddlewareMixin.__call__), "Django no longer calls __acall__: loop_middleware.py"
    assert _steps(MiddlewareMixin.__acall__) == {"process_request", "get_response", "process_response"}
    assert _steps(HooksOnTheLoop.__acall__) - {"response_may_wait"} == _steps(MiddlewareMixin.__acall__)


def test_whitenoises_middleware_is_sync_only_and_steps_as_static_files_does():
    assert not getattr(WhiteNoiseMiddleware, "async_capable", False), (
        "WhiteNoise's middleware is async-capable now: drop sessions_app/infra/static_files.py"
    )
    assert _steps(WhiteNoiseMiddleware.__call__) == {"autorefresh", "find_file", "files", "serve", "get_response"}
    assert _steps(AsyncCapableWhiteNoiseMiddleware.__acall__) == _steps(WhiteNoiseMiddleware.__call__)


def test_the_awaited_dispatch_takes_drfs_steps():
    assert _steps(AwaitingAPIView.dispatch) == _steps(APIView.dispatch), "DRF's dispatch changed: asynchronous.py"
