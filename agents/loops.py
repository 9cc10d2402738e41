"""Loops: agents saying the same thing again instead of moving on. Small models fall into four
kinds, and an exchange cap only ends them after every remaining turn has been spent:

- repeat: an agent's reply is (near) identical to its own previous reply;
- alternation: both agents hold the same two positions (reply n ≈ reply n-2 for A and for B);
- tool: the same tool with the same argument three times (investigation evidence);
- validation: a proposal fails validation with a problem the previous one already had.

When one fires, the agents stop and the human gets the floor with a system message saying which
loop it was (agents.debate before a turn; agents.planning.nodes instead of the back-edge from
validate_proposal to propose_changes). Only what came after the human last spoke (or after the
last loop note) counts, so the human's reply starts a fresh count.

Similarity is agents.echoes.copied_share (word 3-grams), the one the echo check uses.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agents.echoes import copied_share
from agents.runtime import TurnStream
from conversations.models import Message

NODE = "loop"
REPEAT_SHARE = 0.8
"""Both replies share at least this much of their word 3-grams: near-identical."""
POSITION_SHARE = 0.5
"""Looser, for alternation: each agent restates its position with a few words changed."""
TOOL_REPEATS = 3


@dataclass(frozen=True)
class Loop:
    kind: str  # "repeat", "alternation", "tool" or "validation"
    note: str  # the system message the human reads

    @property
    def message(self) -> str:
        return f"**Loop detected ({self.kind}):** {self.note} The agents stopped; you decide."


def similarity(a: str, b: str) -> float:
    """1.0 for the same text (whitespace aside); else the smaller share of each text's word
    3-grams found in the other, so a short excerpt of a long reply is not "the same"."""
    if " ".join(a.split()) == " ".join(b.split()):
        return 1.0 if a.strip() else 0.0
    return min(copied_share(a, b), copied_share(b, a))


def repeated_reply(replies: Sequence[tuple[str, str]]) -> Loop | None:
    """The latest reply (agent letter, text) is its agent's previous reply again."""
    if not replies:
        return None
    agent, text = replies[-1]
    previous = [t for a, t in replies[:-1] if a == agent]
    if previous and similarity(text, previous[-1]) >= REPEAT_SHARE:
        return Loop("repeat", f"Agent {agent} repeated its previous reply almost word for word.")
    return None


def alternation(replies: Sequence[tuple[str, str]]) -> Loop | None:
    """The last four replies alternate A/B and each agent restates its previous position."""
    if len(replies) < 4:
        return None
    tail = replies[-4:]
    letters = [a for a, _ in tail]
    if letters[0] == letters[1] or letters[0] != letters[2] or letters[1] != letters[3]:
        return None
    if all(similarity(tail[i + 2][1], tail[i][1]) >= POSITION_SHARE for i in (0, 1)):
        return Loop(
            "alternation",
            f"Agents {letters[0]} and {letters[1]} keep restating the same two positions.",
        )
    return None


def repeated_tool(calls: Iterable[tuple[str, str]]) -> Loop | None:
    """The same tool with the same argument (case and spacing aside) TOOL_REPEATS times."""
    counts = Counter((tool, " ".join(argument.lower().split())) for tool, argument in calls)
    for (tool, argument), count in counts.items():
        if count >= TOOL_REPEATS:
            return Loop("tool", f"The investigation ran {tool}({argument}) {count} times.")
    return None


def repeated_validation(problems: Sequence[str], previous: Sequence[str]) -> Loop | None:
    """A validation problem the previous proposal already had."""
    again = [p for p in problems if p in set(previous)]
    if again:
        return Loop("validation", f"The proposal failed validation twice with: {again[0]}")
    return None


def find_loop(
    replies: Sequence[tuple[str, str]],
    tool_calls: Iterable[tuple[str, str]] = (),
    problems: Sequence[str] = (),
    previous_problems: Sequence[str] = (),
) -> Loop | None:
    """The first loop found, most specific first; None when the agents are moving on."""
    return (
        repeated_validation(problems, previous_problems)
        or repeated_tool(tool_calls)
        or alternation(replies)
        or repeated_reply(replies)
    )


def session_loop(
    session_id: int,
    *,
    nodes: Sequence[str] | None = None,
    problems: Sequence[str] = (),
    previous_problems: Sequence[str] = (),
) -> Loop | None:
    """find_loop over the session's messages since the human last spoke (or the last loop
    note): agent replies (of `nodes` when given) and investigation evidence."""
    rows = Message.objects.filter(session_id=session_id, state=Message.State.COMPLETE)
    boundary = (
        rows.filter(role=Message.Role.USER).order_by("-seq").values_list("seq", flat=True).first()
    )
    last_note = rows.filter(node=NODE).order_by("-seq").values_list("seq", flat=True).first()
    since = max(boundary or 0, last_note or 0)
    recent = rows.filter(seq__gt=since).order_by("seq")
    agents = recent.filter(role=Message.Role.AGENT, agent__in=("A", "B"))
    if nodes is not None:
        agents = agents.filter(node__in=nodes)
    replies = [(a, _without_flags(t)) for a, t in agents.values_list("agent", "content")]
    tool_calls = [
        (str(d["evidence"].get("tool", "")), str(d["evidence"].get("argument", "")))
        for d in recent.filter(role=Message.Role.SYSTEM).values_list("data", flat=True)
        if isinstance(d, dict) and isinstance(d.get("evidence"), dict)
    ]
    return find_loop(replies, tool_calls, problems, previous_problems)


def hand_over(session_id: int, loop: Loop, *, turn_key: str) -> Message:
    """Write the loop note (once per turn key: a re-run finds it written)."""
    stream = TurnStream(session_id, turn_key=turn_key, role=Message.Role.SYSTEM, node=NODE)
    existing = stream.existing()
    if existing is not None:
        return existing
    stream.open()
    return stream.finish(content=loop.message, data={"loop": loop.kind})


def noted(session_id: int, turn_key: str) -> bool:
    """Whether the loop note of `turn_key` is written (a re-run hands over again)."""
    return Message.objects.filter(session_id=session_id, turn_key=turn_key, node=NODE).exists()


def _without_flags(text: str) -> str:
    """A reply without the notes the app appended to it (echo and citation flags)."""
    return "\n\n".join(p for p in text.split("\n\n") if not p.startswith("_Flagged"))
