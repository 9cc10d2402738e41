"""Keep the disk in step with the database: a deleted codebase takes its index and upload."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver

from rag import index
from rag.models import Codebase


@receiver(post_delete, sender=Codebase)
def remove_codebase_files(sender: type[Codebase], instance: Codebase, **kwargs: Any) -> None:
    codebase_id = instance.pk
    upload = Path(settings.DATA_DIR) / instance.upload_path if instance.upload_path else None

    def remove() -> None:
        index.delete(codebase_id)
        if upload is not None and upload.is_relative_to(Path(settings.DATA_DIR) / "uploads"):
            shutil.rmtree(upload, ignore_errors=True)

    transaction.on_commit(remove)
