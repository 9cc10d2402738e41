"""Share links choose what they show: one pinned version or always the latest, and whether the
codebase's rules and the investigation's evidence appear.

Links made before this migration keep working exactly as they did: they become "always latest"
with rules and evidence shown (no pinned version, both choices on), because that is what their
recipients were already reading. Pinning them now would hide the versions written since, and
turning the choices off would take away what a recipient could read yesterday; neither should
change without the owner deciding it. New links default to a pinned version with rules and
evidence left out (conversations.sharing.create_link)."""

import django.db.models.deletion
from django.db import migrations, models


def keep_what_existing_links_showed(apps, schema_editor):  # type: ignore[no-untyped-def]
    ShareLink = apps.get_model("conversations", "ShareLink")
    ShareLink.objects.update(pinned_plan=None, shows_rules=True, shows_evidence=True)


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0007_plan_comments"),
    ]

    operations = [
        migrations.AddField(
            model_name="sharelink",
            name="pinned_plan",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="conversations.plan",
            ),
        ),
        migrations.AddField(
            model_name="sharelink",
            name="shows_evidence",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="sharelink",
            name="shows_rules",
            field=models.BooleanField(default=False),
        ),
        # Reversing only drops the new columns, which loses nothing the old schema held.
        migrations.RunPython(keep_what_existing_links_showed, migrations.RunPython.noop),
    ]
