"""Passkey accounts in the admin (docs/ACCOUNTS.md): counts and dates only. Never an account's id,
a passkey's key or id, a wrapped token, or which sessions an account keeps: only how many."""

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from sessions_app import selectors_admin
from sessions_app.admin.read_only import ReadOnlyAdmin
from sessions_app.models import Account


@admin.register(Account)
class AccountAdmin(ReadOnlyAdmin):
    list_display = ["created", "last_sign_in", "passkeys", "synced_passkeys", "last_passkey_use", "sessions"]
    list_display_links = None  # no page of one account: there is nothing more to show
    ordering = ["-created_at"]
    # What any form of it could hold: the dates, never the id or the recovery verifier's hash.
    fields = readonly_fields = ["created_at", "last_sign_in_at"]
    show_full_result_count = True

    def get_queryset(self, request):
        return selectors_admin.accounts_overview(super().get_queryset(request))

    def has_view_permission(self, request, obj=None):
        # The list only: an account's own page would show its fields.
        return obj is None and super().has_view_permission(request)

    @admin.display(description=_("created"), ordering="created_at")
    def created(self, account):
        return account.created_at

    @admin.display(description=_("last sign-in"), ordering="last_sign_in_at")
    def last_sign_in(self, account):
        return account.last_sign_in_at

    @admin.display(description=_("passkeys"), ordering="passkey_count")
    def passkeys(self, account):
        return account.passkey_count

    @admin.display(description=_("synced passkeys"), ordering="synced_passkey_count")
    def synced_passkeys(self, account):
        return account.synced_passkey_count

    @admin.display(description=_("last passkey use"), ordering="passkey_last_used_at")
    def last_passkey_use(self, account):
        return account.passkey_last_used_at

    @admin.display(description=_("sessions kept"), ordering="session_count")
    def sessions(self, account):
        return account.session_count
