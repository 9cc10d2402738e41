"""The summary written when a session stops: what was discussed, decided and left open.

A model's summary is checked before it stands, with no model: it is labelled as the model's
summary of the messages it was given; a file path the discussion never mentions is taken out
(a line number it never cites is taken off the path); a claim that something was agreed or
decided is flagged when nobody in the discussion agreed to anything. Each change is noted in
the summary; the model's reply as written stays in the Trace."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from agents.investigation.session import NODE as INVESTIGATION
from agents.prompts import clip_transcript, language_rule
from agents.providers.base import ChatMessage
from agents.review_checks import definitions_in, false_absences
from agents.runtime import TurnStream
from agents.transcript import transcript_lines
from agents.turns import TurnFailed, agent_for, text_turn
from conversations.models import Message, PlanningSession
from conversations.store import message_payload
from planagents.streaming import publish
from rag import index
from rag.languages import language_for
from rag.navigation import Navigator
from rag.paths import Citation, find_citations, parse_citation, tidy

TRANSCRIPT_BUDGET = 5000
LABEL = "_The model's summary of "
"""How every checked summary starts (so a checked one is never checked twice)."""
TAKEN_OUT = "_[a path not in the discussion]_"
"""What stands where a file path the discussion never mentions was taken out."""


def write_summary(session: PlanningSession) -> Message:
    lines = transcript_lines(session)
    # Agent A's evidence plan is a finished agent message too, but nobody said it to anyone.
    replies = session.messages.filter(role=Message.Role.AGENT, state=Message.State.COMPLETE)
    if not replies.exclude(content="").exclude(node=INVESTIGATION).exists():
        # A summary may only summarise what was said. Asked to summarise nothing, a model invents
        # proposals, objections and agreements; so no model is asked.
        return _written(
            session,
            "**Summary.** The session stopped before either agent finished a reply, so nothing "
            "was proposed or decided. The task is unchanged; start a new session to plan it.",
        )
    discussion = clip_transcript(lines, budget=TRANSCRIPT_BUDGET)
    corrected = _corrections(session)
    prompt = (
        f"Task: {session.task}\n\nDiscussion:\n{discussion}\n\n"
        + (f"Checked against the code:\n{corrected}\n\n" if corrected else "")
        + "Summarize the whole discussion for the human: the proposals made, the objections "
        "raised, what was agreed, what is still open, and the files involved (as `path`). Use "
        "short markdown sections. At most 200 words. "
        + ("Do not repeat a claim the check above contradicts as fact. " if corrected else "")
        + language_rule(session.language)
    )
    try:
        message = text_turn(
            session,
            agent_for(session, "A"),
            turn_key="summary",
            node="summary",
            messages=[
                ChatMessage(
                    "system",
                    f"You summarize engineering discussions faithfully. {language_rule(session.language)}",
                ),
                ChatMessage("user", prompt),
            ],
            max_tokens=350,
            role=Message.Role.SYSTEM,
            stoppable=False,
        )
    except TurnFailed:
        # The model is down: a plain outline of the discussion beats no summary.
        outline = (
            "\n".join(f"- {line.splitlines()[0][:200]}" for line in lines) or "- (nothing was said)"
        )
        return _written(session, f"**Summary (model unavailable, outline only)**\n\n{outline}")
    # clip_transcript keeps every line exactly when they all fit the budget.
    return _checked(session, message, len(lines), sum(map(len, lines)) > TRANSCRIPT_BUDGET)


def _corrections(session: PlanningSession) -> str:
    """What the check of the agents' replies found false (agents.review_checks): a name a
    reply said is missing that the code defines, one line each."""
    lines: dict[str, None] = {}
    replies = session.messages.filter(role=Message.Role.AGENT).exclude(data={})
    for data in replies.values_list("data", flat=True):
        found = data.get("false_absences") if isinstance(data, dict) else None
        for item in found if isinstance(found, list) else []:
            if isinstance(item, dict) and {"name", "where"} <= item.keys():
                lines.setdefault(
                    f"- `{item['name']}` is defined at `{item['where']}`; a reply said it is "
                    "not in the code, which is false."
                )
    return "\n".join(lines)


def _written(session: PlanningSession, content: str) -> Message:
    """A summary the app writes itself, with no model call."""
    stream = TurnStream(
        session.pk, turn_key="summary-outline", role=Message.Role.SYSTEM, node="summary"
    )
    stream.open()
    return stream.finish(content=content)


def _checked(session: PlanningSession, message: Message, count: int, clipped: bool) -> Message:
    """The model's summary of `count` messages (the latest that fit, when `clipped`), checked
    against the discussion, stored and shown in place of what streamed. A summary checked
    before (the job ran again) is left as it is."""
    if message.state != Message.State.COMPLETE or message.content.startswith(LABEL):
        return message
    said = (
        session.messages.exclude(node="summary")
        .exclude(state=Message.State.STREAMING)
        .order_by("seq")
        .values_list("content", flat=True)
    )
    navigator = Navigator(index.index_dir(session.codebase_id))
    find = definitions_in(navigator) if navigator.exists() else None
    text = check_summary(
        message.content, "\n".join([session.task, *said]), count, clipped, defined=find
    )
    Message.objects.filter(pk=message.pk).update(content=text)
    message.content = text
    publish(session.pk, {"type": "message.end", "message": message_payload(message)})
    return message


# ---------------------------------------------------------------- the check, no model


_CODE_SPAN = re.compile(r"`([^`\n]{1,300})`")
_WORD = re.compile(r"[^\s`]+")
_EDGES = "()[]{}<>\"'*_,;!?"
_CLAIM = re.compile(r"\b(agreed|agreement|agrees?|decided|decisions?|consensus)\b", re.I)
_ASSENT = re.compile(
    r"\b(agreed|agrees?|agreement|approved?|accept(?:ed|s)?|decided|lgtm|sounds good)\b", re.I
)
_NEGATION = re.compile(r"\b(no|not|nothing|never|none|yet|without)\b", re.I)
_GAP = "\x00"  # where a path was taken out, until its line is looked at


@dataclass(frozen=True)
class _Mention:
    start: int
    end: int
    path: str
    citation: Citation | None
    quoted: bool


def check_summary(
    summary: str,
    said: str,
    messages: int,
    clipped: bool = False,
    *,
    defined: Callable[[str], list[tuple[str, str]]] | None = None,
) -> str:
    """`summary` labelled as the model's summary of `messages` messages, with every file path
    that `said` (the task and the messages) never mentions taken out, every line number it
    never cites taken off its path, every claim of agreement flagged when nobody in `said`
    agreed to anything, and, given the symbol table's lookup `defined`
    (agents.review_checks.definitions_in), every claim that a name is missing from the code
    flagged where the code defines it; what was changed is noted at the end."""
    cited = find_citations(said)
    removed: set[str] = set()
    unlined: set[str] = set()
    text = summary.replace(_GAP, "")
    for mention in reversed(_mentions(text)):
        if not _mentioned(mention.path, said):
            replacement = _GAP
            removed.add(mention.path)
        elif mention.citation is not None and not _cites(cited, mention.citation):
            replacement = f"`{mention.path}`" if mention.quoted else mention.path
            unlined.add(mention.path)
        else:
            continue
        text = text[: mention.start] + replacement + text[mention.end :]
    kept = []
    flagged = absent = 0
    assent = _ASSENT.search(said) is not None
    for line in text.split("\n"):
        if _GAP in line:
            if not re.search(r"\w", line.replace(_GAP, "")):
                continue  # nothing was left of it but a bullet and punctuation
            line = line.replace(_GAP, TAKEN_OUT)
        if not assent and _CLAIM.search(line) and not _NEGATION.search(line):
            line += " _(not found in the discussion)_"
            flagged += 1
        for wrong in false_absences(line, defined) if defined else []:
            line += f" _(not so: the codebase defines `{wrong.name}` at `{wrong.where}`)_"
            absent += 1
        kept.append(line)
    which = f"the latest of the discussion's {messages}" if clipped else str(messages)
    parts = [
        f"{LABEL}{which} message{'' if messages == 1 else 's'}, checked against them._",
        "\n".join(kept).strip() or "(nothing is left once the paths not in the discussion are out)",
    ]
    notes = []
    if removed:
        notes.append(
            f"Taken out: {len(removed)} file path(s) the discussion never mentions (the model's "
            "reply as written is in the Trace)."
        )
    if unlined:
        notes.append(f"Line numbers the discussion never cites taken off {len(unlined)} path(s).")
    if flagged:
        notes.append(f"{flagged} claim(s) of agreement that nobody in the discussion made.")
    if absent:
        notes.append(
            f"{absent} claim(s) that a name is missing from the code, which the code defines."
        )
    if notes:
        parts.append("_" + " ".join(notes) + "_")
    return "\n\n".join(parts)


def _mentions(text: str) -> list[_Mention]:
    """File paths in `text`, in order: in backticks (`todo/api.py`, `api.py:12`), or bare with a
    folder or a line number (todo/api.py, api.py:12)."""
    found: list[_Mention] = []
    spans = [(m.start(), m.end()) for m in _CODE_SPAN.finditer(text)]
    for m in _CODE_SPAN.finditer(text):
        mention = _as_path(m.group(1).strip(), m.start(), m.end(), quoted=True)
        if mention is not None:
            found.append(mention)
    for m in _WORD.finditer(text):
        if any(a <= m.start() < b for a, b in spans):
            continue
        word = m.group().strip(_EDGES).rstrip(".:")
        start = m.start() + m.group().find(word)
        mention = _as_path(word, start, start + len(word), quoted=False)
        if mention is not None and ("/" in word or mention.citation is not None):
            found.append(mention)
    return sorted(found, key=lambda f: f.start)


def _as_path(written: str, start: int, end: int, *, quoted: bool) -> _Mention | None:
    """`written` as a file path: a citation, or a name whose extension says what it holds
    (`api.py`, not `request.user`)."""
    if not written or any(c.isspace() for c in written) or "://" in written:
        return None
    citation = parse_citation(written)
    if citation is not None:
        return _Mention(start, end, citation.path, citation, quoted)
    path = tidy(written)
    if path and language_for(path):
        return _Mention(start, end, path, None, quoted)
    return None


def _mentioned(path: str, said: str) -> bool:
    """Whether `said` names `path`, whole or as the end of a longer path (`api.py` in
    `todo/api.py`), never as part of a longer name (`a.py` in `data.py`)."""
    return re.search(rf"(?<![\w.-]){re.escape(path)}(?![\w-]|\.\w)", said) is not None


def _cites(cited: list[Citation], citation: Citation) -> bool:
    """Whether a citation in the discussion, of the same file, covers these lines."""
    return any(
        _mentioned(citation.path, c.path) or _mentioned(c.path, citation.path)
        for c in cited
        if c.start <= citation.start and citation.end <= c.end
    )
