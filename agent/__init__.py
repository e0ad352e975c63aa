"""Resume-analysis agent on Google ADK. Entry point: build_agent().

ADK (about 100 MB of modules) is imported when one of these names is first used, not when
the package is: the processes that never run a turn (the `serve` supervisor, the django-q2
cluster) need `APP_NAME` only.
"""

import importlib

APP_NAME = "resume_agent"

_LAZY = {
    "build_agent": ".agent",
    "is_offline": ".model_selection",
    "model_label": ".model_selection",
    "select_model": ".model_selection",
}

__all__ = ["APP_NAME", *_LAZY]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name], __name__), name)
