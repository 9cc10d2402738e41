"""How long the codebase page takes for a large codebase (issue 8: it took 103 s at 50,000
files when it rendered the whole tree; it now renders one folder level and loads the rest on
demand).

    .venv/bin/python bench/codebase_page.py [--files 50000] [--rounds 5]

Makes a ready codebase of --files files (20 top folders × nested folders, 1 KB each) in a
throwaway SQLite database, then times GET of its page and of one folder's listing through
Django's test client (the view and template, no network), --rounds times each, and prints the
median and max. Not a test: numbers depend on the machine and what else runs on it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    data = tempfile.mkdtemp(prefix="planagents-page-bench-")
    os.environ["PLANAGENTS_DATA_DIR"] = data
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planagents.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    from rag.models import Codebase, CodeFile

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench", password="x")
    codebase = Codebase.objects.create(
        owner=user, name="big", status=Codebase.Status.READY, file_count=args.files
    )
    body = "x = 1\n" * 170
    started = time.monotonic()
    CodeFile.objects.bulk_create(
        (
            CodeFile(
                codebase=codebase,
                path=f"pkg{i % 20}/mod{i % 97}/sub{i % 13}/file{i}.py",
                language="python",
                size=len(body),
                line_count=170,
                sha256=f"{i:064x}",
                content=body,
            )
            for i in range(args.files)
        ),
        batch_size=2000,
    )
    print(f"{args.files} files written in {time.monotonic() - started:.1f} s")

    client = Client(SERVER_NAME="127.0.0.1")
    client.force_login(user)
    urls = {
        "codebase page": f"/codebases/{codebase.pk}/",
        "one folder": f"/codebases/{codebase.pk}/tree.json?folder=pkg3/mod40/",
    }
    for name, url in urls.items():
        times = []
        for _ in range(args.rounds):
            t0 = time.monotonic()
            response = client.get(url)
            times.append(time.monotonic() - t0)
            assert response.status_code == 200, (url, response.status_code)
        print(
            f"{name}: median {statistics.median(times) * 1000:.0f} ms, "
            f"max {max(times) * 1000:.0f} ms, {len(response.content) / 1024:.0f} KB"
        )


if __name__ == "__main__":
    main()
