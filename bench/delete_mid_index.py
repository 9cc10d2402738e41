"""What a codebase deleted while it is being indexed leaves on disk (issue 21, finding 4).

    .venv/bin/python bench/delete_mid_index.py [--pack /work/corpus/packs/pylint-2.9.0.xml]
                                               [--runs 10]

In a throwaway data directory (its own SQLite file, no Celery: the embedded job runner, as
`make run` has it), uploads the pack --runs times as rag.services does for the upload page; the
indexing job starts in the background, and the codebase is deleted (as the admin deletes one:
`Codebase.delete()`, in another thread than the job's) once the job reaches the run's stage,
in turn: parsing, chunking, embedding (the lexical index being written), indexing (the rows
being stored) and vectors (the codebase open, its vectors filling in behind). The job is left
to stop by itself; then the index folders (data/indexes/<id>) and upload folders
(data/uploads/<id>) still on disk are counted: 0 expected.

Then the start-up sweep: a folder a job that died mid-write would leave (a codebase id that no
longer exists, with files in it) is planted and `manage.py bootstrap` (what scripts/run.sh runs
at every start) is run; the folders left are counted again.

Not a test (tests/security/test_delete_mid_index.py is): the stage each delete lands in depends
on timing, so each run prints the stage the job was in and the size its folder had.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
STAGES = ("parsing", "chunking", "embedding", "indexing", "vectors")
JOBS = ("index_codebase", "resume_indexing")


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def jobs_running() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name in JOBS and t.is_alive()]


def reached(codebase_id: int, stage: str) -> str | None:
    """The stage the job is in when it is `stage` or later, else None; "gone" or "done" when
    there is nothing left to delete mid-index."""
    from rag.models import Codebase

    row = Codebase.objects.filter(pk=codebase_id).values("status", "progress_stage").first()
    if row is None:
        return "gone"
    status, now = row["status"], row["progress_stage"]
    if status == Codebase.Status.FAILED:
        return f"failed ({now})"
    if status == Codebase.Status.READY:
        # Ready: the rows are stored, the vectors fill in behind while the job runs.
        return "vectors" if jobs_running() else "done"
    order = {"parsing": 0, "chunking": 1, "embedding": 2, "indexing": 3}
    if now in order and order[now] >= STAGES.index(stage):
        return now
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pack", default="/work/corpus/packs/pylint-2.9.0.xml")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()

    data = Path(tempfile.mkdtemp(prefix="delete-mid-index-"))
    os.environ["PLANAGENTS_DATA_DIR"] = str(data)
    os.environ["DJANGO_SETTINGS_MODULE"] = "planagents.settings"
    for name in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"):
        os.environ.pop(name, None)

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.core.management import call_command

    from rag.models import Codebase
    from rag.services import create_codebase_from_upload

    assert not settings.CELERY_BROKER_URL, "the embedded job runner is measured, not Celery"
    call_command("migrate", "--noinput", verbosity=0)
    user = get_user_model().objects.create_user("uploader")
    pack = Path(args.pack).read_bytes()
    indexes, uploads = Path(settings.PLANAGENTS_INDEX_DIR), Path(settings.DATA_DIR) / "uploads"
    print(f"data dir {data}; pack {args.pack} ({len(pack) / 1e6:.1f} MB); {args.runs} runs")

    for n in range(args.runs):
        target = STAGES[n % len(STAGES)]
        upload = SimpleUploadedFile(Path(args.pack).name, pack)
        started = time.monotonic()
        codebase = create_codebase_from_upload(
            user, f"run {n}", [upload], allow_duplicate=True
        )  # the job is dispatched once this commits
        while (stage := reached(codebase.pk, target)) is None and time.monotonic() - started < 900:
            time.sleep(0.01)
        size = folder_bytes(indexes / str(codebase.pk))
        at = time.monotonic() - started
        if stage in ("gone", "done") or (stage or "").startswith("failed"):
            print(f"run {n + 1}: job finished before the delete ({stage}); deleted after")
        Codebase.objects.get(pk=codebase.pk).delete()
        while jobs_running() and time.monotonic() - started < 1800:
            time.sleep(0.05)
        print(
            f"run {n + 1}: aimed at {target}, deleted in {stage} after {at:.1f} s with "
            f"{size / 1e6:.1f} MB in its index folder; job stopped "
            f"{time.monotonic() - started - at:.1f} s later; left: "
            f"index {listing(indexes) or 'none'}, upload {listing(uploads) or 'none'}"
        )

    left_index, left_upload = listing(indexes), listing(uploads)
    print(
        f"after {args.runs} deletes mid-index: {len(left_index)} index folder(s), "
        f"{len(left_upload)} upload folder(s) left under {data}"
    )

    orphan = indexes / "999999"
    orphan.mkdir(parents=True, exist_ok=True)
    (orphan / "dense.faiss").write_bytes(b"\0" * 1_000_000)
    out = io.StringIO()
    call_command("bootstrap", "--skip-model", stdout=out)
    said = [line for line in out.getvalue().splitlines() if "orphan" in line]
    print(
        f"start-up sweep (manage.py bootstrap) with 1 planted orphan index folder: "
        f"{len(listing(indexes))} index folder(s) left; it said: {said}"
    )
    return 1 if left_index or left_upload or listing(indexes) else 0


if __name__ == "__main__":
    raise SystemExit(main())
