"""Creates the django-q2 schedule that enforces the TTL.

A migration runs once, so a fresh `migrate` creates the schedule, a second
`migrate` does nothing, and an operator's later edits in the admin (interval,
pause) are kept; a post_migrate hook would overwrite them every time.
"""

from django.conf import settings
from django.db import migrations

SCHEDULE_NAME = "purge expired sessions"


def create_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.get_or_create(
        name=SCHEDULE_NAME,
        defaults={
            "func": "sessions_app.tasks.purge_expired_sessions",
            "schedule_type": "I",  # Schedule.MINUTES
            "minutes": settings.PURGE_INTERVAL_MINUTES,
            "repeats": -1,
        },
    )


def remove_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name=SCHEDULE_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0001_initial"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(create_schedule, remove_schedule)]
