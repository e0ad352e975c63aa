"""The deletion log in the admin: its size, the latest checkpoint, the public key, and a check
of the whole log. Read-only: nobody adds, changes or deletes a log row here (or anywhere)."""

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.urls import path
from django.utils.translation import gettext_lazy as _

from sessions_app import selectors
from sessions_app.admin.read_only import ReadOnlyAdmin
from sessions_app.models import DeletionLogCheckpoint
from sessions_app.storage.deletion_log import LogBroken


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
        extra_context = {**(extra_context or {}), "title": _("Deletion log"), "log": selectors.deletion_log_status()}
        return super().changelist_view(request, extra_context)

    def verify_view(self, request):
        """Recomputes the tree from every entry and checks every checkpoint (POST only: it reads the
        whole log)."""
        if request.method != "POST":
            return redirect(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
        if not self.has_view_permission(request):
            raise PermissionDenied
        try:
            checked = selectors.verify_deletion_log()
        except LogBroken as broken:
            self.message_user(
                request, _("The deletion log does NOT verify: %(problem)s.") % {"problem": broken}, messages.ERROR
            )
        else:
            self.message_user(
                request,
                _("The deletion log verifies: %(entries)d entries and every signed checkpoint agree.")
                % {"entries": checked},
                messages.SUCCESS,
            )
        return redirect(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
