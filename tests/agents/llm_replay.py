"""Replays recorded provider HTTP responses (tests/fixtures/llm/<vendor>/) through the real SDKs
by handing them an HTTP client whose transport answers from a script instead of the network."""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "llm"
SSE_HEADERS = {"content-type": "text/event-stream; charset=utf-8"}


def events(vendor: str, name: str) -> list[bytes]:
    """The SSE events of a recorded stream, each with its blank-line terminator."""
    raw = (FIXTURES / vendor / name).read_bytes()
    return [part + b"\n\n" for part in re.split(rb"\r?\n\r?\n", raw) if part.strip()]


class Replay:
    """A scripted server for one vendor. Queue responses with the helpers, then pass
    `client()` to the provider. Every request the SDK sent is kept in `requests`."""

    def __init__(self, vendor: str, *, key: str = "") -> None:
        self.vendor = vendor
        self.key = key  # substituted for {key} in recorded error bodies
        # openai 3.x speaks httpx2 (a fork with its own classes); the others httpx.
        self.httpx: Any = httpx2 if vendor == "openai" else httpx
        self.queue: deque[Any] = deque()
        self.requests: list[Any] = []

    # -- scripting

    def stream(self, name: str) -> Replay:
        self.queue.append(lambda: self._response(200, SSE_HEADERS, iter(events(self.vendor, name))))
        return self

    def cut(self, name: str, after: int) -> Replay:
        """Stream the first `after` events of `name`, then go silent until the read times out."""

        def body() -> Iterator[bytes]:
            yield from events(self.vendor, name)[:after]
            raise self.httpx.ReadTimeout("The read operation timed out")

        self.queue.append(lambda: self._response(200, SSE_HEADERS, body()))
        return self

    def error(self, status: int, name: str, headers: dict[str, str] | None = None) -> Replay:
        text = (FIXTURES / self.vendor / name).read_text().replace("{key}", self.key)
        json.loads(text)
        head = {"content-type": "application/json; charset=UTF-8", **(headers or {})}
        self.queue.append(lambda: self._response(status, head, iter([text.encode()])))
        return self

    # -- the transport

    def client(self) -> Any:
        return self.httpx.Client(transport=self.httpx.MockTransport(self._handle))

    def _handle(self, request: Any) -> Any:
        request.read()
        self.requests.append(request)
        if not self.queue:
            raise AssertionError(f"unexpected request to {request.url}")
        return self.queue.popleft()()

    def _response(self, status: int, headers: dict[str, str], body: Iterator[bytes]) -> Any:
        return self.httpx.Response(status, headers=headers, content=body)

    def body(self, index: int = -1) -> dict[str, Any]:
        return json.loads(self.requests[index].content)
