"""django-q2 tasks. They take no arguments and return counts only: whatever a
task is given or returns is stored in django-q2's tables."""

import logging

from sessions_app import account_services
from sessions_app.choices import ErasureTrigger
from sessions_app.deletion_log import verification as log_verification
from sessions_app.infra.disk_space import is_disk_full
from sessions_app.purge import purge_expired

logger = logging.getLogger(__name__)


def purge_expired_sessions() -> dict:
    """The scheduled purge, then the idle accounts' purge. A run that fails logs one line (the
    reason: "disk full" or the exception's type, never its message) and returns {"failed": reason}: raised, django-q2
    would log the traceback too. The admin reads either outcome (selectors_admin.retention_policy)."""
    try:
        purged = purge_expired(trigger=ErasureTrigger.TTL).as_dict()
        # Then the passkey accounts left keeping no session (after ACCOUNT_PURGE_AFTER_DAYS), and the
        # challenges and sign-ins past their time: counts only (docs/ACCOUNTS.md).
        purged["accounts"] = account_services.accounts_purge().accounts
        return purged
    except Exception as exc:
        reason = "disk_full" if is_disk_full(exc) else type(exc).__name__
        logger.error("scheduled purge could not run: %s", reason.replace("_", " "))
        return {"failed": reason}


def verify_deletion_log() -> dict:
    """The admin's check of the whole deletion log (sessions_app.deletion_log.verification): its outcome is
    on the admin's deletion-log page; it returns counts and the outcome's name only."""
    return log_verification.run()
