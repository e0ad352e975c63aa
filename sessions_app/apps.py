from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "sessions_app"
    verbose_name = "Resume sessions"

    def ready(self) -> None:
        # Importing registers the connection_created receiver and the system check.
        from . import sqlite  # noqa: F401
