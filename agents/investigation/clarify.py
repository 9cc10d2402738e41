"""Clarify: after its evidence plan, Agent A may ask the human one question the code cannot
settle. The question is a message of its own (it survives a reload and replays like any
other), the session waits for the human, and their answer feeds the next evidence plan.

At most one question per session, and only a real one: a question that is empty, copies the
prompt or holds a placeholder is ignored (the investigation goes on as if the model had said
synthesize). The human may also let the agents continue without answering."""

from __future__ import annotations

from dataclasses import dataclass

from agents.echoes import is_copied, placeholders
from agents.errors import TurnFailed
from agents.runtime import TurnStream
from conversations.models import Message
from planagents.streaming import publish

NODE = "investigate"
HEAD = "**Question for you:**"
"""How a question message starts (the page's answer box finds the question by it)."""
NO_ANSWER = "(The human let the agents continue without answering: decide from the code.)"


class QuestionAsked(TurnFailed):
    """Agent A asked the human a question: the job ends and the human has the floor."""

    def __init__(self) -> None:
        super().__init__("Agent A asked you a question; answer it below, or let them continue")


@dataclass(frozen=True)
class Asked:
    question: str
    round: int
    """The investigation round that asked it (the next round is planned with the answer)."""
    answer: str
    """What the human replied; NO_ANSWER when they let the agents continue without a reply."""


def usable_question(text: str, prompt: str) -> str:
    """`text` as a question worth the human's time, or "" (see the module docstring)."""
    question = " ".join(text.split())
    if len(question) < 12 or "?" not in question or placeholders(question):
        return ""
    return "" if is_copied(question, prompt) else question


def asked(session_id: int, key: str) -> Asked | None:
    """The session's question under `key` and the human's answer, once it was asked."""
    message = Message.objects.filter(session_id=session_id, turn_key=f"{key}:question").first()
    if message is None or not isinstance(message.data, dict):
        return None
    reply = (
        Message.objects.filter(session_id=session_id, role=Message.Role.USER, seq__gt=message.seq)
        .order_by("seq")
        .first()
    )
    answer = reply.content.strip() if reply is not None else NO_ANSWER
    return Asked(str(message.data.get("question", "")), int(message.data.get("round", 1)), answer)


def ask(session_id: int, key: str, question: str, round_no: int) -> None:
    """Save and show the question, then hand the floor to the human (QuestionAsked)."""
    stream = TurnStream(
        session_id, turn_key=f"{key}:question", role=Message.Role.AGENT, agent="A", node=NODE
    )
    message = stream.existing()
    if message is None:
        stream.open()
        message = stream.finish(
            content=f"{HEAD} {question}", data={"question": question, "round": round_no}
        )
    publish(session_id, {"type": "question", "seq": message.seq, "text": question})
    raise QuestionAsked


def pending_question(session_id: int) -> str:
    """The question the session waits on, or "": asked, and no human message since."""
    message = (
        Message.objects.filter(session_id=session_id, node=NODE, turn_key__endswith=":question")
        .order_by("-seq")
        .first()
    )
    if message is None or not isinstance(message.data, dict):
        return ""
    if Message.objects.filter(
        session_id=session_id, role=Message.Role.USER, seq__gt=message.seq
    ).exists():
        return ""
    return str(message.data.get("question", ""))
