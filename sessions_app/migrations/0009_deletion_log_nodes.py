"""The deletion log's stored subtrees (DeletionLogNode), backfilled from the entries already
written: after this every proof is read from them, and is the same as before for the same sizes."""

from django.db import migrations, models

from sessions_app.deletion_log.formats.merkle import RightEdge, post_order

BATCH = 5000


def backfill(apps, schema_editor):
    entry, node = apps.get_model("sessions_app", "DeletionLogEntry"), apps.get_model("sessions_app", "DeletionLogNode")
    alias = schema_editor.connection.alias
    edge = RightEdge()
    while True:  # a batch of entries at a time: memory stays bounded whatever the log's size
        batch = entry.objects.using(alias).filter(index__gte=edge.size).order_by("index")
        hashes = [bytes(value) for value in batch.values_list("leaf_hash", flat=True)[:BATCH]]
        if not hashes:
            return
        nodes = [
            node(position=post_order(height, index), node_hash=hashed)
            for leaf_hash in hashes
            for height, index, hashed in edge.append(leaf_hash)
        ]
        node.objects.using(alias).bulk_create(nodes, batch_size=BATCH)


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0008_plan_versions_counted")]

    operations = [
        migrations.CreateModel(
            name="DeletionLogNode",
            fields=[
                ("position", models.PositiveBigIntegerField(primary_key=True, serialize=False)),
                ("node_hash", models.BinaryField()),
            ],
            options={"verbose_name": "deletion log tree node", "verbose_name_plural": "deletion log tree nodes"},
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
