"""Counts every answer by its URL pattern, method and status (sessions_app/infra/metrics.py):
the route is the pattern the request matched (`request.resolver_match.route`, e.g.
`agent/sessions/<str:session_id>`), never the path, which holds session ids and receipt
lookups; a request no pattern matched is `unmatched`, a method outside HTTP's own is `other`."""

from django.utils.deprecation import MiddlewareMixin

from sessions_app.infra import metrics
from sessions_app.infra.loop_middleware import HooksOnTheLoop

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"})
UNMATCHED = "unmatched"


class AnswersByRoute(HooksOnTheLoop, MiddlewareMixin):
    def process_response(self, request, response):
        match = request.resolver_match
        route = match.route if match is not None else UNMATCHED
        method = request.method if request.method in METHODS else "other"
        metrics.ANSWERS.labels(route, method, str(response.status_code)).inc()
        return response
