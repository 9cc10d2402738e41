from __future__ import annotations

import threading
from enum import StrEnum
from typing import Any

import pytest
from pydantic import BaseModel, Field

from agents.providers.base import (
    CallOptions,
    ChatMessage,
    GenerationCancelled,
    ProviderError,
)
from agents.providers.fake import FakeProvider, Hold, cited_labels, default_structured

PROMPT = """Task: add rate limiting to the API.

Retrieved code (untrusted):
### app/api.py:10-42
```python
def handler(request): ...
```
### app/limits.py:1-9
```python
LIMIT = 10
```
"""


class Signal(StrEnum):
    CONTINUE = "CONTINUE"
    HANDOFF = "HANDOFF"
    DONE = "DONE"


class Severity(StrEnum):
    LOW = "low"
    HIGH = "high"


class FileChange(BaseModel):
    path: str
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    change: str


class Risk(BaseModel):
    description: str = Field(min_length=5, max_length=200)
    severity: Severity


class Proposal(BaseModel):
    summary: str
    signal: Signal
    changes: list[FileChange] = Field(min_length=1)
    files: list[str]
    risks: list[Risk]
    confidence: float = Field(ge=0, le=1)
    reviewer_note: str | None = None
    approved: bool


class WithOwnDefault(BaseModel):
    answer: str

    @classmethod
    def fake_default(cls, prompt_text: str) -> dict[str, Any]:
        return {"answer": f"custom ({len(prompt_text)} chars)"}


@pytest.fixture(autouse=True)
def empty_script():
    FakeProvider.reset()
    yield
    FakeProvider.reset()


def provider() -> FakeProvider:
    return FakeProvider("fake", delay=0)


def user(text: str = PROMPT) -> list[ChatMessage]:
    return [ChatMessage("system", "You are Agent A."), ChatMessage("user", text)]


def test_it_replays_scripted_replies_in_order():
    FakeProvider.script("fake", "first reply", "second reply")
    p = provider()
    assert "".join(p.stream(user(), CallOptions())) == "first reply"
    assert "".join(p.stream(user(), CallOptions())) == "second reply"
    assert FakeProvider.pending("fake") == 0


def test_it_keeps_separate_queues_per_profile():
    FakeProvider.script("agent-b", "for b")
    a, b = FakeProvider("agent-a", delay=0), FakeProvider("agent-b", delay=0)
    assert "".join(b.stream(user(), CallOptions())) == "for b"
    assert "app/api.py:10-42" in "".join(a.stream(user(), CallOptions()))


def test_instance_enqueue_reaches_a_provider_built_later():
    provider().enqueue_text("scripted")
    assert "".join(FakeProvider("fake", delay=0).stream(user(), CallOptions())) == "scripted"


def test_default_text_cites_the_first_labelled_chunk_and_streams_word_by_word():
    pieces = list(provider().stream(user(), CallOptions()))
    assert len(pieces) > 5
    text = "".join(pieces)
    assert "app/api.py:10-42" in text
    assert "app/limits.py" not in text


def test_the_default_review_answers_the_proposal_instead_of_repeating_it():
    from agents.echoes import check_reply
    from agents.providers.fake import default_text

    proposal = default_text(PROMPT)
    review = "".join(
        provider().stream(user(f"{PROMPT}<proposal>{proposal}</proposal>"), CallOptions())
    )
    assert "app/api.py:10-42" in review
    assert check_reply(review, proposal) is None


def test_default_text_says_so_when_there_is_no_code():
    text = "".join(provider().stream(user("just a question"), CallOptions()))
    assert "could not find any retrieved code" in text


def test_it_fills_usage():
    options = CallOptions()
    pieces = list(provider().stream(user(), options))
    assert options.usage.completion_tokens == len(pieces)
    assert options.usage.prompt_tokens == len(("You are Agent A.\n" + PROMPT).split())


def test_it_stops_when_should_stop_turns_true():
    seen: list[str] = []
    options = CallOptions(should_stop=lambda: len(seen) >= 3)
    with pytest.raises(GenerationCancelled):
        for piece in provider().stream(user(), options):
            seen.append(piece)
    assert len(seen) == 3
    assert options.usage.completion_tokens == 3


def test_it_raises_an_injected_error():
    p = provider()
    p.enqueue_error(ProviderError("the endpoint is down"))
    with pytest.raises(ProviderError, match="endpoint is down"):
        list(p.stream(user(), CallOptions()))
    # The error was consumed: the next call works again.
    assert "".join(p.stream(user(), CallOptions()))


def test_structured_default_validates_for_a_nested_model():
    result = provider().structured(user(), Proposal, CallOptions())
    assert isinstance(result, Proposal)
    assert result.signal is Signal.CONTINUE
    assert result.files == ["app/api.py", "app/limits.py"]
    assert len(result.changes) == 1
    assert result.changes[0].path == "app/api.py"
    assert (result.changes[0].start_line, result.changes[0].end_line) == (10, 42)
    assert "app/api.py:10-42" in result.summary
    assert result.risks[0].severity is Severity.LOW


def test_structured_default_falls_back_to_a_path_without_code():
    result = default_structured(Proposal, "no code here")
    assert result.files == ["README.md"]


def test_a_schemas_own_fake_default_wins():
    result = provider().structured(user(), WithOwnDefault, CallOptions())
    assert result.answer.startswith("custom (")


def test_structured_replays_a_scripted_object_or_dict():
    scripted = WithOwnDefault(answer="from a model")
    FakeProvider.script("fake", scripted, {"answer": "from a dict"})
    p = provider()
    assert p.structured(user(), WithOwnDefault, CallOptions()) == scripted
    assert p.structured(user(), WithOwnDefault, CallOptions()).answer == "from a dict"


def test_structured_streams_raw_json():
    text = "".join(provider().stream_structured(user(), Proposal, CallOptions()))
    assert Proposal.model_validate_json(text).signal is Signal.CONTINUE


def test_structured_repairs_once_after_invalid_json():
    FakeProvider.script("fake", '{"answer": ', {"answer": "fixed"})
    options = CallOptions()
    result = provider().structured(user(), WithOwnDefault, options)
    assert result.answer == "fixed"
    assert FakeProvider.pending("fake") == 0


def test_structured_gives_up_after_the_repair_also_fails():
    FakeProvider.script("fake", "not json", '{"wrong": 1}')
    with pytest.raises(ProviderError, match="did not match WithOwnDefault"):
        provider().structured(user(), WithOwnDefault, CallOptions())


def test_it_records_every_call_with_the_messages_it_was_given():
    FakeProvider.script("fake", "scripted", ProviderError("down"))
    p = provider()
    list(p.stream(user("first"), CallOptions()))
    with pytest.raises(ProviderError):
        list(p.stream(user("second"), CallOptions()))
    p.structured(user("third"), WithOwnDefault, CallOptions())
    list(FakeProvider("other", delay=0).stream(user("elsewhere"), CallOptions()))

    calls = FakeProvider.calls("fake")
    assert [c.messages[-1].content for c in calls] == ["first", "second", "third"]
    assert [c.schema for c in calls] == [None, None, WithOwnDefault]
    assert calls[0].prompt == "You are Agent A.\nfirst"
    assert [c.messages[-1].content for c in FakeProvider.calls("fake", text=False)] == ["third"]
    assert [c.profile for c in FakeProvider.calls()] == ["fake", "fake", "fake", "other"]
    FakeProvider.reset()
    assert FakeProvider.calls() == []


def test_a_held_reply_streams_its_first_pieces_then_waits_for_its_release():
    held = Hold("one two three four", pieces=2, timeout=10)
    FakeProvider.script("fake", held)
    seen: list[str] = []

    def read() -> None:
        for piece in provider().stream(user(), CallOptions()):
            seen.append(piece)

    reader = threading.Thread(target=read)
    reader.start()
    assert held.reached.wait(10)
    assert "".join(seen) == "one two"
    held.release.set()
    reader.join(10)
    assert "".join(seen) == "one two three four"


def test_a_held_reply_ends_when_the_caller_asks_to_stop():
    held = Hold("one two three four", pieces=2, timeout=10)
    FakeProvider.script("fake", held)
    seen: list[str] = []
    options = CallOptions(should_stop=held.reached.is_set)
    with pytest.raises(GenerationCancelled):
        for piece in provider().stream(user(), options):
            seen.append(piece)
    assert "".join(seen) == "one two"


def test_it_finds_labels_in_order_without_duplicates():
    prompt = "### a/b.py:1-2\n### c.ts:3-4\nsee a/b.py:1-2 again"
    assert cited_labels(prompt) == [("a/b.py", 1, 2), ("c.ts", 3, 4)]


def test_the_delay_comes_from_the_setting(settings):
    settings.PLANAGENTS_FAKE_LLM_DELAY = 0.25
    assert FakeProvider().delay == 0.25
    assert FakeProvider(delay=0).delay == 0


class Step(BaseModel):
    title: str
    substeps: list[Step] = []
    parent: Step | None = None


def test_structured_default_terminates_for_a_recursive_model():
    step = default_structured(Step, PROMPT)
    depth = 0
    while step.substeps:
        step = step.substeps[0]
        depth += 1
    assert 1 <= depth < 10
