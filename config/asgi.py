"""ASGI entry point (uvicorn config.asgi:application)."""

import logging
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = get_asgi_application()

from agent.model_selection import log_model_choice  # noqa: E402  (needs Django set up)

log_model_choice(logging.getLogger("config.startup"))
