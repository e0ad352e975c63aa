from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0002_purge_schedule")]

    operations = [
        migrations.AddField(
            model_name="agentsession",
            name="turn_holder",
            field=models.CharField(blank=True, db_default="", default="", max_length=64),
        )
    ]
