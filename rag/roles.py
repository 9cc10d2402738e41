"""Guess what a file is for from its path: source, test, docs, config, generated, vendored, data."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

ROLES = ("source", "test", "docs", "config", "generated", "vendored", "data")

_VENDORED_DIRS = {"node_modules", "vendor", "vendors", "third_party", "thirdparty",
                  "bower_components", "site-packages", ".venv", "venv", "external"}  # fmt: skip
_GENERATED_DIRS = {"dist", "build", "__generated__", "generated", "coverage", ".next", "out"}
_GENERATED_NAMES = re.compile(
    r"(\.min\.(js|css)|\.map|_pb2(_grpc)?\.pyi?|\.pb\.go|\.generated\.\w+|\.g\.dart)$"
    r"|^(package-lock\.json|yarn\.lock|pnpm-lock\.yaml|poetry\.lock|uv\.lock|cargo\.lock"
    r"|composer\.lock|gemfile\.lock|go\.sum|pipfile\.lock)$"
)
_TEST_DIRS = {"test", "tests", "__tests__", "spec", "specs", "testing", "e2e"}
_TEST_NAMES = re.compile(
    r"^(test_.*\.py|.*_test\.py|conftest\.py|.*_test\.go|.*\.(test|spec)\.[jt]sx?|.*_spec\.rb"
    r"|.*Tests?\.(java|kt|cs|swift))$",
    re.I,
)
_DOCS_DIRS = {"docs", "doc", "documentation"}
_DOCS_SUFFIXES = {".md", ".markdown", ".rst", ".adoc", ".txt"}
_DOCS_NAMES = re.compile(r"^(readme|changelog|changes|history|license|licence|contributing"
                         r"|authors|notice|copying|code_of_conduct)(\.\w+)?$", re.I)  # fmt: skip
_CONFIG_SUFFIXES = {".toml", ".ini", ".cfg", ".conf", ".yaml", ".yml", ".json", ".env"}
_CONFIG_NAMES = re.compile(r"^(dockerfile.*|makefile|procfile|\.[\w.-]+|.*\.config\.[jt]s"
                           r"|manage\.py|setup\.py|requirements.*\.txt)$", re.I)  # fmt: skip
_DATA_DIRS = {"data", "fixtures", "datasets", "samples"}
_DATA_SUFFIXES = {".csv", ".tsv", ".jsonl", ".ndjson", ".parquet", ".xml", ".svg"}


def role_for(path: str) -> str:
    """What the file at `path` is for; the first rule that matches wins."""
    pure = PurePosixPath(path.lower())
    dirs = set(pure.parts[:-1])
    name, suffix = pure.name, pure.suffix
    if dirs & _VENDORED_DIRS:
        return "vendored"
    if dirs & _GENERATED_DIRS or _GENERATED_NAMES.search(name):
        return "generated"
    if dirs & _TEST_DIRS or _TEST_NAMES.match(PurePosixPath(path).name):
        return "test"
    if _DOCS_NAMES.match(name) or suffix in _DOCS_SUFFIXES and not name.startswith("requirements"):
        return "docs"
    if dirs & _DATA_DIRS or suffix in _DATA_SUFFIXES:
        return "data"
    if suffix in _CONFIG_SUFFIXES or _CONFIG_NAMES.match(name):
        return "config"
    if dirs & _DOCS_DIRS:
        return "docs"
    return "source"
