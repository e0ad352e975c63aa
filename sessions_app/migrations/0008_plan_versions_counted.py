from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0007_deletion_log")]

    operations = [
        # Sessions stored before: NULL, "not counted" (their count is in their sealed state, which
        # a migration cannot open); their next turn writes it. New sessions start at 0.
        migrations.AddField(
            model_name="agentsession",
            name="plan_versions",
            field=models.PositiveIntegerField(null=True, verbose_name="plan versions"),
        ),
        migrations.AlterField(
            model_name="agentsession",
            name="plan_versions",
            field=models.PositiveIntegerField(db_default=0, default=0, null=True, verbose_name="plan versions"),
        ),
    ]
