"""`make run`'s first-run step prints a login for the address the app is actually served on and
keeps it in a file only its owner can read; a second run prints no new password."""

import io
import stat
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def run(*args):
    out = io.StringIO()
    call_command("bootstrap", "--skip-model", *args, stdout=out)
    return out.getvalue()


def test_the_first_run_prints_a_login_for_the_address_served():
    said = run("--url", "http://127.0.0.1:8013")
    assert "Your login for http://127.0.0.1:8013" in said
    note = Path(settings.DATA_DIR) / "first-login.txt"
    assert stat.S_IMODE(note.stat().st_mode) == 0o600
    password = note.read_text().split("password: ")[1].strip()
    assert password in said
    assert get_user_model().objects.get(username="admin").check_password(password)

    again = run("--url", "http://127.0.0.1:8013")
    assert password not in again and "first-login.txt" in again


@pytest.mark.django_db
def test_every_start_removes_index_folders_whose_codebase_is_gone(settings, user):
    from rag.models import Codebase

    root = Path(settings.PLANAGENTS_INDEX_DIR)
    kept = Codebase.objects.create(owner=user, name="kept", status="ready")
    (root / str(kept.pk)).mkdir(parents=True)
    (root / "987654").mkdir(parents=True)  # a codebase deleted mid-index, before a crash
    out = io.StringIO()
    call_command("bootstrap", skip_model=True, stdout=out)
    assert "Removed 1 orphaned index folder(s)." in out.getvalue()
    assert (root / str(kept.pk)).is_dir() and not (root / "987654").exists()
