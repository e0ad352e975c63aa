"""The deletion log in the admin: its size, the latest checkpoint, the public key, and a check
of the whole log (a background task: its progress and outcome show on the page). Read-only:
nobody adds, changes or deletes a log row here (or anywhere)."""

import datetime as dt

from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.urls import path
from django.utils import formats
from django.utils.formats import number_format
from django.utils.translation import gettext as _

from sessions_app import selectors_admin
from sessions_app.admin.read_only import ReadOnlyAdmin
from sessions_app.deletion_log import verification as log_verification
from sessions_app.deletion_log.verification import Start, State
from sessions_app.models import DeletionLogCheckpoint


def grouped(count: int) -> str:
    """A count as the language writes it (12,345), in a message."""
    return number_format(count, force_grouping=True)


def _when(iso: str) -> str:
    return formats.date_format(dt.datetime.fromisoformat(iso), "DATETIME_FORMAT")


def verification_text(found: log_verification.Verification | None) -> str | None:
    """What the page says of the latest check of the whole log, in the reader's language."""
    if found is None:
        return None
    when = {"started": _when(found.started_at), "finished": _when(found.finished_at or found.started_at)}
    if found.state == State.QUEUED:
        return _("Queued at %(started)s UTC: it starts when the task worker is free.") % when
    if found.state == State.RUNNING:
        return _("Running since %(started)s UTC: %(checked)s of %(size)s entries checked.") % {
            **when,
            "checked": grouped(found.checked),
            "size": grouped(found.size),
        }
    if found.state == State.VERIFIED:
        said = _("The deletion log verifies: %(entries)s entries and every signed checkpoint agree.")
        return said % {"entries": grouped(found.checked)} + " " + _("(Checked %(finished)s UTC.)") % when
    if found.state == State.BROKEN:
        said = _("The deletion log does NOT verify: %(problem)s.") % {"problem": found.problem}
        return said + " " + _("(Checked %(finished)s UTC.)") % when
    return _(
        "The check started at %(started)s UTC stopped before its end (%(reason)s), after %(checked)s entries:"
        " start it again."
    ) % {**when, "reason": found.problem, "checked": grouped(found.checked)}


@admin.register(DeletionLogCheckpoint)
class DeletionLogCheckpointAdmin(ReadOnlyAdmin):
    """The signed checkpoints, newest first; the list page also shows the log as a whole."""

    list_display = ["size", "signed_at"]
    list_display_links = None  # the list says it all; the signed notes are on the list page
    ordering = ["-size"]
    change_list_template = "admin/sessions_app/deletionlogcheckpoint/change_list.html"

    def get_urls(self):
        info = self.opts.app_label, self.opts.model_name
        verify = path("verify/", self.admin_site.admin_view(self.verify_view), name="{}_{}_verify".format(*info))
        return [verify] + super().get_urls()

    def changelist_view(self, request, extra_context=None):
        latest = log_verification.latest()
        extra_context = {
            **(extra_context or {}),
            "title": _("Deletion log"),
            "log": selectors_admin.deletion_log_status(),
            "verification": verification_text(latest),
            "verification_state": latest and str(latest.state),
        }
        return super().changelist_view(request, extra_context)

    def verify_view(self, request):
        """Starts the check of the whole log in the background (POST only: it reads the whole
        log), one at a time, at most one start per staff user every few minutes."""
        if request.method != "POST":
            return redirect(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
        if not self.has_view_permission(request):
            raise PermissionDenied
        started = log_verification.start(request.user.pk)
        if started == Start.STARTED:
            self.message_user(request, _("The check of the whole log has started: it shows below."), messages.INFO)
        elif started == Start.ALREADY_RUNNING:
            self.message_user(
                request, _("A check of the whole log is already running: its progress shows below."), messages.WARNING
            )
        else:
            minutes = max(1, settings.DELETION_LOG_VERIFY_INTERVAL_SECONDS // 60)
            self.message_user(
                request,
                _("You started a check of the whole log less than %(minutes)d min ago: wait, then start it again.")
                % {"minutes": minutes},
                messages.WARNING,
            )
        return redirect(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
