"""ASGI entry point (gunicorn config.asgi:application, sessions_app/infra/supervisor.py)."""

import logging
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

django_application = get_asgi_application()

from agent.model_selection import log_model_choice  # noqa: E402  (needs Django set up)
from sessions_app.api.asgi_guard import ServerGuard  # noqa: E402

# Bodies over the limit, slow bodies and WebSocket handshakes are refused here, before Django
# reads anything (sessions_app/api/asgi_guard.py).
application = ServerGuard(django_application)

log_model_choice(logging.getLogger("config.startup"))
