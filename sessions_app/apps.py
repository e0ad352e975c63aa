from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SessionsAppConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "sessions_app"
    verbose_name = _("Resume sessions")

    def ready(self) -> None:
        from sessions_app.infra import traces, var_directory

        traces.keep_content_out_of_traces()
        var_directory.prepare()
        # Importing registers the connection_created receiver, the system checks
        # and the OpenAPI description of the token header.
        from sessions_app import model_provider  # noqa: F401
        from sessions_app.api import schema  # noqa: F401
        from sessions_app.deletion_log import admin, key  # noqa: F401  (admin: the log's pages)
        from sessions_app.infra import sqlite  # noqa: F401
