"""Parsers that turn an uploaded pack into (path, content) pairs."""

from rag.parsers.repomix import PackError, ParsedFile, parse_repomix, sniff

__all__ = ["PackError", "ParsedFile", "parse_repomix", "sniff"]
