"""A scripted provider for tests and demos.

Replies are queued per profile on the class, so a test can script the provider that the app
builds by name later:

    FakeProvider.script("fake", "first reply", PlanModel(...), ProviderError("outage"))

With nothing queued it writes a deterministic default that cites the first retrieved chunk of
the prompt ("### app/api.py:10-42"), streamed word by word like a real model.

Every call is recorded with the messages it was given, so a test can check what an agent was
actually shown: `FakeProvider.prompt(schema="Proposal")` is the latest prompt of a call held to
the Proposal schema, `FakeProvider.prompt(asking="Your review:")` the latest whose request (its
last message) says that, and `FakeProvider.calls("fake")[-1].prompt` the latest of all. A `Hold`
reply stops mid-stream until
the test releases it (or the human stops it), so tests of Stop and friends need no timing.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from django.conf import settings
from pydantic import BaseModel

from .base import CallOptions, ChatMessage, GenerationCancelled, LLMProvider, ProviderError, T


@dataclass(frozen=True)
class FailAfter:
    """A scripted reply that streams its first `pieces` pieces of `text`, then raises `error`:
    a provider dying mid-stream."""

    text: str
    pieces: int
    error: BaseException


@dataclass(frozen=True)
class Hold:
    """A scripted reply that streams its first `pieces` pieces of `text`, sets `reached`, then
    waits: for `release` (then streams the rest, or raises `fail`: a model dying mid-reply)
    or for the caller to ask to stop (GenerationCancelled). A reply caught mid-stream for as
    long as a test needs, with no timing involved; `timeout` only bounds how long a broken test
    can hang."""

    text: str
    pieces: int
    reached: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    timeout: float = 60.0
    fail: BaseException | None = None


@dataclass(frozen=True)
class Reading:
    """A scripted reply read slowly, as a busy local model reads a long prompt: `batches`
    batches of `batch` prompt tokens, one every `seconds`, each counted in the call's usage
    as it is read (llama.cpp reports its progress so), with the caller's stop polled while it
    reads; then `text` streams. `started` is set when the reading starts."""

    text: str
    batches: int
    seconds: float
    batch: int = 256
    started: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class Call:
    """One call the provider received."""

    profile: str
    messages: tuple[ChatMessage, ...]
    schema: type[BaseModel] | None  # None for a text call

    @property
    def prompt(self) -> str:
        return _prompt_text(list(self.messages))

    @property
    def kind(self) -> str:
        """What the call asked for: its schema's name ("Proposal", "EvidencePlan", "Verdicts"),
        or "text"."""
        return self.schema.__name__ if self.schema is not None else "text"

    @property
    def request(self) -> str:
        """The last message: where every prompt of the app puts what it asks for."""
        return self.messages[-1].content if self.messages else ""

    def matches(self, schema: str | None, asking: str | None) -> bool:
        return (schema is None or self.kind == schema) and (
            asking is None or asking in self.request
        )


class PromptNotSent(AssertionError):
    """A test asked for the prompt of a call the provider never received."""


Reply = str | BaseModel | dict[str, Any] | list[Any] | BaseException | FailAfter | Hold | Reading

# "app/api.py:10-42", as retrieved chunks are labelled in prompts.
LABEL_RE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.[A-Za-z0-9]+):(\d+)-(\d+)")
DEFAULT_PATH = "README.md"
_MAX_DEPTH = 8


class FakeProvider(LLMProvider):
    model_name = "scripted"
    _queues: ClassVar[dict[str, deque[Reply]]] = {}
    # The latest calls, bounded: a demo server runs the fake for hours.
    _calls: ClassVar[deque[Call]] = deque(maxlen=1000)
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, profile: str = "fake", delay: float | None = None) -> None:
        self.profile = profile
        # Seconds per streamed piece; 0 in unit tests, the default makes demos look alive.
        self.delay = float(settings.PLANAGENTS_FAKE_LLM_DELAY) if delay is None else delay

    # -- scripting ---------------------------------------------------------------------------

    @classmethod
    def script(cls, profile: str, *replies: Reply) -> None:
        """Queue replies for `profile`: str → text, model/dict → structured, exception → raised."""
        with cls._lock:
            cls._queues.setdefault(profile, deque()).extend(replies)

    @classmethod
    def reset(cls) -> None:
        with cls._lock:
            cls._queues.clear()
            cls._calls.clear()

    @classmethod
    def calls(cls, profile: str | None = None, *, text: bool | None = None) -> list[Call]:
        """The calls received so far, oldest first: of one profile, only text calls (text=True)
        or only structured ones (text=False)."""
        with cls._lock:
            return [
                c
                for c in cls._calls
                if (profile is None or c.profile == profile)
                and (text is None or (c.schema is None) == text)
            ]

    @classmethod
    def prompts(
        cls, profile: str | None = None, *, schema: str | None = None, asking: str | None = None
    ) -> list[str]:
        """The prompts received so far, oldest first: of one profile, of the calls held to the
        schema named `schema` ("text" for text calls), of those whose request holds `asking`."""
        return [c.prompt for c in cls.calls(profile) if c.matches(schema, asking)]

    @classmethod
    def prompt(
        cls, profile: str | None = None, *, schema: str | None = None, asking: str | None = None
    ) -> str:
        """The latest prompt of that kind (see `prompts`)."""
        return cls.latest(profile, schema=schema, asking=asking).prompt

    @classmethod
    def latest(
        cls, profile: str | None = None, *, schema: str | None = None, asking: str | None = None
    ) -> Call:
        """The latest call of that kind (see `prompts`), for its system message or request. A
        test that asks for one never sent fails with the kinds of call that were, so it says
        which node did not run."""
        found = [c for c in cls.calls(profile) if c.matches(schema, asking)]
        if not found:
            received = ", ".join(c.kind for c in cls.calls(profile)) or "none"
            wanted = " ".join(
                f"{name}={value!r}"
                for name, value in (("profile", profile), ("schema", schema), ("asking", asking))
                if value is not None
            )
            raise PromptNotSent(
                f"No call matched {wanted or '(anything)'}; calls received: {received}."
            )
        return found[-1]

    @classmethod
    def pending(cls, profile: str) -> int:
        with cls._lock:
            return len(cls._queues.get(profile, ()))

    def enqueue_text(self, text: str) -> None:
        self.script(self.profile, text)

    def enqueue_structured(self, obj: BaseModel | dict[str, Any]) -> None:
        self.script(self.profile, obj)

    def enqueue_error(self, error: BaseException) -> None:
        self.script(self.profile, error)

    def _next(self, messages: list[ChatMessage], schema: type[BaseModel] | None) -> Reply | None:
        with self._lock:
            self._calls.append(Call(self.profile, tuple(messages), schema))
            queue = self._queues.get(self.profile)
            return queue.popleft() if queue else None

    # -- the provider interface --------------------------------------------------------------

    def stream(self, messages: list[ChatMessage], options: CallOptions) -> Iterator[str]:
        return self._reply(messages, None, options, default_text)

    def stream_structured(
        self, messages: list[ChatMessage], schema: type[T], options: CallOptions
    ) -> Iterator[str]:
        return self._reply(
            messages,
            schema,
            options,
            lambda prompt: default_structured(schema, prompt).model_dump_json(),
        )

    def _reply(
        self,
        messages: list[ChatMessage],
        schema: type[BaseModel] | None,
        options: CallOptions,
        default: Callable[[str], str],
    ) -> Iterator[str]:
        reply = self._next(messages, schema)
        prompt = _prompt_text(messages)
        if reply is None:
            yield from self._play(default(prompt), prompt, options)
        elif isinstance(reply, BaseException):
            raise reply
        elif isinstance(reply, FailAfter):
            yield from self._play(reply.text, prompt, options, fail=reply)
        elif isinstance(reply, Hold):
            yield from self._play(reply.text, prompt, options, hold=reply)
        elif isinstance(reply, Reading):
            _read(reply, options)
            yield from self._play(reply.text, "", options)
        else:
            # A scripted str is streamed as is, so a test can feed invalid JSON on purpose.
            text = reply if isinstance(reply, str) else _as_json(reply)
            yield from self._play(text, prompt, options)

    def _play(
        self,
        text: str,
        prompt: str,
        options: CallOptions,
        fail: FailAfter | None = None,
        hold: Hold | None = None,
    ) -> Iterator[str]:
        options.usage.prompt_tokens += len(prompt.split())
        for index, piece in enumerate(re.findall(r"\s*\S+", text) or [text]):
            if fail is not None and index >= fail.pieces:
                raise fail.error
            if hold is not None and index == hold.pieces:
                _wait(hold, options)
                if hold.fail is not None:
                    raise hold.fail
            if options.should_stop is not None and options.should_stop():
                raise GenerationCancelled("Stopped by the user.")
            if self.delay:
                time.sleep(self.delay)
            options.usage.completion_tokens += 1
            yield piece


def _wait(hold: Hold, options: CallOptions) -> None:
    hold.reached.set()
    deadline = time.monotonic() + hold.timeout
    while not hold.release.wait(0.02):
        if options.should_stop is not None and options.should_stop():
            raise GenerationCancelled("Stopped by the user.")
        if time.monotonic() > deadline:
            raise ProviderError(f"a held scripted reply was not released in {hold.timeout} s")


def _read(reading: Reading, options: CallOptions) -> None:
    reading.started.set()
    for _ in range(reading.batches):
        deadline = time.monotonic() + reading.seconds
        while (left := deadline - time.monotonic()) > 0:
            if options.should_stop is not None and options.should_stop():
                raise GenerationCancelled("Stopped while reading the prompt.")
            time.sleep(min(left, 0.02))
        options.usage.prompt_tokens += reading.batch


def _prompt_text(messages: list[ChatMessage]) -> str:
    return "\n".join(m.content for m in messages)


def _as_json(reply: BaseModel | dict[str, Any] | list[Any]) -> str:
    if isinstance(reply, BaseModel):
        return reply.model_dump_json()
    return json.dumps(reply)


def cited_labels(prompt: str) -> list[tuple[str, int, int]]:
    """Distinct (path, start, end) labels in `prompt`, in order of appearance."""
    seen: dict[tuple[str, int, int], None] = {}
    for match in LABEL_RE.finditer(prompt):
        seen.setdefault((match[1], int(match[2]), int(match[3])), None)
    return list(seen)


def default_text(prompt: str) -> str:
    labels = cited_labels(prompt)
    if not labels:
        return (
            "I could not find any retrieved code in the context, so I cannot point at a file "
            "yet. Please index the codebase or name the files this task touches."
        )
    path, start, end = labels[0]
    if "<proposal>" in prompt:  # asked to review a proposal: answer it, do not echo it
        return (
            f"Checked against {path}:{start}-{end}: the proposal leaves the failure path "
            "untested and does not say which callers must change. Add both before approving."
        )
    return (
        f"The relevant code is in {path}:{start}-{end}. I would keep the change there: make "
        "the smallest edit that solves the task, add a test next to it, and check every "
        "caller before merging."
    )


def default_structured(schema: type[T], prompt: str) -> T:
    """A valid `schema` instance: the schema's own `fake_default(prompt)` if it has one,
    else one built by walking its JSON schema."""
    custom = getattr(schema, "fake_default", None)
    if callable(custom):
        value = custom(prompt)
        return value if isinstance(value, schema) else schema.model_validate(value)
    json_schema = schema.model_json_schema()
    walker = _Walker(json_schema, cited_labels(prompt))
    return schema.model_validate(walker.value(json_schema, name=""))


class _Walker:
    """Builds a value for a JSON schema node; field names steer the few cases that matter."""

    def __init__(self, root: dict[str, Any], labels: list[tuple[str, int, int]]) -> None:
        self.root = root
        self.labels = labels or [(DEFAULT_PATH, 1, 1)]
        self.label_index = 0  # which label the current list item is about
        self.depth = 0  # a recursive model (a tree of steps) must end somewhere

    @property
    def label(self) -> tuple[str, int, int]:
        return self.labels[self.label_index % len(self.labels)]

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            ref = node["$ref"]
            target: Any = self.root
            for part in ref.removeprefix("#/").split("/"):
                target = target[part]
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return node

    def value(self, node: dict[str, Any], name: str) -> Any:
        self.depth += 1
        try:
            return self._value(self.resolve(node), name)
        finally:
            self.depth -= 1

    def _value(self, node: dict[str, Any], name: str) -> Any:
        key = name.lower()
        if "const" in node:
            return node["const"]
        if "enum" in node:
            values = node["enum"]
            return "CONTINUE" if key == "signal" and "CONTINUE" in values else values[0]
        for combiner in ("anyOf", "oneOf"):
            if combiner in node:
                options = [o for o in node[combiner] if self.resolve(o).get("type") != "null"]
                if not options or (self.depth > _MAX_DEPTH and len(options) < len(node[combiner])):
                    return None
                return self.value(options[0], name)
        if "allOf" in node:
            merged: dict[str, Any] = {}
            for part in node["allOf"]:
                merged.update(self.resolve(part))
            return self.value(merged, name)
        kind = node.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), None)
        if kind == "object" or "properties" in node:
            return {prop: self.value(sub, prop) for prop, sub in node.get("properties", {}).items()}
        if kind == "array":
            return self.array(node, key)
        if kind == "string":
            return self.string(node, key)
        if kind == "integer":
            return int(self.number(node, key))
        if kind == "number":
            return float(self.number(node, key))
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        return node.get("default")

    def array(self, node: dict[str, Any], key: str) -> list[Any]:
        count = (
            node.get("minItems", 0) if self.depth > _MAX_DEPTH else max(1, node.get("minItems", 0))
        )
        if key in ("files", "paths"):
            count = max(count, min(len(self.labels), 5))
        if "maxItems" in node:
            count = min(count, node["maxItems"])
        items = node.get("items", {})
        result = []
        outer = self.label_index
        for i in range(count):
            self.label_index = outer + i
            result.append(self.value(items, key))
        self.label_index = outer
        return result

    def string(self, node: dict[str, Any], key: str) -> str:
        path, start, end = self.label
        fmt = node.get("format")
        if key == "signal":
            text = "CONTINUE"
        elif key in ("path", "file", "file_path", "files", "paths"):
            text = path
        elif fmt == "date-time":
            text = "2025-01-01T00:00:00Z"
        elif fmt == "date":
            text = "2025-01-01"
        elif fmt == "uuid":
            text = "00000000-0000-4000-8000-000000000000"
        else:
            subject = key.replace("_", " ").strip().capitalize() or "This"
            text = f"{subject} follows from the code in {path}:{start}-{end}."
        if "maxLength" in node:
            text = text[: node["maxLength"]]
        return text.ljust(node.get("minLength", 0), ".")

    def number(self, node: dict[str, Any], key: str) -> float:
        _path, start, end = self.label
        value: float = {"start_line": start, "line": start, "end_line": end}.get(key, 1)
        if "exclusiveMinimum" in node:
            value = max(value, node["exclusiveMinimum"] + 1)
        if "minimum" in node:
            value = max(value, node["minimum"])
        if "exclusiveMaximum" in node:
            value = min(value, node["exclusiveMaximum"] - 1)
        if "maximum" in node:
            value = min(value, node["maximum"])
        return value
