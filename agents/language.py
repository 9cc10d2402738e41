"""The language a task is written in, without a model: Vietnamese (with or without its
diacritics) or English. One detector serves the whole app: rag.vietnamese.is_vietnamese, which
also decides when retrieval bridges a query to English.

`off_language` is the same detector turned on a reply: a Vietnamese session's agent that
answers in English (the 1.5B model does, reading English code and English replies) is redone
once with a correction and then flagged, like an echo (agents.turns, agents.echoes)."""

from __future__ import annotations

import re

from agents.echoes import Problem
from rag.vietnamese import is_vietnamese

LANGUAGE_NAMES = {"en": "English", "vi": "Vietnamese"}
MIN_PROSE_WORDS = 12
"""Replies with fewer words of prose than this ("OK.", a code block) are not judged."""
MAX_CHARS = 20_000

_FENCE = re.compile(r"[ \t]{0,3}(`{3,}|~{3,})")
_WORD = re.compile(r"[^\W\d_]+")


def detect_language(text: str) -> str:
    """Return "vi" for Vietnamese, "en" otherwise."""
    return "vi" if is_vietnamese(text) else "en"


def prose(text: str) -> str:
    """`text` without its fenced code blocks (code is no language of the reply); one pass
    over its lines, so linear whatever the model wrote. An unclosed fence runs to the end."""
    kept: list[str] = []
    fence = ""
    for line in text[:MAX_CHARS].split("\n"):
        opener = _FENCE.match(line)
        if fence:
            closes = opener and opener[1][0] == fence[0] and len(opener[1]) >= len(fence)
            if closes and not line.strip().lstrip(fence[0]):
                fence = ""
            continue
        if opener:
            fence = opener[1]
            continue
        kept.append(line)
    return "\n".join(kept)


def off_language(reply: str, language: str) -> bool:
    """Whether `reply`, written for a session in `language`, is written in another: a
    Vietnamese session's reply of at least MIN_PROSE_WORDS words of prose that is not
    Vietnamese. English sessions are not judged (a Vietnamese reply to one is not a failure
    seen in practice, and English words are also code)."""
    if language != "vi":
        return False
    text = prose(reply)
    if len(_WORD.findall(text)) < MIN_PROSE_WORDS:
        return False
    return not is_vietnamese(text)


def language_problem(reply: str, language: str) -> Problem | None:
    """The redo's correction and the page's flag for a reply in the wrong language, or None."""
    if not off_language(reply, language):
        return None
    name = LANGUAGE_NAMES[language]
    return Problem(
        "language",
        f"Your previous reply was not in {name}, the language of the task. Write the same "
        f"reply again in {name}: every sentence in {name}; keep code, file paths and names "
        "as they are written.",
        f"Flagged: this reply is not in {name}, the language of the task (asked once more to "
        f"write in {name}, it did not).",
    )
