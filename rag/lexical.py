"""Tokens for the lexical (BM25) index: identifiers split on snake_case and camelCase."""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_STOP = frozenset(
    {
        *("a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "if", "in", "into"),
        *("is", "it", "of", "on", "or", "the", "this", "to", "with"),
        *("def", "self", "return", "import", "none", "true", "false"),
        *("const", "let", "var", "function", "class", "new"),
    }
)


def tokenize(text: str) -> list[str]:
    """Lower-case identifiers and their parts: `checkPassword` → checkpassword, check, password."""
    tokens: list[str] = []
    for word in _WORD.findall(text):
        parts = [p for piece in word.split("_") for p in _CAMEL.split(piece) if p]
        lowered = word.lower().strip("_")
        if lowered and lowered not in _STOP and not lowered.isdigit():
            tokens.append(lowered)
        if len(parts) > 1:
            tokens.extend(p.lower() for p in parts if len(p) > 1 and p.lower() not in _STOP)
    return tokens


def path_tokens(path: str) -> list[str]:
    """A path's segments and stem, split like identifiers."""
    return tokenize(re.sub(r"[/.\-]", " ", path))


def document_tokens(path: str, text: str) -> list[str]:
    """A chunk's tokens: its path's segments and stem, then the identifiers in its text."""
    return path_tokens(path) + tokenize(text)


def file_tokens(path: str, content: str) -> list[str]:
    """A whole file's tokens for the file-level index: its path tokens (twice, since a path
    names what the whole file is about), then the identifiers in its content."""
    path_part = path_tokens(path)
    return path_part + path_part + tokenize(content)
