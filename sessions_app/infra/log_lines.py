"""What a log line may say of a request: its path, escaped, without a session's id.

The access line printed the decoded path: `%0A` wrote a forged line, `%1B[2J` cleared the
operator's terminal, NUL cut the line for some readers. And each line named the session (an id
that opens nothing without its token, but that links a person's requests, and with which anyone
could ask the public deletion log about them): so did Django's "Not Found" warnings.

- Every character Python does not call printable (controls, C1, format characters, separators
  other than the space, surrogates, unassigned code points), and the backslash that starts an
  escape, is written as `\\xNN`, `\\uNNNN` or
  `\\UNNNNNNNN`: one request, one line, no terminal escape.
- The segment after `/agent/sessions/` and after `/deletions/` (a receipt's lookup value, except
  the log's own `checkpoint` and `consistency`) is replaced by `~` and 8 hex digits of its SHA-256:
  enough to tell one session's lines from another's, not to find the session (the token is
  never in a path, and the query string never reaches a log: supervisor.ACCESS_LOG_FORMAT).
"""

import hashlib
import logging
import re

_NAMING_PREFIX = r"(/agent/sessions/|/deletions/(?!(?:checkpoint|consistency)(?:[/?#\s]|$)))"
# In a path: the whole segment, whatever it holds. In a line quoting a path (already escaped):
# up to the next separator.
_NAMED_IN_PATH = re.compile(_NAMING_PREFIX + r"([^/]+)")
_NAMED_IN_TEXT = re.compile(_NAMING_PREFIX + r"([^/?#\s\"']+)")
SHORT_FORM_DIGITS = 8


def short_form(value: str) -> str:
    return "~" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:SHORT_FORM_DIGITS]


def _escaped(character: str) -> str:
    code = ord(character)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escaped(text: str) -> str:
    """`text` with every non-printable character, and the backslash, written as an escape."""
    return "".join(_escaped(c) if c == "\\" or not c.isprintable() else c for c in text)


def _shortened(pattern: re.Pattern, text: str) -> str:
    return pattern.sub(lambda match: match.group(1) + short_form(match.group(2)), text)


def loggable_path(path: str) -> str:
    """A request's path as a log line may carry it."""
    return escaped(_shortened(_NAMED_IN_PATH, path))


def loggable(text: str) -> str:
    """Any other text a client chose (a header, a line that quotes a path) as a log may carry it."""
    return _shortened(_NAMED_IN_TEXT, escaped(text))


class LoggableRequestRecords(logging.Filter):
    """Django's request warnings ("Not Found: <path>", "Bad Request: <path>", the refused Host)
    carry the path or a header as the client sent it: rewritten to their loggable form, and a
    refused Host logged as one warning line instead of an ERROR with its traceback."""

    LOGGERS = ("django.request", "django.security", "django.server")

    def filter(self, record: logging.LogRecord) -> bool:
        if not any(record.name == name or record.name.startswith(name + ".") for name in self.LOGGERS):
            return True
        if getattr(record, "request_loggable", False):  # by another handler's filter
            return True
        record.request_loggable = True
        message = loggable(record.getMessage())
        path = getattr(getattr(record, "request", None), "path", None)
        if path:
            # As the message quotes it: Django's log_response escapes its arguments with
            # unicode_escape, and then the text was escaped once more, above.
            quoted = loggable(path.encode("unicode_escape").decode("ascii"))
            message = message.replace(quoted, loggable_path(path))
        record.msg, record.args = message, ()
        record.__dict__.pop("message", None)
        if record.name.startswith("django.security."):
            # A client's bad input (a Host not allowed, a malformed request): nothing of ours failed.
            record.exc_info = record.exc_text = record.stack_info = None
            record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        return True
