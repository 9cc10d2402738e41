"""The local models served once per machine: `manage.py llm_server` runs llama.cpp's server
(xllamacpp) for each local model on a port of its own, and every process that needs a local
model (each ASGI server, each Celery worker, a bench) reaches it over that port's
OpenAI-compatible API instead of loading its own copy of the weights, each copy running its
own threads on the same cores.

    PLANAGENTS_LLM_SERVER=http://127.0.0.1:8090   the model of the n-th local profile (in
                                                  the PROFILES table) listens on 8090 + n

The requests are the ones the in-process server gets (agents.providers.local: prompt
progress, prompt cache, grammar-constrained JSON, the repeat penalty), streamed as
server-sent events; closing the connection makes the server drop the task, as answering True
to a chunk does in process. Its key is PLANAGENTS_LLM_SERVER_KEY, else the one the server
wrote in the data folder (`key_file`), readable by this user only.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings

from .base import ProviderError, ProviderUnavailable
from .local import LocalLlamaProvider, _Call
from .weights import ModelSpec

log = logging.getLogger(__name__)

KEY_FILE = "llm-server.key"
_checked: dict[str, str] = {}  # url -> the model it serves, once asked
_checked_lock = threading.Lock()


def key_file() -> Path:
    return Path(settings.DATA_DIR) / KEY_FILE


def server_key(create: bool = False) -> str:
    """The shared server's key: the setting, else the key file (written when `create`)."""
    if settings.PLANAGENTS_LLM_SERVER_KEY:
        return str(settings.PLANAGENTS_LLM_SERVER_KEY)
    path = key_file()
    if path.exists():
        return path.read_text().strip()
    if not create:
        raise ProviderUnavailable(
            f"No key for the model server at {settings.PLANAGENTS_LLM_SERVER}: set "
            f"PLANAGENTS_LLM_SERVER_KEY, or start it with `manage.py llm_server` on this "
            f"machine and data folder (it writes {path})."
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(32)
    path.touch(mode=0o600)
    path.write_text(key)
    return key


def local_profiles() -> list[str]:
    """The local profiles in the order their ports are counted."""
    from . import PROFILES

    return [p.name for p in PROFILES if p.weights is not None]


def url_for(profile: str, base: str | None = None) -> str:
    """Where the shared server serves `profile`'s model: the base address's port + the
    profile's place among the local profiles."""
    base = base or str(settings.PLANAGENTS_LLM_SERVER)
    parts = urlsplit(base.rstrip("/"))
    if not parts.hostname or not parts.port:
        raise ProviderUnavailable(
            f"PLANAGENTS_LLM_SERVER must be an address with a port, such as "
            f"http://127.0.0.1:8090 (got {base!r})."
        )
    port = parts.port + local_profiles().index(profile)
    return urlunsplit((parts.scheme, f"{parts.hostname}:{port}", "", "", ""))


class SharedLlamaProvider(LocalLlamaProvider):
    """A local profile's model on the machine's one model server."""

    def __init__(self, profile: str, model_spec: ModelSpec) -> None:
        super().__init__(profile, model_spec)
        self.url = url_for(profile)

    def __repr__(self) -> str:  # never the key
        return f"SharedLlamaProvider({self.profile!r}, {self.url!r})"

    def _open(self, body: dict[str, Any]) -> _Call:
        key = server_key()
        self._check_model(key)
        return _HttpCall(self.url, key, body, self.profile)

    def _check_model(self, key: str) -> None:
        """The port serves this profile's model (asked once per process and address)."""
        import httpx

        with _checked_lock:
            served = _checked.get(self.url)
        if served is None:
            try:
                response = httpx.get(
                    f"{self.url}/v1/models",
                    headers={"Authorization": f"Bearer {key}"},
                    timeout=10,
                )
            except httpx.TransportError as exc:
                raise _unreachable(self.url, self.profile) from exc
            if response.status_code in (401, 403):
                raise ProviderUnavailable(
                    f"The model server at {self.url} refused this process's key (HTTP "
                    f"{response.status_code}): set PLANAGENTS_LLM_SERVER_KEY to its key, or "
                    "run it on this data folder."
                )
            models = [m.get("id") for m in (response.json().get("data") or [])]
            served = str(models[0]) if models else ""
            with _checked_lock:
                _checked[self.url] = served
        if served != self.model_name:
            raise ProviderUnavailable(
                f"The model server at {self.url} serves {served or 'no model'}, not "
                f"{self.model_name} (the profile {self.profile}): start it with "
                f"`manage.py llm_server --profiles {self.profile}` on the same base port."
            )


def _unreachable(url: str, profile: str) -> ProviderUnavailable:
    return ProviderUnavailable(
        f"The model server for {profile} at {url} is not running (PLANAGENTS_LLM_SERVER is "
        f"{settings.PLANAGENTS_LLM_SERVER}): start it with `manage.py llm_server --profiles "
        f"{profile}`, or unset PLANAGENTS_LLM_SERVER to run the model in this process."
    )


class _HttpCall(_Call):
    """A request to the shared server, its server-sent events parsed into the chunks the
    in-process server hands its callback. Cancelling closes the connection, which makes the
    server drop the task."""

    def __init__(self, server: str, key: str, body: dict[str, Any], profile: str) -> None:
        self.server, self.key, self.body, self.profile = server, key, body, profile
        self.url = f"{server}/v1/chat/completions"
        self._response: Any = None
        super().__init__()

    def cancel(self) -> None:
        super().cancel()
        response = self._response
        if response is not None:
            try:
                response.close()  # wakes a read blocked on a quiet connection
            except Exception:  # noqa: BLE001 (already closing on its own thread)
                log.debug("closing a model server response", exc_info=True)

    def _run(self) -> None:
        import httpx

        # No read timeout here: the caller's loop tells a slow prompt from a stalled server
        # (PLANAGENTS_LLM_LOCAL_TIMEOUT) and cancels.
        timeout = httpx.Timeout(None, connect=10.0)
        headers = {"Authorization": f"Bearer {self.key}", "Accept": "text/event-stream"}
        try:
            with (
                httpx.Client(timeout=timeout) as client,
                client.stream("POST", self.url, json=self.body, headers=headers) as response,
            ):
                self._response = response
                if response.status_code != 200:
                    self.queue.put({"error": _error_of(response.read(), response.status_code)})
                    return
                for line in response.iter_lines():
                    if self.stop.is_set():
                        return
                    chunk = _event(line)
                    if chunk is _END:
                        return
                    if chunk is not None:
                        self.queue.put(chunk)
        except httpx.ConnectError:
            self.queue.put(_unreachable(self.server, self.profile))
        except httpx.TransportError as exc:
            if not self.stop.is_set():  # a cancel closes the stream under the reader
                self.queue.put(
                    ProviderError(f"The connection to the model server was lost ({exc})")
                )


_END = object()


def _event(line: str) -> Any:
    """One server-sent event line: its chunk, _END at [DONE], None for anything else. The
    server sends a failure mid-stream as an `error:` line."""
    if line.startswith("data:"):
        data = line[5:].strip()
        if data == "[DONE]":
            return _END
        return json.loads(data)
    if line.startswith("error:"):
        try:
            return {"error": json.loads(line[6:].strip())}
        except ValueError:
            return {"error": {"message": line[6:].strip()}}
    return None


def _error_of(raw: bytes, status: int) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError:
        return {"message": f"HTTP {status}"}
    error = body.get("error", body) if isinstance(body, dict) else body
    return error if isinstance(error, dict) else {"message": str(error)}
