"""The probes a load balancer, nginx or an orchestrator asks: `/healthz` (the process answers, no
I/O) and `/readyz` (it can do its work now: sessions_app.selectors_health).

Public and cheap: no token, never throttled (a probe every second from every balancer must never
be refused 429), never cached, HEAD as GET, and no access line (sessions_app/infra/access_log.py).
A stranger learns only ok or failing per check.
"""

from django.utils.cache import add_never_cache_headers
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from sessions_app import selectors_health
from sessions_app.api.schema import NOT_ACCEPTABLE
from sessions_app.api.serializers import HealthResponse, ReadinessResponse
from sessions_app.choices import CheckStatus


class ProbeView(APIView):
    authentication_classes = []
    permission_classes = []
    throttle_classes = []  # asked every second by whatever balances the load: never refused

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        add_never_cache_headers(response)  # no proxy answers a probe from its cache
        return response


class HealthView(ProbeView):
    @extend_schema(
        responses={200: HealthResponse, 406: NOT_ACCEPTABLE},
        summary="Liveness: the process answers (no database, cache or disk is asked)",
    )
    def get(self, request):
        return Response({"status": CheckStatus.OK.value})


class ReadinessView(ProbeView):
    @extend_schema(
        responses={
            200: OpenApiResponse(ReadinessResponse, description="Every check is ok (or not configured here)."),
            503: OpenApiResponse(ReadinessResponse, description="At least one check is failing."),
            406: NOT_ACCEPTABLE,
        },
        summary="Readiness: the database, its migrations, the cache, the disk, the purge schedule, the signing key",
    )
    def get(self, request):
        readiness = selectors_health.readiness()
        body = {
            "status": (CheckStatus.OK if readiness.ready else CheckStatus.FAILING).value,
            "checks": {name.value: outcome.value for name, outcome in readiness.checks.items()},
        }
        return Response(body, status=status.HTTP_200_OK if readiness.ready else status.HTTP_503_SERVICE_UNAVAILABLE)
