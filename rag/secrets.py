"""Spot files that hold secrets, so they are withheld from chunks, vectors and prompts.

The rules are few and high-signal, in the spirit of Repomix's own check (secretlint's
recommended preset): files whose name says they hold secrets (`.env`, private keys, credential
stores) and contents carrying a private-key block or a token whose format a provider owns (AWS,
GitHub, Slack, Google, Stripe, OpenAI, Anthropic, npm, PyPI). Generic "password = …" guesses
are left out: they flag every test fixture. Each pattern starts with a literal prefix and has
bounded repeats, and RE2 guarantees a scan linear in the file's length.
"""

from __future__ import annotations

from pathlib import PurePosixPath

import re2

MAX_SCAN_CHARS = 2 * 1024 * 1024
"""Contents past this are not scanned (zips skip bigger files anyway; packs rarely hold them)."""

_SECRET_NAMES = {
    ".env": "an environment file (.env)",
    ".envrc": "an environment file (.envrc)",
    ".netrc": "a .netrc credentials file",
    ".pgpass": "a PostgreSQL password file",
    ".pypirc": "a PyPI credentials file",
    ".htpasswd": "an .htpasswd password file",
    "credentials": "a credentials file",
    "id_rsa": "an SSH private key",
    "id_dsa": "an SSH private key",
    "id_ecdsa": "an SSH private key",
    "id_ed25519": "an SSH private key",
}
_SECRET_SUFFIXES = {
    ".pem": "a PEM key or certificate file",
    ".key": "a private key file",
    ".p12": "a PKCS#12 key store",
    ".pfx": "a PKCS#12 key store",
    ".jks": "a Java key store",
    ".keystore": "a key store",
}
_ENV_TEMPLATES = frozenset({"example", "sample", "template", "dist", "defaults", "test"})

_TOKENS = [
    ("a private key", r"-----BEGIN (?:[A-Z]{2,10} ){0,2}PRIVATE KEY(?: BLOCK)?-----"),
    ("an AWS access key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("a GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{60,90})\b"),
    ("a Slack token", r"\bxox[abprs]-[0-9A-Za-z-]{10,80}"),
    ("a Google API key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
    ("a Stripe secret key", r"\b[rs]k_live_[0-9A-Za-z]{20,99}\b"),
    ("an Anthropic API key", r"\bsk-ant-[A-Za-z0-9_-]{32,200}"),
    ("an OpenAI API key", r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,200}T3BlbkFJ"),
    ("an npm token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("a PyPI token", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,300}"),
]
# RE2 runs the alternation as one automaton: ~3 ms per MB, where Python's re takes ~200 ms.
_TOKEN = re2.compile("|".join(f"(?P<t{n}>{pattern})" for n, (_, pattern) in enumerate(_TOKENS)))


def secret_reason(path: str, content: str) -> str:
    """Why `path` must be withheld from the agents, or "" when it looks safe to show them."""
    name = PurePosixPath(path).name
    lower = name.lower()
    if lower in _SECRET_NAMES:
        return f"Looks like {_SECRET_NAMES[lower]}."
    if lower.startswith(".env.") and lower.removeprefix(".env.") not in _ENV_TEMPLATES:
        return f"Looks like an environment file ({name})."
    suffix = PurePosixPath(lower).suffix
    if suffix in _SECRET_SUFFIXES:
        return f"Looks like {_SECRET_SUFFIXES[suffix]}."
    head = content[:MAX_SCAN_CHARS]
    match = _TOKEN.search(head)
    if match and match.lastgroup:
        what = _TOKENS[int(match.lastgroup[1:])][0]
        line = content.count("\n", 0, match.start()) + 1
        return f"Holds what looks like {what} (line {line})."
    return ""
