"""The deletion audit in the admin: counts only, read-only."""

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from sessions_app.models import DeletionAudit


@admin.register(DeletionAudit)
class DeletionAuditAdmin(admin.ModelAdmin):
    """What was deleted, when and why: counts only, and nobody edits history."""

    list_display = ["when", "trigger", "sessions_deleted", "events_deleted", "duration"]
    list_filter = ["trigger"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description=_("when"), ordering="created_at")
    def when(self, audit):
        return audit.created_at

    @admin.display(description=_("duration"), ordering="duration_ms")
    def duration(self, audit):
        return f"{audit.duration_ms} ms"
