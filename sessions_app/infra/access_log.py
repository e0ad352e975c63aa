"""gunicorn's access line, each value in its loggable form (sessions_app/infra/log_lines.py):
every value the client chose (path, method, protocol, user agent, headers) escaped, and no
session id in any of them. gunicorn's `logger_class` setting names it
(sessions_app/infra/supervisor.py).

With LOG_FORMAT=json each worker writes its lines, access and error alike, as JSON objects
(json_logs.py): the same values, one field each, and the request's id (the ASGI guard, which runs
in the task that writes the access line, set it)."""

from contextvars import ContextVar

from gunicorn.glogging import Logger

from sessions_app.infra.json_logs import JsonLines
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


# The access line's values in a JSON line, by name (gunicorn's atoms, in their loggable form).
JSON_ATOMS = {
    "client": "h",
    "method": "m",
    "path": "U",
    "protocol": "H",
    "status": "s",
    "bytes": "b",
    "user_agent": "a",
    "duration_ms": "M",
}


class AccessLogger(Logger):
    as_json = False

    def lines_as_json(self) -> None:
        """From now on every line of this process is a JSON object (BoundedASGIWorker calls it)."""
        self.as_json = True
        for handler in (*self.error_log.handlers, *self.access_log.handlers):
            handler.setFormatter(JsonLines())

    def access(self, resp, req, environ, request_time):
        if (environ.get("PATH_INFO") or "") in PROBE_PATHS | METRICS_PATHS:
            return
        if not self.as_json:
            return super().access(resp, req, environ, request_time)
        if not self.access_log_enabled:
            return
        atoms = self.atoms(resp, req, environ, request_time)
        fields = {name: atoms.get(atom, "-") for name, atom in JSON_ATOMS.items()}
        for name in ("status", "bytes"):  # numbers, as a collector compares them ("-": none sent)
            fields[name] = int(fields[name]) if str(fields[name]).isdigit() else None
        self.access_log.info(
            "%s %s %s", fields["method"], fields["path"], fields["status"], extra={**fields, "fields_loggable": True}
        )

    def atoms(self, resp, req, environ, request_time):
        atoms = super().atoms(resp, req, environ, request_time)
        if CLIENT_WENT_AWAY.get():
            atoms["s"] = CLIENT_CLOSED_REQUEST
        for name, value in atoms.items():
            if isinstance(value, str):
                atoms[name] = loggable(value)
        atoms["U"] = loggable_path(environ.get("PATH_INFO") or "")
        return atoms
