"""How long a session lives: the TTL since last activity and the maximum age.

A session expires `AGENT_SESSION_TTL_HOURS` after its last activity, or
`AGENT_SESSION_MAX_AGE_HOURS` after it was created, whichever comes first. The
API treats an expired session as gone at once; the purge removes it later.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

logger = logging.getLogger(__name__)


def ttl(ttl_hours: float | None = None) -> dt.timedelta:
    return dt.timedelta(hours=settings.AGENT_SESSION_TTL_HOURS if ttl_hours is None else ttl_hours)


def max_age() -> dt.timedelta:
    return dt.timedelta(hours=settings.AGENT_SESSION_MAX_AGE_HOURS)


def expires_at(created_at: dt.datetime, last_activity_at: dt.datetime) -> dt.datetime:
    return min(last_activity_at + ttl(), created_at + max_age())


def expired_q(now: dt.datetime | None = None, ttl_hours: float | None = None) -> Q:
    """Sessions past their TTL or their maximum age at `now`."""
    now = now or timezone.now()
    return Q(last_activity_at__lte=now - ttl(ttl_hours)) | Q(created_at__lte=now - max_age())


# The last purge's outcome, whoever ran it: counts and an exception's type only. Kept in the
# cache (shared by every process: the SQLite cache file or Redis), not in the database, which
# may be the very thing that is full; best effort, and a failed run also logs one line.
LAST_PURGE_KEY = "retention:last-purge"

# The scheduled purge's task, as django-q2 stores it in its schedule (sessions_app/tasks.py).
PURGE_TASK = "sessions_app.tasks.purge_expired_sessions"
