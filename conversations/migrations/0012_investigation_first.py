"""A session investigates before Agent A's analysis (agents.workflow.NODES), so the analysis
reads the evidence and shares its prompt's start with the proposal's."""

from django.db import migrations, models


def _start_with_investigation(apps, schema_editor):
    # A session waiting to analyse has not investigated yet under the old order; under the new
    # one the analysis comes after the investigation, which reuses any evidence already saved.
    state = apps.get_model("conversations", "PlanningState")
    state.objects.filter(current_node="analyze_codebase").update(current_node="investigate")


class Migration(migrations.Migration):
    dependencies = [("conversations", "0011_share_link_comments")]

    operations = [
        migrations.AlterField(
            model_name="planningstate",
            name="current_node",
            field=models.CharField(default="investigate", max_length=40),
        ),
        migrations.RunPython(_start_with_investigation, migrations.RunPython.noop),
    ]
