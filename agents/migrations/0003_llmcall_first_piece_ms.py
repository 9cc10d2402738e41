from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0002_cut_off_outcome"),
    ]

    operations = [
        migrations.AddField(
            model_name="llmcall",
            name="first_piece_ms",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
    ]
