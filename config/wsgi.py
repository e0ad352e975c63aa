"""WSGI entry point (gunicorn config.wsgi, as `make run` does)."""

import gc
import logging
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = get_wsgi_application()

import importlib  # noqa: E402

from django.conf import settings  # noqa: E402

from agent.model_selection import log_model_choice  # noqa: E402  (needs Django set up)

log_model_choice(logging.getLogger("config.startup"))
# The URLconf, and with it the views and the agent stack (ADK, google-genai), imported here:
# under `gunicorn --preload` (`make run`) the master loads them once and its workers share
# those pages instead of each importing its own copy at its first request.
importlib.import_module(settings.ROOT_URLCONF)
# What is loaded now is kept out of the garbage collector's passes (Python's documented
# recipe before fork), so the workers' collections do not write to, and thereby copy, the
# pages they share with the master.
gc.freeze()
