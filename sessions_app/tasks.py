"""django-q2 tasks. They take no arguments and return counts only: whatever a
task is given or returns is stored in django-q2's tables."""

from .models import DeletionAudit
from .retention import purge_expired


def purge_expired_sessions() -> dict:
    return purge_expired(trigger=DeletionAudit.Trigger.TTL).as_dict()
