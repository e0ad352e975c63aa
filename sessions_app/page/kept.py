"""Pages that are the same for everyone who reads them in one language, rendered once a process."""

import functools

from django.core.signals import setting_changed


def kept_per_process(render):
    """`render`, its answers kept by its arguments (a language and the like: a few), and forgotten
    whenever a setting changes (Django's setting_changed: a test's override), so a page rendered
    under the old settings is never served under the new. What `render` reads must hold nothing of
    a request: it is given none."""
    kept = functools.lru_cache(maxsize=16)(render)
    setting_changed.connect(lambda **kwargs: kept.cache_clear(), weak=False, dispatch_uid=render.__qualname__)
    return kept
