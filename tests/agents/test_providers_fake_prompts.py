"""A test asks the scripted provider what it was asked: the latest prompt of a kind of call (a
schema, or a request saying something), and, when no such call came, which calls did."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from agents.providers.base import CallOptions, ChatMessage
from agents.providers.fake import FakeProvider, PromptNotSent


class Proposal(BaseModel):
    summary: str


def ask(text: str, schema: type[BaseModel] | None = None, profile: str = "fake") -> None:
    messages = [ChatMessage("system", "You are Agent A."), ChatMessage("user", text)]
    provider = FakeProvider(profile, delay=0)
    if schema is None:
        list(provider.stream(messages, CallOptions()))
    else:
        list(provider.stream_structured(messages, schema, CallOptions()))


def test_it_gives_the_latest_prompt_of_a_schema_or_of_a_request():
    ask("Analyse this.\n\nYour analysis:")
    ask("Codebase: a todo app\n\nPropose the change as JSON.", Proposal)
    ask("Review it.\n\nYour review:")
    ask("Codebase: a todo app, again\n\nPropose the change as JSON.", Proposal, "fake-backup")

    assert FakeProvider.prompt(schema="Proposal").endswith("a todo app, again\n\nPropose the change as JSON.")  # fmt: skip
    assert FakeProvider.prompt("fake", schema="Proposal").endswith("a todo app\n\nPropose the change as JSON.")  # fmt: skip
    assert FakeProvider.prompt(asking="Your review:").startswith("You are Agent A.\nReview it.")
    assert len(FakeProvider.prompts(schema="text")) == 2
    assert FakeProvider.prompts(asking="Your review:", schema="Proposal") == []
    # The request is the last message: the system prompt is not what a call asks.
    assert FakeProvider.prompts(asking="You are Agent A.") == []
    call = FakeProvider.latest(asking="Your analysis:")
    assert (call.kind, call.messages[0].content) == ("text", "You are Agent A.")


def test_asking_for_a_prompt_never_sent_names_the_calls_that_were():
    ask("Analyse this.\n\nYour analysis:")
    ask("Propose the change as JSON.", Proposal)
    with pytest.raises(PromptNotSent, match=r"schema='Verdicts'; calls received: text, Proposal\."):
        FakeProvider.prompt(schema="Verdicts")
    FakeProvider.reset()
    with pytest.raises(PromptNotSent, match="asking='Your review:'; calls received: none"):
        FakeProvider.latest(asking="Your review:")
