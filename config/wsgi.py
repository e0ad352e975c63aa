"""WSGI entry point, for `manage.py runserver` and tools that take a WSGI application (the
schema fuzzer, tests/api/test_openapi_schemathesis.py). The service is served over ASGI
(config/asgi.py)."""

import logging
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = get_wsgi_application()

from agent.model_selection import log_model_choice  # noqa: E402  (needs Django set up)

log_model_choice(logging.getLogger("config.startup"))
