"""Events get their sequence number in the session (`seq`, bound into each
event's sealed place), and integrity failures are counted.

Nothing was released before it, so no value is re-sealed: a row written
before it does not open (its places name no sequence or revision), the API
answers it with the uniform 404, and the purge erases it by
`SESSION_MAX_AGE_HOURS` at the latest. Its events are only numbered in
append order, so the unique constraint can be added.
"""

from django.db import migrations, models

NUMBER_EXISTING_EVENTS = """
UPDATE sessions_app_sessionevent SET seq = (
    SELECT COUNT(*) FROM sessions_app_sessionevent AS earlier
    WHERE earlier.session_id = sessions_app_sessionevent.session_id
    AND earlier.id <= sessions_app_sessionevent.id
)
"""


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0005_sealed_content")]

    operations = [
        migrations.AddField(
            model_name="sessionevent", name="seq", field=models.PositiveIntegerField(default=0), preserve_default=False
        ),
        migrations.RunSQL(NUMBER_EXISTING_EVENTS, migrations.RunSQL.noop),
        migrations.AddConstraint(
            model_name="sessionevent",
            constraint=models.UniqueConstraint(fields=("session", "seq"), name="unique_event_seq_per_session"),
        ),
        migrations.CreateModel(
            name="IntegrityFailure",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("state_tampered", "state does not open at its revision"),
                            ("state_replayed", "revision behind the stored events (older state put back)"),
                            ("events_missing", "fewer events than the revision (deleted)"),
                            ("event_sequence_broken", "events not numbered 1..revision"),
                            ("event_tampered", "event does not open in its place"),
                            ("user_state_tampered", "user state does not open"),
                        ],
                        max_length=32,
                    ),
                ),
            ],
            options={"ordering": ["-created_at"]},
        ),
    ]
