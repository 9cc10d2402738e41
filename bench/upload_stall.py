"""Does one user's big upload stall everyone else's pages? (The upload request checks the whole
upload before keeping it: its style, a zip's directory, and a pack parsed to refuse it when
incomplete: about 1.5 s at the 50 MB cap.)

    .venv/bin/python bench/upload_stall.py [--case refused|accepted|zip] [--mb 48] [--uploads 3]
    .venv/bin/python bench/upload_stall.py --compare /tmp/main-before   # a copy of older code

Starts the real server (daphne, planagents.asgi, as scripts/run.sh does) on a free port with a
throwaway SQLite database, logs two users in, then times user 2's GET of the codebase list:
--idle times with nothing else going on, then while user 1 uploads, --uploads times over:

- refused: a generated --mb MB Repomix pack whose listing names one file it lacks, so the form
  refuses it (the default) after parsing it all.
- accepted: a complete --mb MB pack that passes every check, as an accepted upload or a new
  version does. User 1 uploaded these bytes before (the benchmark seeds that codebase), so the
  upload is answered "you already uploaded exactly these bytes" after all the checks, before
  anything is kept.
- zip: the same, for a zip of 20,000 small files (the most it takes), whose directory is
  checked.

No indexing job runs afterwards in any case, to muddy the numbers. With --compare DIR it
measures the project at DIR first (same venv) and prints both.

Not a test: the numbers depend on the machine and what else runs on it.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import io
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = "/codebases/"
UPLOAD = "/codebases/upload/"
LOG_IN = (
    "import os; from django.contrib.auth import get_user_model; from django.test import Client\n"
    "from rag.models import Codebase\n"
    "for name in ('uploader', 'reader'):\n"
    "    user = get_user_model().objects.create_user(name)\n"
    "    c = Client(); c.force_login(user)\n"
    "    print(c.cookies['sessionid'].value)\n"
    "if os.environ['BENCH_SEED_SHA256']:\n"
    "    Codebase.objects.create(owner=get_user_model().objects.get(username='uploader'),\n"
    "        name='seeded', status='ready', upload_sha256=os.environ['BENCH_SEED_SHA256'])\n"
)
ZIP_MEMBERS = 20_000


@dataclass
class Run:
    label: str
    idle: list[float] = field(default_factory=list)
    during: list[float] = field(default_factory=list)
    uploads: list[float] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)


def make_pack(megabytes: float, *, complete: bool) -> bytes:
    """A Repomix XML pack of about `megabytes` MB; unless `complete`, its listing names one
    file it lacks."""
    body = "".join(
        f"def handler_{n}(request):\n    return {{'n': {n}, 'ok': True}}\n\n" for n in range(60)
    )
    count = int(megabytes * 1_000_000 / (len(body) + 40))
    paths = [f"pkg{n % 50}/mod_{n}.py" for n in range(count)]
    listing = "\n".join(paths if complete else [*paths, "pkg0/missing.py"])
    files = "".join(f'<file path="{path}">\n{body}</file>\n\n' for path in paths)
    return (
        "This file is a merged representation of the entire codebase, combined into a single "
        "document by Repomix.\n\n<directory_structure>\n"
        f"{listing}\n</directory_structure>\n\n<files>\n"
        "This section contains the contents of the repository's files.\n\n"
        f"{files}</files>\n"
    ).encode()


def make_zip(members: int) -> bytes:
    """A zip of a repository with `members` small Python files."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for n in range(members):
            archive.writestr(
                f"repo/pkg{n % 50}/mod_{n}.py", f"def handler_{n}():\n    return {n}\n"
            )
    return buffer.getvalue()


def make_upload(case: str, megabytes: float) -> tuple[str, bytes]:
    """(file name, bytes) of what user 1 uploads in `case`."""
    if case == "zip":
        return "repo.zip", make_zip(ZIP_MEMBERS)
    return "big.xml", make_pack(megabytes, complete=case == "accepted")


def digest(data: bytes) -> str:
    """rag.services.upload_digest of a one-file upload."""
    return hashlib.sha256(f"{len(data)}\n".encode() + data).hexdigest()


def start_server(
    root: Path, data: Path, seed_sha256: str
) -> tuple[subprocess.Popen[str], int, list[str]]:
    env = {**os.environ, "PLANAGENTS_DATA_DIR": str(data), "DJANGO_DEBUG": "0"}
    env["BENCH_SEED_SHA256"] = seed_sha256
    env.pop("DJANGO_SETTINGS_MODULE", None)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput"], cwd=root, env=env, check=True, capture_output=True)  # fmt: skip
    login = subprocess.run(
        [*manage, "shell", "-c", LOG_IN], cwd=root, env=env, check=True, capture_output=True, text=True
    )  # fmt: skip
    sessions = login.stdout.split()[-2:]
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-e", "tcp:port=0:interface=127.0.0.1",
         "planagents.asgi:application"],
        cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stderr is not None
    seen = []
    for line in process.stderr:  # daphne says where it listens once it does
        seen.append(line)
        found = re.search(r"Listening on TCP address 127\.0\.0\.1:(\d+)", line)
        if found:
            break
    else:
        raise SystemExit("daphne did not start:\n" + "".join(seen[-20:]))
    threading.Thread(target=process.stderr.read, daemon=True).start()  # never a full pipe
    return process, int(found.group(1)), sessions


def get(port: int, session: str, path: str = PAGE) -> tuple[int, bytes, list[str]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("GET", path, headers={"Cookie": f"sessionid={session}"})
    response = conn.getresponse()
    body = response.read()
    cookies = response.headers.get_all("Set-Cookie") or []
    conn.close()
    return response.status, body, cookies


def post_upload(port: int, session: str, upload: tuple[str, bytes]) -> int:
    filename, pack = upload
    _, page, cookies = get(port, session, UPLOAD)
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    csrf = next((c.split(";")[0] for c in cookies if c.startswith("csrftoken=")), "")
    assert token and csrf, "no CSRF token on the upload page"
    boundary = uuid.uuid4().hex
    fields = {"csrfmiddlewaretoken": token.group(1).decode(), "name": "", "if_incomplete": "refuse"}
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
        for k, v in fields.items()
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="pack"; filename="{filename}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n".encode()
        + pack
        + f"\r\n--{boundary}--\r\n".encode()
    )
    body = b"".join(parts)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    conn.request(
        "POST",
        UPLOAD,
        body=body,
        headers={
            "Cookie": f"sessionid={session}; {csrf}",
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Referer": f"http://127.0.0.1:{port}{UPLOAD}",
        },
    )
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status


def timed_get(port: int, session: str) -> float:
    started = time.perf_counter()
    status, _, _ = get(port, session)
    assert status == 200, f"GET {PAGE} answered {status}"
    return time.perf_counter() - started


def timed_upload(run: Run, port: int, session: str, pack: tuple[str, bytes]) -> None:
    started = time.perf_counter()
    run.statuses.append(post_upload(port, session, pack))
    run.uploads.append(time.perf_counter() - started)


def measure(label: str, root: Path, pack: tuple[str, bytes], args: argparse.Namespace) -> Run:
    run = Run(label)
    data = Path(tempfile.mkdtemp(prefix="planagents-upload-stall-"))
    seed = "" if args.case == "refused" else digest(pack[1])
    process, port, (uploader, reader) = start_server(root, data, seed)
    try:
        for _ in range(5):  # warm up: imports, templates, connections
            timed_get(port, reader)
        run.idle = [timed_get(port, reader) for _ in range(args.idle)]
        for _ in range(args.uploads):
            thread = threading.Thread(target=timed_upload, args=(run, port, uploader, pack))
            thread.start()
            while thread.is_alive():
                run.during.append(timed_get(port, reader))
            thread.join()
            time.sleep(0.5)
    finally:
        process.terminate()
        process.wait(timeout=30)
    return run


def describe(run: Run) -> str:
    idle, during = statistics.median(run.idle), statistics.median(run.during)
    return (
        f"{run.label}: page idle median {idle * 1000:.0f} ms, max {max(run.idle) * 1000:.0f} ms"
        f" | during upload median {during * 1000:.0f} ms, max {max(run.during) * 1000:.0f} ms"
        f" ({len(run.during)} pages) | ratio median {during / idle:.1f}x,"
        f" max {max(run.during) / idle:.1f}x | upload {statistics.median(run.uploads):.2f} s"
        f" (answered {sorted(set(run.statuses))})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", choices=["refused", "accepted", "zip"], default="refused")
    parser.add_argument("--mb", type=float, default=48.0, help="pack size (the cap is 50 MiB)")
    parser.add_argument("--uploads", type=int, default=3)
    parser.add_argument("--idle", type=int, default=40, help="idle page loads to time")
    parser.add_argument("--compare", type=Path, help="measure this copy of the project first")
    args = parser.parse_args()

    pack = make_upload(args.case, args.mb)
    print(
        f"{args.case}: {pack[0]}, {len(pack[1]) / 1e6:.1f} MB; page: GET {PAGE} as another user",
        flush=True,
    )
    runs = []
    if args.compare:
        runs.append(measure(f"before ({args.compare})", args.compare.resolve(), pack, args))
        print(describe(runs[-1]), flush=True)
    runs.append(measure("after" if args.compare else "this checkout", ROOT, pack, args))
    print(describe(runs[-1]), flush=True)


if __name__ == "__main__":
    main()
