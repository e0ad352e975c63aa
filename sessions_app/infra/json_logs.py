"""`LOG_FORMAT=json`: one JSON object per line (python-json-logger), for a log collector.

    {"time": "2026-12-04T21:03:07.123Z", "level": "WARNING", "logger": "django.request",
     "message": "Not Found: /agent/sessions/~1f2e3d4c", "request_id": "8c1d...", "status_code": 404}

The console handler is the same in both formats (config/settings/base.py), so its filters, the
redaction of the model libraries' records (redaction.py) and the loggable form of what a client
sent (log_lines.py) among them, have rewritten the record before this formatter reads it: the
message, its arguments, the traceback (`exc_info`) and the stack (`stack_info`) are those of the
text line. What JSON adds is the record's other attributes, the "extra" fields, and there:

- a record the redaction rewrote keeps none of them (a library's extra may hold a prompt);
- only a string, a number, a yes/no or null is written, a string in its loggable form (no
  session id, no control character): an object is left out whole, since its text is whatever
  its `repr` says (Django's `request`, for one, names the path and with it the session);
- the filters' own marks (`content_redacted`, `request_loggable`, `fields_loggable`) are not
  written.

Every line is ASCII (`\\uXXXX` for the rest), so no character a client sent can end a line for
any reader, and `request_id` (request_id.py) is the id of the request the record was written in.
"""

from __future__ import annotations

import logging
import time

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

from sessions_app.infra.log_lines import loggable
from sessions_app.infra.request_id import current_request_id

# The record's attributes every line starts with, as they are named in it.
FIELDS = {"asctime": "time", "levelname": "level", "name": "logger", "message": "message"}
# Written by the formatter itself from the record's traceback and stack, after the filters.
TRACES = ("exc_info", "stack_info")
# Set by the handler's filters for one another, or by a writer whose extra strings are in their
# loggable form already (gunicorn's access line: its path is shortened segment by segment, and a
# second pass would escape the escapes); not part of what was logged.
FILTER_MARKS = ("content_redacted", "request_loggable", "fields_loggable")
SCALARS = (str, int, float, bool, type(None))


class JsonLines(JsonFormatter):
    """The formatter `LOG_FORMAT=json` puts on the console handler (and on gunicorn's)."""

    default_time_format = "%Y-%m-%dT%H:%M:%S"
    default_msec_format = "%s.%03dZ"
    converter = time.gmtime

    def __init__(self):
        super().__init__(
            fmt=list(FIELDS),
            rename_fields=FIELDS,
            reserved_attrs=[*RESERVED_ATTRS, "taskName", *FILTER_MARKS],
            json_ensure_ascii=True,
        )

    def add_fields(self, log_data: dict, record: logging.LogRecord, message_dict: dict) -> None:
        super().add_fields(log_data, record, message_dict)
        kept = set(FIELDS.values()) | set(TRACES)
        redacted = getattr(record, "content_redacted", False)
        already_loggable = getattr(record, "fields_loggable", False)
        for key in [key for key in log_data if key not in kept]:
            value = log_data.pop(key)
            if redacted or not isinstance(value, SCALARS):
                continue
            if isinstance(value, str) and not already_loggable:
                value = loggable(value)
            log_data[loggable(str(key))] = value
        request_id = current_request_id()
        if request_id is not None:
            log_data["request_id"] = request_id
