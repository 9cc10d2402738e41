"""Every kind of secret file an attack found readable is withheld (issue 21), wherever in the
file the secret sits, and files that only look like secret stores are not."""

import random
import string
import time

import pytest
from django.conf import settings

from rag.parsers import parse_upload
from rag.secrets import secret_reason

_rng = random.Random(7)
ALNUM = string.ascii_letters + string.digits


def token(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


GITHUB = "ghp_" + token(36)

WITHHELD = {
    "deploy/prod.env": f"DATABASE_URL=postgres://app:{token(16)}@db/app\n",
    "config/.env.production": f"API_KEY={token(32)}\n",
    "settings/local.ini": f"[database]\nhost = db\npassword = {token(14)}\n",
    "config/app.yaml": f"db:\n  db_password: {token(18)}\n",
    "conf/app.properties": f"app.client_secret={token(24)}\n",
    "credentials.json": '{"type": "service_account"}\n',
    "config/secrets.yaml": "stripe: x\n",
    "certs/server.pem": "-----BEGIN CERTIFICATE-----\n",
    "certs/tls.key": "MIIEvQIBADANBg\n",
    "keys/id_rsa": "b3BlbnNzaC1rZXktdjE\n",
    "deploy/id_ed25519_deploy": "b3BlbnNzaC1rZXktdjE\n",
    ".npmrc": f"//registry.npmjs.org/:_authToken=npm_{token(36)}\n",
    "web/.npmrc": "//registry.npmjs.org/:_authToken=8c1f3b2a-5d4e-4f6a-9b7c-0d1e2f3a4b5c\n",
    ".pypirc": f"[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc{token(80)}\n",
    ".git-credentials": f"https://me:{GITHUB}@github.com\n",
    "src/github.py": f'TOKEN = "{GITHUB}"\n',
    "src/gitlab.py": f'TOKEN = "glpat-{token(20)}"\n',
    "src/anthropic.py": f'KEY = "sk-ant-api03-{token(90)}"\n',
    "src/sendgrid.py": f'KEY = "SG.{token(22)}.{token(43)}"\n',
    "src/basic_auth.py": f'URL = "https://admin:{token(14)}@internal.example.com/"\n',
    "config/database.json": f'{{"production": {{"password": "{token(16)}"}}}}\n',
    "appsettings.json": f'{{"Db": "Server=db;User Id=sa;Password={token(16)};"}}\n',
    "deploy/terraform.tfvars": f'db_password = "{token(16)}"\n',
    "config/prod.env.local": "DB_HOST=db\n",
}

SHOWN = {
    ".env.example": "SECRET_KEY=change-me\n",
    "keys/id_rsa.pub": "ssh-rsa AAAAB3NzaC1yc2E me@host\n",
    "rag/secrets.py": "def secret_reason(path, content):\n    return ''\n",
    "k8s/deploy.yaml": "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n",
    "settings.ini": "[db]\npassword = ${DB_PASSWORD}\nsecret_file = /run/secrets/db\n",
    "config/dev.cfg": "[db]\npassword = changeme\n",
    "web/.npmrc": "registry=https://registry.npmjs.org/\nsave-exact=true\n",
    "tests/test_login.py": 'PASSWORD = "correct horse battery"\n',
    "README.md": "Set `DATABASE_URL=postgres://user:pw@host:5432/db`.\n",
    "package.json": '{"name": "shop", "scripts": {"test": "jest"}, "private": true}\n',
    "locales/en.json": '{"password": "Password", "token": "Token", "secret": "${SECRET}"}\n',
    "config/settings.env.py": "ENV = 'prod'\n",
}


@pytest.mark.parametrize("path", list(WITHHELD))
def test_a_planted_secret_file_is_withheld(path):
    assert secret_reason(path, WITHHELD[path])


@pytest.mark.parametrize("path", list(SHOWN))
def test_a_file_that_only_looks_like_a_secret_store_is_shown(path):
    assert secret_reason(path, SHOWN[path]) == ""


def test_a_token_on_the_last_line_of_the_largest_file_an_upload_may_hold_is_found():
    line = "x = 'a line of ordinary code, nothing to see here'\n"
    lines = (settings.PLANAGENTS_MAX_UPLOAD_BYTES - 1024) // len(line)
    content = line * lines + f'TOKEN = "{GITHUB}"\n'

    assert secret_reason("data/huge.py", content) == (
        f"Holds what looks like a GitHub token (line {lines + 1})."
    )


def test_a_token_past_the_first_megabytes_of_a_packed_file_is_withheld_on_upload():
    # The attack's file: 2.16 MB, the token on line 360,001.
    content = "print('hello')\n" * 360_000 + f"TOKEN = '{GITHUB}'\n"
    pack = f'<file path="src/big.py">\n{content}</file>\n'.encode()

    files = {f.path: f for f in parse_upload([("pack.xml", pack)]).files}

    assert files["src/big.py"].withheld_reason == (
        "Holds what looks like a GitHub token (line 360001)."
    )


def test_a_config_password_says_which_line_it_is_on():
    content = "[db]\nhost = db\n\npassword = s3cr3t-Value9\n"
    assert secret_reason("settings/local.ini", content) == (
        "Holds what looks like a password or key in a configuration file (line 4)."
    )


def test_a_file_made_of_credential_shaped_placeholders_is_withheld_without_judging_each():
    # Each `user:pw@host` here is a documentation placeholder (too short to be a password),
    # judged one by one at tens of microseconds each: 50 MB of them took ~2 minutes.
    line = "see x://u:pw@h\n"
    content = line * ((settings.PLANAGENTS_MAX_UPLOAD_BYTES - 1024) // len(line))

    started = time.perf_counter()
    reason = secret_reason("docs/urls.txt", content)

    assert reason == (
        "Holds over 10,000 strings shaped like credentials (up to line 10000): withheld rather "
        "than checked one by one."
    )
    assert time.perf_counter() - started < 10  # ~0.5 s here; 2 minutes before


def test_a_config_file_of_references_is_withheld_without_judging_each():
    content = "password: ${DB_PASSWORD}\n" * 20_000
    assert secret_reason("settings.yaml", content).startswith("Holds over 10,000 strings")
    assert secret_reason("settings.yaml", "password: ${DB_PASSWORD}\n" * 100) == ""
