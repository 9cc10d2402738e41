"""How well rag.secrets withholds secret files: misses on a planted corpus, false alarms on real
code.

    .venv/bin/python bench/secrets_corpus.py [--packs /work/corpus/packs] [--show 40]

1. Plants every kind of secret file an attack found readable (issue 21) in a generated tree of
   ordinary files: environment files under other names (deploy/prod.env), configuration with a
   password, credential and secret stores, keys (*.pem, *.key, id_rsa*), .npmrc and .pypirc
   with tokens, and provider tokens inside source files, one of them on the last line of a file
   as large as an upload may be (PLANAGENTS_MAX_UPLOAD_BYTES). Every planted file must be
   withheld (0 misses) and none of the ordinary ones.
2. Counts the files it would withhold in this project's own tracked files and in every swe-dev
   pack (Repomix XML) under --packs, with the reason, and the time the scan took.

Not a test: the counts on real code are for reading (each flagged file is listed), the planted
misses are what tests/security/test_secret_kinds.py asserts.
"""

from __future__ import annotations

import argparse
import os
import random
import string
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planagents.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from rag.parsers import parse_pack  # noqa: E402
from rag.secrets import secret_reason  # noqa: E402

_rng = random.Random(21)


def _token(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"


def planted() -> dict[str, tuple[str, str]]:
    """path -> (kind, content): one file per kind of secret."""
    gh = "ghp_" + _token(ALNUM, 36)
    files = {
        "deploy/prod.env": (
            "env file, other name",
            f"DATABASE_URL=postgres://app:{_token(ALNUM, 16)}@db/app\n",
        ),
        ".env": ("env file", f"SECRET_KEY={_token(ALNUM, 40)}\n"),
        "config/.env.production": ("env file, suffix", f"API_KEY={_token(ALNUM, 32)}\n"),
        "config/prod.env.local": ("env file, variant", f"API_KEY={_token(ALNUM, 32)}\n"),
        "config/database.json": (
            "password in json",
            f'{{"production": {{"password": "{_token(ALNUM, 16)}"}}}}\n',
        ),
        "appsettings.json": (
            "connection string in json",
            f'{{"Db": "Server=db;User Id=sa;Password={_token(ALNUM, 16)};"}}\n',
        ),
        "deploy/terraform.tfvars": ("password in tfvars", f'db_password = "{_token(ALNUM, 16)}"\n'),
        "settings/local.ini": (
            "password in ini",
            f"[database]\nhost = db\npassword = {_token(ALNUM, 14)}\n",
        ),
        "config/app.yaml": (
            "password in yaml",
            f"db:\n  host: db\n  db_password: {_token(ALNUM, 18)}\n",
        ),
        "conf/app.properties": (
            "secret in properties",
            f"app.name=shop\napp.client_secret={_token(ALNUM, 24)}\n",
        ),
        "pyproject.toml": ("token in toml", f'[tool.x]\napi_token = "{_token(ALNUM, 30)}"\n'),
        "credentials.json": ("credentials store", '{"type": "service_account"}\n'),
        "config/secrets.yaml": ("secrets store", "stripe: x\n"),
        "secrets.json": ("secrets store", "{}\n"),
        "certs/server.pem": ("pem file", "-----BEGIN CERTIFICATE-----\nMIIB\n"),
        "certs/tls.key": ("key file", "MIIEvQIBADANBg\n"),
        "keys/id_rsa": ("ssh key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n"),
        "deploy/id_ed25519_deploy": ("ssh key, other name", "b3BlbnNzaC1rZXktdjE\n"),
        ".npmrc": ("npmrc token", f"//registry.npmjs.org/:_authToken=npm_{_token(ALNUM, 36)}\n"),
        "frontend/.npmrc": (
            "npmrc legacy token",
            f"//registry.npmjs.org/:_authToken={_token(HEX, 8)}-{_token(HEX, 4)}-{_token(HEX, 4)}-{_token(HEX, 4)}-{_token(HEX, 12)}\n",
        ),
        ".pypirc": (
            "pypirc",
            f"[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc{_token(ALNUM, 80)}\n",
        ),
        "infra/terraform.tfstate": ("terraform state", '{"version": 4}\n'),
        ".netrc": ("netrc", f"machine api.example.com login me password {_token(ALNUM, 12)}\n"),
        ".git-credentials": ("git credentials", f"https://me:{gh}@github.com\n"),
        "src/aws.py": ("AWS key", f'KEY = "AKIA{_token(UPPER, 16)}"\n'),
        "src/github.py": ("GitHub token", f'TOKEN = "{gh}"\n'),
        "src/github_pat.py": (
            "GitHub fine-grained token",
            f'TOKEN = "github_pat_{_token(ALNUM, 82)}"\n',
        ),
        "src/gitlab.py": ("GitLab token", f'TOKEN = "glpat-{_token(ALNUM, 20)}"\n'),
        "src/slack.py": (
            "Slack token",
            f'TOKEN = "xoxb-{_token(string.digits, 12)}-{_token(string.digits, 13)}-{_token(ALNUM.lower(), 24)}"\n',
        ),
        "src/stripe.py": ("Stripe key", f'KEY = "sk_live_{_token(ALNUM, 24)}"\n'),
        "src/openai.py": (
            "OpenAI key",
            f'KEY = "sk-proj-{_token(ALNUM, 20)}T3BlbkFJ{_token(ALNUM, 20)}"\n',
        ),
        "src/anthropic.py": ("Anthropic key", f'KEY = "sk-ant-api03-{_token(ALNUM, 90)}"\n'),
        "src/google.py": ("Google API key", f'KEY = "AIza{_token(ALNUM, 35)}"\n'),
        "src/sendgrid.py": (
            "SendGrid key",
            f'KEY = "SG.{_token(ALNUM, 22)}.{_token(ALNUM, 43)}"\n',
        ),
        "src/azure.py": ("Azure storage key", f'CONN = "AccountKey={_token(ALNUM, 86)}=="\n'),
        "src/key_block.py": (
            "private key block",
            'KEY = """-----BEGIN RSA PRIVATE KEY-----\nMIIE\n"""\n',
        ),
        "src/basic_auth.py": (
            "password in a URL",
            f'URL = "https://admin:{_token(ALNUM, 14)}@internal.example.com/"\n',
        ),
    }
    big = int(settings.PLANAGENTS_MAX_UPLOAD_BYTES) - 1024
    line = "x = 'a line of ordinary code, nothing to see here'\n"
    files["data/huge.py"] = (
        "GitHub token on the last line of the largest file",
        line * (big // len(line)) + f'TOKEN = "ghp_{_token(ALNUM, 36)}"\n',
    )
    return files


def ordinary() -> dict[str, str]:
    """Files that hold no secret but look like they might."""
    return {
        ".env.example": "SECRET_KEY=change-me\n",
        "deploy/example.env": "API_KEY=\n",
        "keys/id_rsa.pub": "ssh-rsa AAAAB3NzaC1yc2E me@host\n",
        "rag/secrets.py": "def secret_reason(path, content):\n    return ''\n",
        "config/app.yaml.template": "db_password: ${DB_PASSWORD}\n",
        "k8s/deploy.yaml": "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db\n",
        "setup.cfg": "[flake8]\nmax-line-length = 100\n",
        "settings.ini": "[db]\npassword = ${DB_PASSWORD}\nsecret_file = /run/secrets/db\n",
        "frontend/.npmrc": "registry=https://registry.npmjs.org/\nsave-exact=true\n",
        "tests/test_login.py": 'PASSWORD = "correct horse battery"\n',
        "docs/uuid.txt": "id: 123e4567-e89b-12d3-a456-426614174000\n",
        "package.json": '{"name": "shop", "scripts": {"test": "jest"}, "private": true}\n',
        "locales/en.json": '{"password": "Password", "token": "Token"}\n',
    }


def scan(files: dict[str, str]) -> dict[str, str]:
    return {
        path: reason for path, content in files.items() if (reason := secret_reason(path, content))
    }


def tracked_files() -> dict[str, str]:
    names = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    files = {}
    for name in names:
        path = ROOT / name
        if path.is_file() and path.stat().st_size < 5 * 1024 * 1024:
            try:
                files[name] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
    return files


def report(title: str, files: dict[str, str], show: int) -> tuple[int, int]:
    started = time.perf_counter()
    flagged = scan(files)
    seconds = time.perf_counter() - started
    mb = sum(len(c) for c in files.values()) / 1e6
    print(
        f"{title}: {len(flagged)} of {len(files)} files withheld ({mb:.1f} MB in {seconds:.2f} s)"
    )
    for path, reason in sorted(flagged.items())[:show]:
        print(f"    {path}: {reason}")
    return len(flagged), len(files)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packs", default="/work/corpus/packs")
    parser.add_argument("--show", type=int, default=40)
    args = parser.parse_args()

    plants = planted()
    started = time.perf_counter()
    flagged = scan({path: content for path, (_, content) in plants.items()})
    seconds = time.perf_counter() - started
    misses = [f"{path} ({kind})" for path, (kind, _) in plants.items() if path not in flagged]
    print(f"planted: {len(plants)} kinds, {len(misses)} missed ({seconds:.2f} s)")
    for miss in misses:
        print(f"    MISSED {miss}")
    alarms = scan(ordinary())
    print(f"ordinary look-alikes: {len(alarms)} of {len(ordinary())} withheld")
    for path, reason in alarms.items():
        print(f"    {path}: {reason}")

    report("this project (tracked files)", tracked_files(), args.show)
    packs = sorted(Path(args.packs).glob("*.xml")) if Path(args.packs).is_dir() else []
    if not packs:
        print(f"swe-dev packs: none under {args.packs}")
    totals: Counter[str] = Counter()
    for pack in packs:
        parsed = parse_pack(pack.read_bytes())
        flagged_n, total = report(
            f"pack {pack.name}", {f.path: f.content for f in parsed.files}, args.show
        )
        totals.update(flagged=flagged_n, files=total)
    if packs:
        print(
            f"swe-dev packs: {totals['flagged']} of {totals['files']} files withheld in {len(packs)} packs"
        )
    return 1 if misses or alarms else 0


if __name__ == "__main__":
    raise SystemExit(main())
