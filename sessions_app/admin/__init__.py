"""The operators' admin: session metadata and retention controls, never what people wrote.

Only sessions (metadata only) and the deletion audit are registered; events,
app state and user state hold resume text and conversations, so they have no
admin pages. Every deletion made here goes through `erasure.erase_sessions`
(directly or by the purge, `purge.py`), which overwrites the bytes and writes
the audit row.

django-q2's own pages are removed: they let staff write a schedule's or a
task's function, arguments and hook, which the scheduler then runs as the
service (and the service sees every token and plaintext). The policy page
shows the purge schedule and changes its interval only.
"""

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

# The admin's own name, in the operator's language (Django's is "Django administration").
admin.site.site_header = _("Resume agent administration")
admin.site.site_title = _("Resume agent administration")

# Django's admin autodiscovery imports this package: each module registers its pages (the deletion
# log's are registered by its own package, sessions_app/deletion_log/admin.py, from apps.py).
from sessions_app.admin import accounts, audit, login_attempts, sessions  # noqa: E402, F401
