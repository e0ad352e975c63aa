"""Sessions in the admin: metadata, secure deletion, the purge and the retention policy pages."""

from __future__ import annotations

import datetime as dt

import django_q.admin  # noqa: F401  registers django-q2's pages first, so they can be removed below
from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.auth import get_permission_codename
from django.core.exceptions import PermissionDenied
from django.db import DatabaseError
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path
from django.utils import formats, timezone
from django.utils.formats import number_format
from django.utils.translation import gettext_lazy as _
from django_q.models import Failure, OrmQ, Schedule, Success

from sessions_app import erasure, purge, selectors_admin, selectors_health, services
from sessions_app.infra import disk_space
from sessions_app.models import AgentSession, DeletionAudit


def grouped(count: int) -> str:
    """A count as the language writes it (12,345), in a message."""
    return number_format(count, force_grouping=True)


TEMPLATES = "admin/sessions_app/agentsession"

for django_q_model in (Schedule, OrmQ, Success, Failure):
    if admin.site.is_registered(django_q_model):
        admin.site.unregister(django_q_model)


def time_left(expires_at: dt.datetime, now: dt.datetime) -> str:
    """'6 d 23 h', '5 h 12 min', '12 min', or that the purge has yet to come."""
    if expires_at <= now:
        return _("expired, awaiting purge")
    minutes = int((expires_at - now).total_seconds() // 60)
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    if days:
        return _("%(days)d d %(hours)d h") % {"days": days, "hours": hours}
    if hours:
        return _("%(hours)d h %(minutes)d min") % {"hours": hours, "minutes": minutes}
    return _("%(minutes)d min") % {"minutes": minutes} if minutes else _("under 1 min")


def local_time(moment: dt.datetime | None) -> str:
    # Formatted as the list formats datetimes; the detail page would print a method's datetime raw.
    return formats.localize(timezone.template_localtime(moment)) if moment else "-"


class PurgeIntervalForm(forms.Form):
    """The one setting of the purge schedule the admin may change."""

    minutes = forms.IntegerField(
        label=_("Purge every (minutes)"),
        min_value=services.PURGE_INTERVAL_MIN_MINUTES,
        max_value=services.PURGE_INTERVAL_MAX_MINUTES,
        help_text=_("From 1 to 1440 (once a day). The new interval counts from the next run."),
    )


EXPIRING_SOON = dt.timedelta(hours=1)


class RetentionStatusFilter(admin.SimpleListFilter):
    title = _("status")
    parameter_name = "status"

    def lookups(self, request, model_admin):
        return [("expired", _("expired")), ("expiring", _("expiring within 1 h")), ("live", _("live"))]

    def queryset(self, request, queryset):
        if self.value() == "expired":
            return queryset.expired()
        if self.value() == "expiring":
            return queryset.expiring(EXPIRING_SOON)
        if self.value() == "live":
            return queryset.live()
        return queryset


# Times and sizes, never content: what the list and a session's page both show.
SESSION_METADATA_FIELDS = ["created", "last_activity", "expires", "time_left", "event_count", "size_bytes"]


@admin.register(AgentSession)
class AgentSessionAdmin(admin.ModelAdmin):
    list_display = ["short_id", "owner", *SESSION_METADATA_FIELDS]
    list_filter = [RetentionStatusFilter]
    search_fields = ["^session_id"]
    search_help_text = _("Session id, or its first characters.")
    ordering = ["-last_activity_at"]
    actions = ["delete_selected_securely"]
    change_list_template = f"{TEMPLATES}/change_list.html"
    # Metadata only: the state holds the resume, and events are not shown at all.
    exclude = ["state"]
    fields = [
        "session_id",
        "owner",
        "app_name",
        *SESSION_METADATA_FIELDS,
        "revision",
        "turn_running",
        "model_providers",
        "plan_versions",
    ]
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).with_usage()

    def lookup_allowed(self, lookup, value, request):
        # Django accepts a filter on any field from the URL (?state__icontains=...),
        # which would tell staff which sessions' resumes contain a word. The
        # status filter is the only one the list offers.
        return lookup == RetentionStatusFilter.parameter_name

    def get_urls(self):
        info = self.opts.app_label, self.opts.model_name
        return [
            path("purge/", self.admin_site.admin_view(self.purge_view), name="{}_{}_purge".format(*info)),
            path("policy/", self.admin_site.admin_view(self.policy_view), name="{}_{}_policy".format(*info)),
        ] + super().get_urls()

    # --- permissions ---------------------------------------------------------

    def has_add_permission(self, request):
        return False  # sessions start through the API only

    def has_change_permission(self, request, obj=None):
        return False  # operators look at sessions; only their owners change them

    def has_delete_permission(self, request, obj=None):
        # Django's own deletion (the delete_selected action, the change page's
        # Delete button) calls Model.delete(): no audit row, and the owner's
        # `user:` state stays behind. Erasing below replaces both.
        return False

    def has_erase_permission(self, request):
        """Erasing sessions, one by one or by purge, needs Django's delete permission."""
        codename = get_permission_codename("delete", self.opts)
        return request.user.has_perm(f"{self.opts.app_label}.{codename}")

    # --- columns -------------------------------------------------------------

    # In words, not Django's boolean icon, whose alternative text is "True"/"False" in every language.
    @admin.display(description=_("turn running"))
    def turn_running(self, session):
        return _("yes") if selectors_admin.turn_running(session) else _("no")

    @admin.display(description=_("session"), ordering="session_id")
    def short_id(self, session):
        return session.session_id[:8]

    @admin.display(description=_("owner"), ordering="owner_id")
    def owner(self, session):
        return session.owner_id[:12]

    @admin.display(description=_("created"), ordering="created_at")
    def created(self, session):
        return local_time(session.created_at)

    @admin.display(description=_("last activity"), ordering="last_activity_at")
    def last_activity(self, session):
        return local_time(session.last_activity_at)

    @admin.display(description=_("expires at"), ordering="expires_at")
    def expires(self, session):
        return local_time(session.expires_at)

    @admin.display(description=_("time left"), ordering="expires_at")
    def time_left(self, session):
        return time_left(session.expires_at, timezone.now())

    @admin.display(description=_("events"), ordering="event_count")
    def event_count(self, session):
        return session.event_count

    @admin.display(description=_("size (bytes)"), ordering="size_bytes")
    def size_bytes(self, session):
        return session.size_bytes

    # --- erasing -------------------------------------------------------------

    @admin.action(description=_("Delete selected sessions (secure)"), permissions=["erase"])
    def delete_selected_securely(self, request, queryset):
        if request.POST.get("post") != "yes":
            return TemplateResponse(
                request,
                f"{TEMPLATES}/delete_selected_confirmation.html",
                {
                    **self.admin_site.each_context(request),
                    "title": _("Delete sessions for good?"),
                    "opts": self.opts,
                    "sessions": queryset,
                    "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                },
            )
        erased = erasure.erase_sessions(queryset, trigger=DeletionAudit.Trigger.ADMIN)
        self.message_user(
            request,
            _("Deleted %(sessions)s sessions and %(events)s events for good.")
            % {"sessions": grouped(erased.sessions), "events": grouped(erased.events)},
            messages.SUCCESS,
        )
        return None  # back to the list

    def purge_view(self, request):
        if not self.has_erase_permission(request):
            raise PermissionDenied
        if request.method == "POST":
            try:
                result = purge.purge_expired(trigger=DeletionAudit.Trigger.ADMIN)
            except DatabaseError as exc:
                if not disk_space.is_disk_full(exc):
                    raise
                self.message_user(
                    request,
                    _(
                        "The purge could not run: the database's disk is full,"
                        " even with the erasure reserve given back."
                    ),
                    messages.ERROR,
                )
                return redirect(request.path)
            self.message_user(
                request,
                _("Purged %(sessions)s expired sessions and %(events)s events.")
                % {"sessions": grouped(result.sessions), "events": grouped(result.events)},
                messages.SUCCESS,
            )
            return redirect(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
        return TemplateResponse(
            request,
            f"{TEMPLATES}/purge.html",
            {
                **self.admin_site.each_context(request),
                "title": _("Purge expired sessions now?"),
                "opts": self.opts,
                "preview": purge.purge_expired(dry_run=True, trigger=DeletionAudit.Trigger.ADMIN),
                "storage": selectors_admin.storage_status(),
            },
        )

    def policy_view(self, request):
        if not self.has_view_permission(request):
            raise PermissionDenied
        policy = selectors_admin.retention_policy()
        # Changing the interval decides how soon expired sessions are erased:
        # the same duty as "purge now", so the same (delete) permission.
        can_change = self.has_erase_permission(request)
        interval_form = None
        if request.method == "POST":
            if not can_change:
                raise PermissionDenied
            interval_form = PurgeIntervalForm(request.POST)
            if interval_form.is_valid():
                minutes = interval_form.cleaned_data["minutes"]
                if services.purge_interval_set(minutes=minutes):
                    self.message_user(
                        request, _("The purge now runs every %(minutes)d min.") % {"minutes": minutes}, messages.SUCCESS
                    )
                else:
                    self.message_user(request, _("There is no purge schedule to change."), messages.WARNING)
                return redirect(request.path)
        elif can_change and policy.schedule and policy.schedule.schedule_type == Schedule.MINUTES:
            interval_form = PurgeIntervalForm(initial={"minutes": policy.schedule.minutes})
        return TemplateResponse(
            request,
            f"{TEMPLATES}/policy.html",
            {
                **self.admin_site.each_context(request),
                "title": _("Retention policy"),
                "opts": self.opts,
                "policy": policy,
                "interval_form": interval_form,
                "integrity_failures": selectors_admin.integrity_failure_counts(),
                "storage": selectors_admin.storage_status(),
                # What /readyz answers, from the same checks (docs/OBSERVABILITY.md, "Health").
                "readiness": selectors_health.readiness(),
            },
        )

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}), "can_erase": self.has_erase_permission(request)}
        return super().changelist_view(request, extra_context)
