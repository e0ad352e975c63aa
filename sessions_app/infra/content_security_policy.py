"""django-csp's middleware, sending the policy's directives in one fixed order.

django-csp builds the header from a set of directive names, so their order follows
Python's per-process string hashing: two gunicorn workers would spell the same policy
differently, and the one uniform 404 would not be the same bytes from every worker.
Sorted by directive name (a stable sort: the order of a repeated name is kept, since
the first one counts), every process sends the same header. The policy itself is in
settings (CONTENT_SECURITY_POLICY, the last block).
"""

from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CSPMiddleware

from sessions_app.infra.loop_middleware import HooksOnTheLoop


def in_fixed_order(policy: str) -> str:
    directives = [part.strip() for part in policy.split(";") if part.strip()]
    return "; ".join(sorted(directives, key=lambda directive: directive.split()[0].lower()))


class FixedOrderCSPMiddleware(HooksOnTheLoop, CSPMiddleware):
    def process_response(self, request, response):
        response = super().process_response(request, response)
        for header in (HEADER, HEADER_REPORT_ONLY):
            if header in response:
                response[header] = in_fixed_order(response[header])
        return response
