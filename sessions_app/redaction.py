"""Keeps resumes, messages and tokens out of logs and error pages.

Logs: google-adk and google-genai write whole requests (the system
instruction holds the resume) and responses at DEBUG. Their loggers are set
to INFO in settings.LOGGING, and `DropLibraryDebugRecords` on our handlers
drops their DEBUG records as well, so lowering a logger's level (or
DJANGO_LOG_LEVEL) never puts a resume into a log.

Error pages: Django's SafeExceptionReporterFilter honours
`sensitive_variables` / `sensitive_post_parameters` only when DEBUG is off,
on the grounds that a DEBUG site is unsafe anyway. A developer's debug page
is still a screen someone may share, so ours always hides what is marked.
"""

import logging

from django.views.debug import SafeExceptionReporterFilter

CONTENT_LOGGING_LIBRARIES = ("google_adk", "google_genai", "google.genai", "httpx", "httpcore")


class DropLibraryDebugRecords(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.INFO or not record.name.startswith(CONTENT_LOGGING_LIBRARIES)


class AlwaysSafeExceptionReporterFilter(SafeExceptionReporterFilter):
    def is_active(self, request) -> bool:
        return True
