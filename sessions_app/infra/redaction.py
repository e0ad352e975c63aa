"""Keeps resumes, messages and tokens out of logs and error pages.

Logs: google-adk, google-genai and their HTTP clients write whole requests
(the system instruction holds the resume) and responses at DEBUG, the user's
message at INFO, and model errors (whose text may quote the prompt or the
model's output) with tracebacks at ERROR. `RedactLibraryRecords` on our
handler drops their DEBUG records and rewrites every other record of theirs
to the logger name, the level, and the exception's type and status code. It
rewrites the same way any record that carries one of their exceptions
(asyncio's "Task exception was never retrieved", for one), whichever logger
wrote it, since the exception's text comes with it. The loggers also stay at
INFO (settings.LOGGING), so lowering DJANGO_LOG_LEVEL changes nothing.

Error pages: Django's SafeExceptionReporterFilter honours
`sensitive_variables` / `sensitive_post_parameters` only when DEBUG is off,
on the grounds that a DEBUG site is unsafe anyway. A developer's debug page
is still a screen someone may share, so ours always hides what is marked.
"""

import logging

from django.views.debug import SafeExceptionReporterFilter

# Logger names, and the modules whose exceptions may carry a prompt or a reply.
# (websockets carries google-genai's live API and logs its frames at DEBUG.)
CONTENT_LOGGING_LIBRARIES = ("google_adk", "google_genai", "google.genai", "httpx", "httpcore", "websockets")
CONTENT_EXCEPTION_MODULES = ("google.adk", "google.genai", "httpx", "httpcore", "websockets")
# asyncio logs a failed task's exception with its repr in the message itself.
EXCEPTION_QUOTING_LOGGERS = ("asyncio",)


def _in_package(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == package or name.startswith(package + ".") for package in packages)


def _exception_chain(exc: BaseException | None):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _status_code(exc: BaseException | None) -> int | None:
    """google-genai's APIError.code, httpx's response.status_code: an int, never text."""
    for candidate in (getattr(exc, "code", None), getattr(getattr(exc, "response", None), "status_code", None)):
        if isinstance(candidate, int) and not isinstance(candidate, bool):
            return candidate
    return None


class RedactLibraryRecords(logging.Filter):
    """Drops the libraries' DEBUG records and reduces the rest to name, level, exception type and code.

    The record is rewritten in place (Python 3.11 filters cannot swap it), so
    handlers after this one see the redacted record too.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        from_library = _in_package(record.name, CONTENT_LOGGING_LIBRARIES)
        if from_library and record.levelno < logging.INFO:
            return False
        if getattr(record, "content_redacted", False):  # by another handler's filter
            return True
        exc = record.exc_info[1] if record.exc_info else None
        carries_library_exception = any(
            _in_package(type(link).__module__, CONTENT_EXCEPTION_MODULES) for link in _exception_chain(exc)
        )
        quotes_exception = exc is not None and _in_package(record.name, EXCEPTION_QUOTING_LOGGERS)
        if from_library or carries_library_exception or quotes_exception:
            self._redact(record, exc)
        return True

    @staticmethod
    def _redact(record: logging.LogRecord, exc: BaseException | None) -> None:
        summary = f"{record.name} record redacted:"
        if exc is not None:
            code = _status_code(exc)
            summary += f" {type(exc).__name__}" + (f" {code}" if code is not None else "")
        record.msg, record.args = summary, ()
        record.exc_info = record.exc_text = record.stack_info = None
        record.__dict__.pop("message", None)  # the text a formatter before us computed
        record.content_redacted = True


class AlwaysSafeExceptionReporterFilter(SafeExceptionReporterFilter):
    def is_active(self, request) -> bool:
        return True
