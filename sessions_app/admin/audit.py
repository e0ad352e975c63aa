"""The deletion audit in the admin: counts only, read-only."""

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from sessions_app.admin.read_only import ReadOnlyAdmin
from sessions_app.models import DeletionAudit


@admin.register(DeletionAudit)
class DeletionAuditAdmin(ReadOnlyAdmin):
    """What was deleted, when and why: counts only, and nobody edits history."""

    list_display = ["when", "trigger", "sessions_deleted", "events_deleted", "duration"]
    list_filter = ["trigger"]

    @admin.display(description=_("when"), ordering="created_at")
    def when(self, audit):
        return audit.created_at

    @admin.display(description=_("duration"), ordering="duration_ms")
    def duration(self, audit):
        return f"{audit.duration_ms} ms"
