"""How long a session lives: the TTL since last activity and the maximum age.

A session expires `SESSION_TTL_HOURS` after its last activity, or
`SESSION_MAX_AGE_HOURS` after it was created, whichever comes first. The
API treats an expired session as gone at once; the purge removes it later.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone


def ttl(ttl_hours: float | None = None) -> dt.timedelta:
    return dt.timedelta(hours=settings.SESSION_TTL_HOURS if ttl_hours is None else ttl_hours)


def max_age() -> dt.timedelta:
    return dt.timedelta(hours=settings.SESSION_MAX_AGE_HOURS)


def expires_at(created_at: dt.datetime, updated_at: dt.datetime) -> dt.datetime:
    return min(updated_at + ttl(), created_at + max_age())


def expired_q(now: dt.datetime | None = None, ttl_hours: float | None = None) -> Q:
    """Sessions past their TTL or their maximum age at `now`."""
    now = now or timezone.now()
    return Q(updated_at__lte=now - ttl(ttl_hours)) | Q(created_at__lte=now - max_age())


def live(sessions: QuerySet, now: dt.datetime | None = None) -> QuerySet:
    return sessions.exclude(expired_q(now))
