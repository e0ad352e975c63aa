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
]
