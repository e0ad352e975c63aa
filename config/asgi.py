"""ASGI entry point: what `make run` serves (gunicorn config.asgi:application, sessions_app/infra/supervisor.py)."""

import gc
import importlib
import logging
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

django_application = get_asgi_application()

from django.conf import settings  # noqa: E402

from agent.model_selection import log_model_choice  # noqa: E402  (needs Django set up)
from sessions_app.api.asgi_guard import ServerGuard  # noqa: E402
from sessions_app.infra.request_threads import RequestThreads  # noqa: E402

# Bodies over the limit, slow bodies and WebSocket handshakes are refused here, before Django
# reads anything (sessions_app/api/asgi_guard.py).
# Each request's synchronous work on a thread kept between requests, not two threads started and
# stopped a request (sessions_app/infra/request_threads.py).
application = RequestThreads(ServerGuard(django_application), keep=settings.SERVER_REQUEST_THREADS_KEPT)

log_model_choice(logging.getLogger("config.startup"))
# The URLconf, and with it the views and the agent stack (ADK, google-genai), imported here:
# under `gunicorn --preload` (`make run`) the master loads them once and its workers share
# those pages instead of each importing its own copy at its first request.
importlib.import_module(settings.ROOT_URLCONF)
# What is loaded now is kept out of the garbage collector's passes (Python's documented
# recipe before fork), so the workers' collections do not write to, and thereby copy, the
# pages they share with the master.
gc.freeze()
