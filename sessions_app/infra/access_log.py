"""gunicorn's access line, each value in its loggable form (sessions_app/infra/log_lines.py):
every value the client chose (path, method, protocol, user agent, headers) escaped, and no
session id in any of them. gunicorn's `logger_class` setting names it
(sessions_app/infra/supervisor.py)."""

from contextvars import ContextVar

from gunicorn.glogging import Logger

from sessions_app.infra.log_lines import loggable, loggable_path

# Set by the ASGI guard (sessions_app/api/asgi_guard.py) when the client went away before any
# answer: gunicorn then logs a 500 of its own ("no response"), though nothing failed. The
# access line says 499 instead, nginx's "client closed request". (The guard runs in the task
# that writes the access line, so it sees the value the guard set.)
CLIENT_WENT_AWAY = ContextVar("client_went_away", default=False)
CLIENT_CLOSED_REQUEST = "499"
# The probes (config/urls.py, sessions_app/api/health.py): a load balancer asks them every second,
# and a line each would bury the requests people make. What they answer is on the admin's retention
# page whenever asked; a failing /readyz is still logged, by Django, at ERROR.
PROBE_PATHS = frozenset({"/healthz", "/readyz"})
# The metrics (sessions_app/api/scrape.py): a scraper asks every few seconds (docs/OBSERVABILITY.md).
METRICS_PATHS = frozenset({"/metrics"})


class AccessLogger(Logger):
    def access(self, resp, req, environ, request_time):
        if (environ.get("PATH_INFO") or "") in PROBE_PATHS | METRICS_PATHS:
            return
        super().access(resp, req, environ, request_time)

    def atoms(self, resp, req, environ, request_time):
        atoms = super().atoms(resp, req, environ, request_time)
        if CLIENT_WENT_AWAY.get():
            atoms["s"] = CLIENT_CLOSED_REQUEST
        for name, value in atoms.items():
            if isinstance(value, str):
                atoms[name] = loggable(value)
        atoms["U"] = loggable_path(environ.get("PATH_INFO") or "")
        return atoms
