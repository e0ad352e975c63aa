"""Third-party apps as the admin names them: in the operator's language."""

from axes.apps import AppConfig as AxesAppConfig
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop


class LoginAttemptsConfig(AxesAppConfig):
    """django-axes (base.py, "Admin login attempts"). Its admin's heading would be its label, "Axes",
    which no catalogue translates."""

    verbose_name = _("Admin login attempts")


# django-axes's own texts the admin shows that its catalogues leave in English; named here so that
# `makemessages` puts them in our catalogue (locale/, searched before the app's).
AXES_MESSAGES = [
    gettext_noop("access attempt"),
    gettext_noop("access attempts"),
    gettext_noop("access failure"),
    gettext_noop("access failures"),
    gettext_noop("access log"),
    gettext_noop("access logs"),
    gettext_noop("access attempt expiration"),
    gettext_noop("access attempt expirations"),
    # its fields, columns and filters
    gettext_noop("User Agent"),
    gettext_noop("IP Address"),
    gettext_noop("Username"),
    gettext_noop("HTTP Accept"),
    gettext_noop("Path"),
    gettext_noop("Attempt Time"),
    gettext_noop("Access lock out"),
    gettext_noop("GET Data"),
    gettext_noop("POST Data"),
    gettext_noop("Failed Logins"),
    gettext_noop("Access Attempt"),
    gettext_noop("Expires At"),
    gettext_noop("The time when access attempt expires and is no longer valid."),
    gettext_noop("Logout Time"),
    gettext_noop("Session key hash (sha256)"),
    gettext_noop("Locked Out"),
    gettext_noop("Yes"),
    gettext_noop("No"),
    gettext_noop("Form Data"),
    gettext_noop("Meta Data"),
    gettext_noop("Clean up expired attempts"),
    gettext_noop("Not set"),
    gettext_noop("Attempt Remaining"),
]
