"""A JSON parser with a body size limit.

DRF reads the request stream itself, so Django's DATA_UPLOAD_MAX_MEMORY_SIZE
never applies to API bodies; this parser enforces it and answers 413.
"""

import io

from django.conf import settings
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser


class BodyTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = _("請求內容太大")
    default_code = "body_too_large"


class LimitedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.API_MAX_BODY_BYTES
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and declared.isdigit() and int(declared) > limit:
            raise BodyTooLarge()
        body = stream.read(limit + 1) if stream is not None else b""
        if len(body) > limit:
            raise BodyTooLarge()
        return super().parse(io.BytesIO(body), media_type, parser_context)
