"""A JSON parser with limits on body size and nesting depth.

The API's body limit, API_MAX_BODY_BYTES, is enforced here and answers 413.
(DRF hands a JSON parser Django's request.body, so a body over Django's
larger DATA_UPLOAD_MAX_MEMORY_SIZE fails before this parser runs; the API's
error handler answers that with the same 413.)

The API takes flat objects: a body nested deeper than MAX_JSON_DEPTH answers
400. Python's json parser raises RecursionError on about a thousand levels
(which DRF would let through as a 500), and anything that walks a parsed
value recursively would fail the same way on fewer.
"""

import io

from django.conf import settings
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser, MultiPartParser

MAX_JSON_DEPTH = 32


class BodyTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = _("The request body is too large.")
    default_code = "body_too_large"


class InvalidJSON(exceptions.ParseError):
    default_detail = _("The request body is not valid JSON.")


class NestedTooDeep(exceptions.ParseError):
    default_code = "nested_too_deep"

    def __init__(self):
        super().__init__(_("The JSON is nested too deeply: at most %(limit)d levels.") % {"limit": MAX_JSON_DEPTH})


def nesting_depth_exceeds(value, limit: int) -> bool:
    """Whether `value` holds lists or objects nested more than `limit` deep.

    Level by level, without recursion; each level is a comprehension, which
    keeps a body of many small containers cheap to check.
    """
    level = [value]
    for _level in range(limit + 1):
        containers = [item for item in level if isinstance(item, (list, dict))]
        if not containers:
            return False
        level = [child for item in containers for child in (item.values() if isinstance(item, dict) else item)]
    return True


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
        try:
            data = super().parse(io.BytesIO(body), media_type, parser_context)
        except RecursionError:
            raise NestedTooDeep() from None
        except exceptions.ParseError:
            # DRF's message carries the json module's, in English whatever the client asked for.
            raise InvalidJSON() from None
        if nesting_depth_exceeds(data, MAX_JSON_DEPTH):
            raise NestedTooDeep()
        return data


class LimitedMultiPartParser(MultiPartParser):
    """A form with a resume file (POST /agent/sessions): at most UPLOAD_MAX_BODY_BYTES, refused by
    its Content-Length before a byte is read (the ASGI guard refuses it first under `make run`).
    The file is held by Django's MemoryFileUploadHandler alone (settings.FILE_UPLOAD_HANDLERS)."""

    def parse(self, stream, media_type=None, parser_context=None):
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and declared.isdigit() and int(declared) > settings.UPLOAD_MAX_BODY_BYTES:
            raise BodyTooLarge()
        return super().parse(stream, media_type, parser_context)
