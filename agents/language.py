"""The language a task is written in, without a model: Vietnamese (with or without its
diacritics) or English. One detector serves the whole app: rag.vietnamese.is_vietnamese, which
also decides when retrieval bridges a query to English."""

from rag.vietnamese import is_vietnamese

LANGUAGE_NAMES = {"en": "English", "vi": "Vietnamese"}


def detect_language(text: str) -> str:
    """Return "vi" for Vietnamese, "en" otherwise."""
    return "vi" if is_vietnamese(text) else "en"
