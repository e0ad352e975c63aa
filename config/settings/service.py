"""What the served service adds to base.py: the web workers' database pool, the server's
timeouts and heartbeat, and a secret key that must be given (or, with DEBUG, is kept in var/).

`config.settings` (make run, manage.py, the servers) is base.py plus this; config/settings/test.py
builds on it too, since the tests drive the same server code.
"""

import functools

from django.core.exceptions import ImproperlyConfigured
from django.utils.functional import lazy

from config.env import env
from config.settings.base import *  # noqa: F403
from config.settings.base import DATABASES, DEBUG, SECRET_KEY, VAR_DIR
from sessions_app.infra.private_files import private_directory, read_or_create_secret_key


@functools.cache
def _secret_key_in_var() -> str:
    if not DEBUG:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off (make run sets one for you)."
        )
    return read_or_create_secret_key(private_directory(VAR_DIR) / "secret_key")


# With DEBUG on and no DJANGO_SECRET_KEY, var/secret_key is read, or made (0600): random per
# var/ but shared by every process on it, so an admin login works across workers and restarts.
# Read when first used, not here (importing settings writes nothing); with DEBUG off, that
# first use refuses to go on.
SECRET_KEY = SECRET_KEY or lazy(_secret_key_in_var, str)()

# A web server process serves hundreds of requests at once (ASGI): without a pool each would
# open a connection of its own, past PostgreSQL's max_connections. `manage.py serve` gives its
# web workers a pool of this many (a request that waits DATABASE_POOL_TIMEOUT_SECONDS for one
# is answered 503 `busy`); not the scheduler, whose forked workers must not share one.
DATABASE_POOL_SIZE = env.int("DATABASE_POOL_SIZE", default=0)
if DATABASE_POOL_SIZE and DATABASES["default"]["ENGINE"] != "sessions_app.infra.sqlite_backend":
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": DATABASE_POOL_SIZE,
        "timeout": env.float("DATABASE_POOL_TIMEOUT_SECONDS", default=10.0),
    }

# A streamed turn (Accept: text/event-stream) sends a comment line this often while the model
# works: a client that went away is noticed when such a write fails, and its turn is stopped.
STREAM_HEARTBEAT_SECONDS = env.float("STREAM_HEARTBEAT_SECONDS", default=1.0)

# The bare server's timeouts (sessions_app/infra/asgi_worker.py, the ASGI guard): a new
# connection's request headers, a request's whole body, and a response the client stops reading
# (no progress for this long drops the connection and frees what it held). Idle kept-alive
# connections: gunicorn's --keep-alive (sessions_app/infra/supervisor.py).
SERVER_HEADER_TIMEOUT_SECONDS = env.float("SERVER_HEADER_TIMEOUT_SECONDS", default=10.0)
SERVER_BODY_TIMEOUT_SECONDS = env.float("SERVER_BODY_TIMEOUT_SECONDS", default=30.0)
SERVER_SEND_TIMEOUT_SECONDS = env.float("SERVER_SEND_TIMEOUT_SECONDS", default=30.0)
# Idle request threads each server process keeps for the next requests (sessions_app/infra/
# request_threads.py); 0: a thread of its own for every request, Django's default. Past this many
# requests at once, the surplus threads end with their requests.
SERVER_REQUEST_THREADS_KEPT = env.int("SERVER_REQUEST_THREADS_KEPT", default=32)
