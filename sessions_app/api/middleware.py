"""No cache may keep an answer of the session API.

Create answers with the token, export with everything stored, the other
endpoints with metadata or the conversation; errors too carry state. A
middleware covers every answer under the prefix, whichever layer made it
(views, DRF's error handling, the URL resolver's 404, Django's 500).

Only `no-store`: Django's `never_cache` would add an `Expires` date, which
would make the uniform 404's headers differ with the clock.
"""

import json
import logging

from django.db import DatabaseError
from django.http import HttpResponse
from django.utils.deprecation import MiddlewareMixin
from django.utils.translation import gettext as _

from sessions_app.api.errors import STORAGE_ANSWERS, forbid_storing
from sessions_app.infra.disk_space import is_disk_full
from sessions_app.infra.loop_middleware import HooksOnTheLoop

logger = logging.getLogger(__name__)

API_PREFIX = "/agent/"


class NoStoreForSessionAPI(HooksOnTheLoop, MiddlewareMixin):
    def process_response(self, request, response):
        if request.path_info.startswith(API_PREFIX):
            forbid_storing(response)
        return response


class DiskFullAnswers(HooksOnTheLoop, MiddlewareMixin):
    """A database that refuses a write for lack of space answers 507 on every page (the admin's,
    the schema's), never a 500 with a traceback; one log line, no content. The API's views answer
    it themselves (errors.api_exception_handler), in the same words."""

    def process_exception(self, request, exception):
        if not (isinstance(exception, DatabaseError) and is_disk_full(exception)):
            return None
        match = request.resolver_match
        logger.error(
            "database refused a write: disk full (%s in %s)",
            type(exception).__name__,
            match.view_name if match else "?",
        )
        message = _(STORAGE_ANSWERS["storage_full"])
        if request.path_info.startswith(API_PREFIX):
            body = json.dumps({"detail": message, "code": "storage_full"}, ensure_ascii=False)
            return forbid_storing(HttpResponse(body.encode(), status=507, content_type="application/json"))
        return HttpResponse(message, status=507, content_type="text/plain; charset=utf-8")
