"""Spot files that hold secrets, so they are withheld from chunks, vectors and prompts.

Three checks, each over the whole file:

- **Names** that say a file holds secrets: environment files (`.env`, `prod.env`, `.env.local`,
  `prod.env.local`, not `.env.example`), private keys (`id_rsa*`, `*.pem`, `*.key`, key stores), credential and
  secret files (`credentials.json`, `secrets.yaml`, `.netrc`, `.pypirc`, `.git-credentials`, …).
  No maintained scanner keeps such a list (detect-secrets reads contents only), so it is ours.
- **Tokens** whose format a provider owns: the patterns of detect-secrets' regex plugins (AWS,
  GitHub, GitLab, Slack, Stripe, npm, PyPI, OpenAI, private-key blocks, …), read from the
  installed package, so an upgrade brings its new plugins; plus the few formats it lacks
  (Anthropic, Google API keys, GitHub fine-grained tokens).
- **Assignments** of a secret-sounding key (detect-secrets' keyword list: password, secret,
  api_key, …) to a literal value, in configuration files only (`.ini`, `.cfg`, `.yaml`, `.toml`,
  `.json`, `.properties`, `.tfvars`, `.npmrc`, …), where detect-secrets too accepts an unquoted
  value (a JSON locale's `"password": "Mot de passe"` is withheld too: the safe mistake). In source
  code the same rule flags every test fixture, so it is not applied there.

detect-secrets runs Python `re` patterns line by line, and several can backtrack for a long
time on a hostile line (its keyword pattern, the lookbehinds of its assignment patterns). Here
every pattern is compiled by RE2, which has no backtracking: the few constructs RE2 lacks are
rewritten (a lookbehind for "start of line or a non-word character" consumes that character
instead; a "no such character follows" is dropped, which can only widen a match), and
all tokens run as one automaton over the whole file, linear in its length (~40 ms per MB
here, 2 s for a 50 MB file; the keyword pass runs on configuration files only). Each
match is then checked with detect-secrets' own heuristic filters (templated values, `$VAR`,
UUIDs, sequences), which look at the matched value only.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from functools import cache
from pathlib import PurePosixPath
from typing import Any

import re2
from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.filters import heuristic
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.keyword import DENYLIST as KEYWORDS

log = logging.getLogger(__name__)

_SECRET_NAMES = {
    ".env": "an environment file (.env)",
    ".envrc": "an environment file (.envrc)",
    ".netrc": "a .netrc credentials file",
    "_netrc": "a .netrc credentials file",
    ".pgpass": "a PostgreSQL password file",
    ".pypirc": "a PyPI credentials file",
    ".htpasswd": "an .htpasswd password file",
    ".git-credentials": "a git credentials file",
    ".dockercfg": "a Docker credentials file",
    "credentials": "a credentials file",
}
_SECRET_STEMS = {
    "credentials": "a credentials file",
    "secrets": "a secrets file",
    "secret": "a secrets file",
}
"""Names whose stem says it (credentials.json, secrets.yaml), in a data format; secrets.py is
code that handles secrets, not a store of them."""
_DATA_SUFFIXES = frozenset(
    {".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".env", ".xml", ".txt", ".csv"}
)
_SECRET_SUFFIXES = {
    ".pem": "a PEM key or certificate file",
    ".key": "a private key file",
    ".p12": "a PKCS#12 key store",
    ".pfx": "a PKCS#12 key store",
    ".jks": "a Java key store",
    ".keystore": "a key store",
    ".ppk": "a PuTTY private key",
    ".kdbx": "a KeePass database",
    ".tfstate": "a Terraform state file (it holds every secret Terraform saw)",
}
_ENV_VARIANTS = frozenset({"local", "prod", "production", "staging", "dev", "development"})
"""What follows `.env` in an environment file's name (prod.env.local)."""
_SSH_KEYS = ("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519")
_TEMPLATES = frozenset({"example", "sample", "template", "dist", "defaults", "test", "tpl"})
_CONFIG_SUFFIXES = frozenset(
    {".ini", ".cfg", ".cf", ".cnf", ".conf", ".properties", ".toml", ".yaml", ".yml", ".eyaml",
     ".json", ".tfvars"}
)  # fmt: skip
_CONFIG_NAMES = frozenset({".npmrc", ".yarnrc", ".pypirc", ".pip.conf", "pip.conf", ".s3cfg"})

_SKIPPED_PLUGINS = {
    "IPPublicDetector": "a public IP address is no secret to withhold",
    "JwtTokenDetector": "signed test tokens and documentation examples are everywhere; a live "
    "session token in a repository is rare",
    "TwilioKeyDetector": "AC/SK + 32 lowercase letters or digits matches hashes in lock files",
    "MailchimpDetector": "32 hex digits + -us1 matches hashes next to region names",
    "ArtifactoryDetector": "AP + 9 letters or digits matches ordinary identifiers",
}
"""detect-secrets plugins left out, and why: each flagged files of this project or of the
swe-dev packs with nothing secret in them (bench/secrets_corpus.py counts)."""

_OWN_TOKENS = {
    "Anthropic API Key": r"\bsk-ant-[A-Za-z0-9_-]{32,200}",
    "Google API Key": r"\bAIza[0-9A-Za-z_-]{35}\b",
    "GitHub Fine-grained Token": r"\bgithub_pat_[A-Za-z0-9_]{60,90}\b",
    "NPM Token": r"\bnpm_[A-Za-z0-9]{36}\b",
    "NPM Auth Entry": r"(?m)^[ \t]*(?://[^\s=]{1,200}:)?_(?:authToken|auth|password)[ \t]*="
    r"[ \t]*[^\s$]{8,}",
}
"""Formats detect-secrets lacks or only matches in one form."""


@dataclass(frozen=True)
class _Pattern:
    what: str
    rx: re2._Regexp


def _for_re2(pattern: str) -> str:
    """A detect-secrets pattern in the RE2 dialect (see the module's docstring)."""
    pattern = pattern.replace("(?:(?<=\\W)|(?<=^))", "(?:^|\\W)")
    pattern = re.sub(r"\(\?!(?:\\w|\[[^\]]*\])\)", "", pattern)
    return re.sub(r"\{(\d+),(\d{4,})\}", lambda m: f"{{{m.group(1)},1000}}", pattern)


def _plugin_patterns() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    # The mapping's type is a TypeVar's: say what it holds.
    detector: Any
    for detector in get_mapping_from_secret_type_to_class().values():
        if not issubclass(detector, RegexBasedDetector) or detector.__name__ in _SKIPPED_PLUGINS:
            continue
        for rx in detector.denylist:
            flags = "(?i)" if rx.flags & re.IGNORECASE else ""
            found.append((detector.secret_type, flags + _for_re2(rx.pattern)))
    return found


@cache
def _patterns() -> tuple[re2._Regexp, tuple[_Pattern, ...]]:
    """Every token pattern RE2 can compile, and one automaton running them all."""
    kept: list[_Pattern] = []
    for what, pattern in [*_plugin_patterns(), *_OWN_TOKENS.items()]:
        try:
            kept.append(_Pattern(what, re2.compile(pattern)))
        except re2.error:
            log.warning("a detect-secrets pattern RE2 cannot run was left out: %s", pattern)
    # Each pattern keeps its own flags in a group of its own: `(?i)` applies to that group only.
    combined = "|".join(f"(?:{_inline_flags(p.rx.pattern)})" for p in kept)
    return re2.compile(f"(?m){combined}"), tuple(kept)


def _inline_flags(pattern: str) -> str:
    return f"(?i:{pattern[4:]})" if pattern.startswith("(?i)") else pattern


_OWN_KEYWORDS = ("token", "access_?key", "auth")
"""Keys detect-secrets' list lacks (api_token, aws_access_key, npm's _auth)."""
_KEYWORD = re2.compile(
    r"(?i)(?:"
    + "|".join((*KEYWORDS, *_OWN_KEYWORDS))
    + r")(?:[_-]?(?:access[_-]?)?key|[_-]?token|[_-]?value|s)?[\]'\"]{0,2}[ \t]{0,20}(?:=|:=?)"
    r"[ \t]{0,20}['\"`]?([^\s'\"`,;#]{3,300})"
)
"""detect-secrets' keyword plugin for configuration files (a key from its list, `=` or `:`, an
optionally quoted value), in RE2 and bounded. Unlike detect-secrets, the key must end with the
keyword (or key, token, value after it): `secretName: my-secret` and `password_validators:`
name things, they hold no secret."""
_NOT_A_VALUE = frozenset({"true", "false", "null", "none", "nil", "yes", "no", "on", "off"})
_REFERENCE = re2.compile(r"^(?:\$|%\(|\{\{|!|\[|\(|<|@|ENV\[|env\(|os\.environ)")


def secret_reason(path: str, content: str) -> str:
    """Why `path` must be withheld from the agents, or "" when it looks safe to show them."""
    return _by_name(path) or _by_content(path, content)


def _by_name(path: str) -> str:
    name = PurePosixPath(path).name
    lower = name.lower()
    if lower in _SECRET_NAMES:
        return f"Looks like {_SECRET_NAMES[lower]}."
    stem, _, rest = lower.partition(".")
    suffix = PurePosixPath(lower).suffix
    if lower.startswith(".env.") and lower.removeprefix(".env.") not in _TEMPLATES:
        return f"Looks like an environment file ({name})."
    if suffix == ".env" and not (_TEMPLATES & set(lower.split(".")[:-1])):
        return f"Looks like an environment file ({name})."
    if lower.split(".")[-2:-1] == ["env"] and lower.split(".")[-1] in _ENV_VARIANTS:
        return f"Looks like an environment file ({name})."
    if lower.startswith(_SSH_KEYS) and not lower.endswith(".pub"):
        return "Looks like an SSH private key."
    if suffix in _SECRET_SUFFIXES:
        return f"Looks like {_SECRET_SUFFIXES[suffix]}."
    if stem in _SECRET_STEMS and suffix in _DATA_SUFFIXES and not _TEMPLATES & set(rest.split(".")):
        return f"Looks like {_SECRET_STEMS[stem]} ({name})."
    return ""


MAX_CANDIDATES = 10_000
"""Matches set aside as no secret (placeholders, templates, `user:pw@host` in docs) before a
file is withheld unchecked. Finding the matches is linear, but each costs tens of
microseconds to judge: a 50 MB file made of nothing but `x://u:pw@h` lines took ~2 minutes
of a worker's CPU. Real files hold a handful: 11 at most in this project's files and the 4,810
files of the swe-dev packs (a JSON pack in tests/fixtures), 5 at most in the packs."""


def _by_content(path: str, content: str) -> str:
    if heuristic.is_lock_file(path):
        return ""  # hashes of every dependency, no secrets (detect-secrets skips them too)
    combined, patterns = _patterns()
    judged = 0
    for match in combined.finditer(content):
        text = match.group(0)
        found = next(((p, m) for p in patterns if (m := p.rx.search(text))), None)
        if found is not None:
            pattern, inner = found
            # The secret is the pattern's last group that matched (its value), else the whole.
            secret = next((g for g in reversed(inner.groups()) if g), inner.group(0))[:1000]
            if _plausible_token(secret, text):
                line = _line(content, match.start())
                return f"Holds what looks like {_described(pattern.what)} (line {line})."
        judged += 1
        if judged >= MAX_CANDIDATES:
            return _too_many(content, match.start())
    if _is_config(path):
        for match in _KEYWORD.finditer(content):
            if _plausible_value(match.group(1)):
                line = _line(content, match.start(1))
                return f"Holds what looks like a password or key in a configuration file (line {line})."
            judged += 1
            if judged >= MAX_CANDIDATES:
                return _too_many(content, match.start())
    return ""


def _too_many(content: str, offset: int) -> str:
    return (
        f"Holds over {MAX_CANDIDATES:,} strings shaped like credentials (up to line "
        f"{_line(content, offset)}): withheld rather than checked one by one."
    )


_GENERIC = frozenset(
    {"access", "api", "auth", "basic", "bot", "credentials", "entry", "fine-grained", "key",
     "keys", "oauth", "private", "secret", "storage", "token", "tokens"}
)  # fmt: skip


def _described(secret_type: str) -> str:
    """detect-secrets' "AWS Access Key" as "an AWS access key": brands keep their capitals."""
    words = [w.lower() if w.lower() in _GENERIC else w for w in secret_type.split()]
    words = [{"api": "API", "oauth": "OAuth"}.get(w, w) for w in words]
    if words[-1] in ("credentials", "tokens"):
        return " ".join(words)
    article = "an" if words[0][0].lower() in "aeiou" else "a"
    return f"{article} {' '.join(words)}"


def _line(content: str, offset: int) -> int:
    return content.count("\n", 0, offset) + 1


def _plausible_token(secret: str, text: str) -> bool:
    """detect-secrets' filters for a value in a provider's format, and ours for a password
    in a URL: `user:pw@host` and anonymous FTP are documentation, not credentials."""
    if heuristic.is_sequential_string(secret) or heuristic.is_templated_secret(secret):
        return False
    if text.startswith("://"):
        placeholder = secret.lower() in _PLACEHOLDERS or len(secret) < 6
        return not (placeholder or text.lower().startswith("://anonymous:"))
    return True


_PLACEHOLDERS = frozenset({"password", "passwd", "pass", "secret", "changeme", "token", "xxx"})


def _plausible_value(value: str) -> bool:
    """Not a reference, a switch or a placeholder: detect-secrets' heuristic filters, on the
    value only (at most 300 characters)."""
    return not (
        value.lower() in _NOT_A_VALUE
        or _REFERENCE.search(value)
        or heuristic.is_prefixed_with_dollar_sign(value)
        or heuristic.is_sequential_string(value)
        or heuristic.is_potential_uuid(value)
        or heuristic.is_templated_secret(value)
        or heuristic.is_not_alphanumeric_string(value)
        or value.lower() in _PLACEHOLDERS
    )


def _is_config(path: str) -> bool:
    name = PurePosixPath(path).name.lower()
    return name in _CONFIG_NAMES or PurePosixPath(name).suffix in _CONFIG_SUFFIXES
