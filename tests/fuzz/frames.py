"""Hostile websocket frames, shared by the fuzz test (Hypothesis draws them) and bench/fuzz (a
seeded random.Random draws them), and the harness both send them through.

A frame is built from a recipe of small numbers, so either driver can draw it and a failure can
be replayed: a valid frame of each kind with one field swapped for a hostile JSON value (or
dropped, or the frame wrapped in something), the same frames cut, spliced and stuffed with the
tokens a JSON parser trips on, nesting thousands deep, text around the size cap, and binary
frames. Each is sent over a real SessionConsumer through channels' WebsocketCommunicator.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from conversations.consumers import MAX_FRAME_BYTES, SERVER_FAILED
from conversations.routing import websocket_urlpatterns

TEMPLATES: list[dict[str, str]] = [
    # Field values as raw JSON text, so a field can be swapped for text json.dumps can't make.
    {"type": '"resume"', "after_seq": "0"},
    {"type": '"resume"', "after_seq": "3"},
    {"type": '"history"', "after_seq": "0", "before_seq": "40"},
    {"type": '"user.message"', "text": '"hello agents"'},
    {"type": '"control"', "action": '"modify"', "text": '"smaller steps"'},
    {"type": '"control"', "action": '"approve"'},
    {"type": '"control"', "action": '"stop"'},
    {"type": '"control"', "action": '"continue"'},
    {"type": '"control"', "action": '"cancel"'},
]
FIELDS = ["type", "action", "text", "after_seq", "before_seq", "\u0000", "__proto__", ""]

VALUES: list[str] = [
    "null",
    "true",
    "false",
    "0",
    "-1",
    "1.5",
    "-0.0",
    "1e999",
    "NaN",
    "-Infinity",
    str(2**31),
    str(2**63),
    "9" * 4000,  # parses: an int far past any database column
    "9" * 5000,  # past Python's int-string limit
    '""',
    '"   "',
    '"resume"',
    '"control"',
    '"stop"',
    '"user.message"',
    "[]",
    "{}",
    "[[]]",
    '["stop"]',
    '{"stop": true}',
    '{"type": "resume"}',
    '"\\u0000"',
    '"a\\u0000b"',
    '"\\ud800"',
    '"\\udc00\\ud800"',
    '"\\u2028\\u2029"',
    '"\\"\\\\"',
    '"' + "\u00e9" * 20_000 + '"',  # 40 KB: under the cap
    '"' + "\U0001f600" * 17_000 + '"',  # 17,000 characters but 68 KB: over it
    '"' + "x" * (MAX_FRAME_BYTES - 200) + '"',  # just fits
    '"' + "x" * 70_000 + '"',
    '"' + "x" * 1_000_000 + '"',  # 1 MB
    "[" * 999 + "]" * 999,
    "[" * 5_000 + "]" * 5_000,
    "[" * 20_000 + "]" * 20_000,
    '{"a":' * 3_000 + "1" + "}" * 3_000,
    "[" * 30_000,  # unclosed
]

TOKENS: list[str] = [
    "{",
    "}",
    "[",
    "]",
    '"',
    "\\",
    ",",
    ":",
    "\\u",
    "\\ud800",
    "\u0000",
    "\ud800",
    "NaN",
    "1e999",
    "-",
    '"type"',
    '"control"',
    '"action":',
    "[" * 3_000,
    "{" * 3_000,
    "\ufeff",
    " " * 100,
]

Recipe = tuple[int, int, int, int, Sequence[tuple[int, float, float, int]]]
"""(family, which template, which field, which value or depth, mutations as in inputs.py)."""
FAMILIES = 6
OPERATIONS = 6
DEPTHS = 4_096


@dataclass(frozen=True)
class Frame:
    text: str | None = None
    data: bytes | None = None

    def __repr__(self) -> str:
        raw = self.text if self.text is not None else self.data
        shown = repr(raw)
        return f"Frame({shown[:160]}{'…' if len(shown) > 160 else ''}, {len(raw or '')} long)"


def serialize(template: dict[str, str]) -> str:
    return "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in template.items()) + "}"


def build(recipe: Recipe) -> Frame:
    """The frame a recipe describes. Deterministic in its argument."""
    family, which, field_index, value_index, mutations = recipe
    template = dict(TEMPLATES[which % len(TEMPLATES)])
    name = FIELDS[field_index % len(FIELDS)]
    value = VALUES[value_index % len(VALUES)]
    if family == 0:  # one field swapped for a hostile value
        template[name] = value
        return Frame(serialize(template))
    if family == 1:  # one field dropped, or the whole frame put somewhere odd
        template.pop(name, None)
        wrapped = [
            serialize(template),
            f"[{serialize(template)}]",
            f'{{"frame": {serialize(template)}}}',
            serialize(template) * 2,
            value,
        ]
        return Frame(wrapped[value_index % len(wrapped)])
    if family == 2:  # the text cut, spliced and stuffed with parser tokens
        return Frame(mutate(serialize(template), mutations))
    if family == 3:  # a hostile value mutated
        return Frame(mutate(value, mutations) or " ")
    if family == 4:  # a frame nested inside itself, 1 to 4,096 deep
        depth = 1 + value_index % DEPTHS
        return Frame('{"type": "control", "action": ' * depth + '"stop"' + "}" * depth)
    # family 5: binary frames
    payload = mutate(serialize(template), mutations).encode("utf-8", "surrogatepass")
    return Frame(data=payload or b"\x00")


def draw_recipe(rng: random.Random) -> Recipe:
    """A recipe drawn by a seeded random.Random (the memory test and bench/fuzz)."""
    mutations = [
        (rng.randrange(OPERATIONS), rng.random(), rng.random(), rng.randrange(len(TOKENS)))
        for _ in range(rng.randint(1, 4))
    ]
    return (
        rng.randrange(FAMILIES),
        rng.randrange(len(TEMPLATES)),
        rng.randrange(len(FIELDS)),
        rng.randrange(DEPTHS),
        mutations,
    )


def mutate(text: str, mutations: Sequence[tuple[int, float, float, int]]) -> str:
    """Truncate, delete, duplicate, insert or repeat a token, overwrite: as in inputs.py."""
    out = text
    for operation, where, amount, token_index in mutations:
        at = int(where * len(out))
        span = int(amount * min(len(out) - at, 4096))
        token = TOKENS[token_index % len(TOKENS)]
        if operation == 0:
            out = out[:at]
        elif operation == 1:
            out = out[:at] + out[at + span :]
        elif operation == 2:
            out = out[:at] + out[at : at + span] + out[at:]
        elif operation == 3:
            out = out[:at] + token + out[at:]
        elif operation == 4:
            out = out[:at] + token * (1 + int(amount * 200)) + out[at:]
        else:
            out = out[:at] + token + out[at + len(token) :]
    return out


# ---------------------------------------------------------------- the harness

HISTORY = 60
"""Messages in the fuzzed session: more than one replay sends."""
ANSWER_TIMEOUT = 60.0
"""A safety net only: every frame is answered in milliseconds, or something is broken."""
FINAL = ("error", "session.state", "history.end")
"""The events that end the answer to one frame."""


class Crash(AssertionError):
    """A frame closed the socket, raised in the consumer, or went unanswered."""


@dataclass
class Harness:
    """Sends frames to SessionConsumer over fresh sockets: each must be answered (an error, or
    what the action sends) with the socket open, and a valid resume must work after them."""

    user: Any
    login: Any  # the Django session the sockets are opened with
    session_id: int
    last_seq: int
    app: Any = field(default_factory=lambda: URLRouter(websocket_urlpatterns))
    tried: int = 0
    connections: int = 0
    answers: dict[str, int] = field(default_factory=dict)

    async def connection(self, frames: Sequence[Frame]) -> None:
        comm = WebsocketCommunicator(self.app, f"/ws/sessions/{self.session_id}/")
        comm.scope["user"] = self.user
        comm.scope["session"] = self.login
        connected, code = await comm.connect(timeout=ANSWER_TIMEOUT)
        if not connected:
            raise Crash(f"refused with {code}")
        self.connections += 1
        try:
            await self._send(comm, frames)
        except BaseException:
            with contextlib.suppress(Exception):  # the crash being raised says more
                await comm.disconnect()
            raise
        try:
            await comm.disconnect()
        except Exception:
            raise Crash(f"the consumer raised on disconnect:\n{traceback.format_exc()}") from None

    async def _send(self, comm: WebsocketCommunicator, frames: Sequence[Frame]) -> None:
        for frame in frames:
            self.tried += 1
            message: dict[str, Any] = {"type": "websocket.receive"}
            message.update({"text": frame.text} if frame.text is not None else {})
            message.update({"bytes": frame.data} if frame.data is not None else {})
            await comm.send_input(message)
            answer = await self.answer(comm, frame)
            self.answers[answer["type"]] = self.answers.get(answer["type"], 0) + 1
        # The socket and the session still work: a valid action is still answered.
        await comm.send_json_to({"type": "resume", "after_seq": self.last_seq})
        answer = await self.answer(comm, "the resume after them")
        if answer["type"] != "session.state":
            raise Crash(f"a valid resume got {answer}")

    async def answer(self, comm: WebsocketCommunicator, frame: object) -> dict[str, Any]:
        while True:
            out = await self.output(comm, frame)
            if out["type"] == "websocket.close":
                raise Crash(f"{frame!r} closed the socket with {out.get('code')}")
            event = json.loads(out["text"])
            if event["type"] == "error" and event["message"] == SERVER_FAILED:
                raise Crash(f"the consumer failed on {frame!r}; see the traceback logged")
            if event["type"] in FINAL:
                return dict(event)

    async def output(self, comm: WebsocketCommunicator, frame: object) -> dict[str, Any]:
        """The consumer's next message, or Crash as soon as it ends (communicator's own
        receive_output only looks at the consumer after its whole timeout)."""
        get = asyncio.ensure_future(comm.output_queue.get())
        done, _ = await asyncio.wait(
            {get, comm.future}, timeout=ANSWER_TIMEOUT, return_when=asyncio.FIRST_COMPLETED
        )
        if get in done:
            return dict(get.result())
        get.cancel()
        if comm.future in done:
            try:
                comm.future.result()
            except BaseException:
                raise Crash(
                    f"the consumer raised on {frame!r}:\n{traceback.format_exc()}"
                ) from None
            raise Crash(f"the consumer ended on {frame!r}")
        raise Crash(f"no answer to {frame!r}")


def ended_session_harness(owner: Any) -> Harness:
    """A harness on a finished session with a history to replay, logged in as `owner`.
    Finished, so a valid action the fuzz stumbles on is answered without starting agents."""
    from conversations.models import Message, PlanningSession, PlanningState
    from rag.models import Codebase
    from tests.conversations.wsclient import login_session

    codebase = Codebase.objects.create(owner=owner, name="fuzz", status=Codebase.Status.READY)
    session = PlanningSession.objects.create(
        owner=owner,
        codebase=codebase,
        title="fuzz",
        task="fuzz",
        agent_a_profile="fake",
        agent_b_profile="fake",
        status=PlanningSession.Status.COMPLETED,
        last_seq=HISTORY,
    )
    PlanningState.objects.create(session=session, current_node="completed")
    Message.objects.bulk_create(
        Message(session=session, seq=n, role="agent", agent="AB"[n % 2], content=f"Reply **{n}**")
        for n in range(1, HISTORY + 1)
    )
    return Harness(owner, login_session(owner), session.pk, last_seq=HISTORY)
