"""The OpenAPI schema's view: drf-spectacular's, counted per client like every costly public read."""

from drf_spectacular.views import SpectacularAPIView
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from sessions_app.api.throttles import SCHEMA_THROTTLES


class SchemaView(SpectacularAPIView):
    """`/api/schema/`: built afresh on each request (about 136 ms of CPU), so throttled per client
    address and IPv6 network (settings: `schema`). Its errors (the 429) are JSON like the rest of
    the API, not YAML, whatever format the schema itself is asked in."""

    throttle_classes = SCHEMA_THROTTLES

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if isinstance(response, Response) and response.status_code >= 400:
            response.accepted_renderer, response.accepted_media_type = JSONRenderer(), JSONRenderer.media_type
        return response
