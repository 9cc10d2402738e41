"""Every cache a process keeps for its whole life, and its bound, in one place (issue 20).

A server runs for weeks and sees every codebase uploaded and every session run: a cache with
no bound is a leak that grows with each of them. Each cache of that kind is declared in
`BOUNDS` below, by name, with what it holds and its bound; the module that fills it asks for
it by that name with `lru(name)` and never sets a size of its own; a cache held by a library
(llama.cpp's prompt cache) is declared here too, with where it lives. `report()` lists them
with what they hold now (bench/memory_cycles.py prints it after each cycle).

    cache = caches.lru("rag.index")
    cache.put(key, value, size=bytes_it_takes)   # evicts the least recently used past the bound
    cache.get(key)                               # None when absent; marks it recently used

Bounded caches that are not LRUs live where they are, with their bound written there:
`functools.lru_cache(maxsize=…)` of a few small compiled things (agents.schemas,
agents.investigation.evidence, agents.verification, planagents.client_ip), `functools.cache` of
argument-less or per-grammar builders (rag.secrets, rag.symbols, conversations.exports),
per-thread tree-sitter parsers (rag.symbols, gone with their thread), and the scripted
model's latest 1,000 calls (agents.providers.fake, for tests and demos).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any

MB = 1024 * 1024
DEFAULT_INDEX_CACHE_MB = 512
"""PLANAGENTS_INDEX_CACHE_MB's default, for rag.api used without Django settings."""


def _setting(name: str, default: int) -> int:
    """A Django setting, read when it is needed (a test or an operator may change it); the
    default when Django is not configured (rag.api works on plain folders without it)."""
    from django.conf import settings

    if not settings.configured:
        return default
    return int(getattr(settings, name, default))


def index_cache_bytes() -> int:
    return _setting("PLANAGENTS_INDEX_CACHE_MB", DEFAULT_INDEX_CACHE_MB) * MB


def llm_prompt_cache_bytes() -> int:
    return _setting("PLANAGENTS_LLM_CACHE_MB", 0) * MB


@dataclass(frozen=True)
class Bound:
    what: str
    """What the cache holds, and per what."""
    max_bytes: Callable[[], int] | None = None
    """The most its entries may take together (each entry's size as `put` was told)."""
    max_entries: int | None = None
    held_by: str = ""
    """Where the cache lives when it is not an `LRU` of this module ("": it is one)."""


BOUNDS: dict[str, Bound] = {
    "rag.index": Bound(
        "Everything loaded from a codebase's index folder, per file: the FAISS index, the two "
        "bm25s indexes, the code map and the chunk store (with what rag.api and rag.search "
        "derive from them), rag.rerank's facts and rag.navigation's catalogue of "
        "symbols.sqlite. Reloaded when the file's mtime changes.",
        max_bytes=index_cache_bytes,
    ),
    "llm.prompts": Bound(
        "Prompts evicted from the local model's slots, kept in host RAM to be picked up "
        "again, per loaded model. The process running the model can fill it within a few "
        "sessions: the 1.5B model's KV cache is ~28 KB a token at f16, so a 5,000-token "
        "prompt is ~140 MB.",
        max_bytes=llm_prompt_cache_bytes,
        held_by="llama.cpp (agents.providers.local, cache_ram_mib)",
    ),
}


class LRU:
    """A thread-safe map that forgets its least recently used entries past its bound.

    The entry just put is kept even when it alone is over a byte bound: it is in use (a
    query is reading it), and dropping it would reload it on every query; everything else
    goes first."""

    def __init__(self, name: str, bound: Bound) -> None:
        self.name = name
        self.bound = bound
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: Hashable, value: Any, size: int = 0) -> None:
        with self._lock:
            self._forget(key)
            self._items[key] = (value, max(0, size))
            self._bytes += max(0, size)
            max_bytes = self.bound.max_bytes() if self.bound.max_bytes else None
            while len(self._items) > 1 and (
                (max_bytes is not None and self._bytes > max_bytes)
                or (
                    self.bound.max_entries is not None and len(self._items) > self.bound.max_entries
                )
            ):
                self._forget(next(iter(self._items)))

    def pop(self, key: Hashable) -> None:
        with self._lock:
            self._forget(key)

    def discard_where(self, predicate: Callable[[Hashable], bool]) -> None:
        with self._lock:
            for key in [key for key in self._items if predicate(key)]:
                self._forget(key)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    def __iter__(self) -> Iterator[Hashable]:
        """The keys, least recently used first (as they were when iterating began)."""
        with self._lock:
            return iter(list(self._items))

    @property
    def size(self) -> int:
        """Bytes of the entries, as `put` was told."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def _forget(self, key: Hashable) -> None:
        item = self._items.pop(key, None)
        if item is not None:
            self._bytes -= item[1]


_made: dict[str, LRU] = {}
_made_lock = threading.Lock()


def lru(name: str) -> LRU:
    """The process's cache `name`, with the bound BOUNDS gives it (KeyError for a cache that
    is not declared there: every process-wide cache has its bound in this module)."""
    with _made_lock:
        if name not in _made:
            _made[name] = LRU(name, BOUNDS[name])
        return _made[name]


@dataclass(frozen=True)
class CacheState:
    name: str
    entries: int | None
    bytes: int | None
    max_bytes: int | None
    max_entries: int | None


def report() -> Iterator[CacheState]:
    """Every cache declared: what it holds now (None: held outside Python, or not made yet),
    against its bound."""
    with _made_lock:
        made = dict(_made)
    for name, bound in BOUNDS.items():
        cache = made.get(name)
        yield CacheState(
            name,
            None if cache is None else len(cache),
            None if cache is None else cache.size,
            bound.max_bytes() if bound.max_bytes else None,
            bound.max_entries,
        )
