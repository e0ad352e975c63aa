"""WSGI entry point (gunicorn config.wsgi, as `make run` does)."""

import logging
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = get_wsgi_application()

from agent.model_selection import log_model_choice  # noqa: E402  (needs Django set up)

log_model_choice(logging.getLogger("config.startup"))
