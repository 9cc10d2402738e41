"""LLM profiles: the named ways to reach a model, and the one function that builds a provider.

Each profile is a row in PROFILES. A new backend (Gemini, GLM, an OpenAI-compatible endpoint)
is one module with an `LLMProvider` subclass plus one row here whose `check` says, cheaply,
why it cannot be used (missing key, missing package) or "" when it can.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from .base import LLMProvider, ProviderUnavailable
from .weights import QWEN_CODER_05B, QWEN_CODER_15B, SMOLLM2_135M, ModelSpec, install_hint

__all__ = [
    "PROFILES",
    "estimate_cost",
    "Profile",
    "ProfileInfo",
    "get_profile_info",
    "get_provider",
    "list_profiles",
]


@dataclass(frozen=True)
class ProfileInfo:
    """What the UI shows about a profile."""

    name: str
    label: str
    backend: str  # "llama.cpp", "scripted", later "gemini", "openai", ...
    model: str
    available: bool
    reason: str  # why not, in words a user can act on; "" when available
    key_env: str = ""  # the env var that holds its API key, "" when it needs none
    prices: tuple[float, float] | None = None  # USD per million input / output tokens


@dataclass(frozen=True)
class Profile:
    name: str
    label: str
    backend: str
    model: str
    build: Callable[[str], LLMProvider]  # profile name -> provider; may import lazily
    check: Callable[[], str]  # "" when usable; must not load or hash anything
    listed: Callable[[], bool] = lambda: True
    key_env: str = ""
    # USD per million input / output tokens, read when asked (env may override); None: unknown.
    prices: Callable[[], tuple[float, float] | None] = lambda: None


def _local(spec: ModelSpec) -> tuple[Callable[[str], LLMProvider], Callable[[], str]]:
    def build(name: str) -> LLMProvider:
        from .local import LocalLlamaProvider

        return LocalLlamaProvider(name, spec)

    def check() -> str:
        from .weights import missing_packages

        missing = missing_packages(spec)
        if missing:
            return f"Model weights not installed. Run: {install_hint(spec, missing)}"
        if importlib.util.find_spec("llama_cpp") is None:
            return "llama-cpp-python is not installed. Run: scripts/install_llama.sh"
        return ""

    return build, check


def _remote(module_name: str) -> tuple[Callable[[str], LLMProvider], Callable[[], str]]:
    """build and check for a remote backend module, imported only when used."""

    def module() -> Any:
        return importlib.import_module(f"{__name__}.{module_name}")

    return (lambda name: module().build(name)), (lambda: module().check())


def _prices(
    prefix: str, default: tuple[float, float] | None
) -> Callable[[], tuple[float, float] | None]:
    """Prices from {prefix}_PRICE_IN / {prefix}_PRICE_OUT (USD per million tokens) or the default
    for the default model; an estimate, shown as one."""

    def read() -> tuple[float, float] | None:
        from .remote import env_float

        if not (os.environ.get(f"{prefix}_PRICE_IN") or os.environ.get(f"{prefix}_PRICE_OUT")):
            return default
        return env_float(f"{prefix}_PRICE_IN", 0.0), env_float(f"{prefix}_PRICE_OUT", 0.0)

    return read


def _fake_build(name: str) -> LLMProvider:
    from .fake import FakeProvider

    return FakeProvider(name)


def _fake_enabled() -> bool:
    return bool(getattr(settings, "PLANAGENTS_FAKE_LLM", False))


def _fake_check() -> str:
    return "" if _fake_enabled() else "The scripted profile needs PLANAGENTS_FAKE_LLM=1."


PROFILES: list[Profile] = [
    Profile(
        "local",
        "Qwen2.5-Coder 0.5B (local)",
        "llama.cpp",
        QWEN_CODER_05B.name,
        *_local(QWEN_CODER_05B),
    ),
    Profile(
        "local-1.5b",
        "Qwen2.5-Coder 1.5B (local, better, slower)",
        "llama.cpp",
        QWEN_CODER_15B.name,
        *_local(QWEN_CODER_15B),
    ),
    Profile(
        "local-tiny",
        "SmolLM2 135M (local, fast, for tests)",
        "llama.cpp",
        SMOLLM2_135M.name,
        *_local(SMOLLM2_135M),
    ),
    Profile(
        "gemini",
        "Gemini (Google, needs GEMINI_API_KEY)",
        "gemini",
        os.environ.get("GEMINI_MODEL", "gemini-2.5-flash"),
        *_remote("gemini"),
        key_env="GEMINI_API_KEY",
        prices=_prices("GEMINI", (0.30, 2.50)),  # gemini-2.5-flash list price
    ),
    Profile(
        "glm",
        "GLM (Zhipu / Z.ai, needs GLM_API_KEY)",
        "glm",
        os.environ.get("GLM_MODEL", "glm-4.5-flash"),
        *_remote("glm"),
        key_env="GLM_API_KEY",
        prices=_prices("GLM", (0.0, 0.0)),  # glm-4.5-flash is free
    ),
    Profile(
        "openai",
        "OpenAI-compatible (OpenAI, Ollama, vLLM, LM Studio, OpenRouter)",
        "openai",
        os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
        *_remote("openai_compat"),
        key_env="OPENAI_API_KEY",
        prices=_prices("OPENAI", None),  # depends on the server; set OPENAI_PRICE_IN/OUT
    ),
    Profile(
        "fake",
        "Scripted (tests and demos)",
        "scripted",
        "scripted",
        _fake_build,
        _fake_check,
        listed=_fake_enabled,
    ),
    Profile(
        "fake-backup",
        "Scripted backup (tests and demos)",
        "scripted",
        "scripted",
        _fake_build,
        _fake_check,
        listed=_fake_enabled,
        prices=lambda: (1.0, 2.0),  # made-up prices so tests can see costs add up
    ),
]


def _find(name: str) -> Profile:
    for profile in PROFILES:
        if profile.name == name:
            return profile
    known = ", ".join(p.name for p in PROFILES if p.listed())
    raise ProviderUnavailable(f"Unknown LLM profile '{name}'. Known profiles: {known}.")


def _info(profile: Profile) -> ProfileInfo:
    reason = profile.check()
    return ProfileInfo(
        name=profile.name,
        label=profile.label,
        backend=profile.backend,
        model=profile.model,
        available=not reason,
        reason=reason,
        key_env=profile.key_env,
        prices=profile.prices(),
    )


def list_profiles() -> list[ProfileInfo]:
    """Every profile offered here, usable or not (the UI greys out the unusable ones)."""
    return [_info(p) for p in PROFILES if p.listed()]


def get_profile_info(name: str) -> ProfileInfo:
    return _info(_find(name))


def estimate_cost(profile_name: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """Estimated USD cost of a call, or None when the profile declares no prices."""
    profile = next((p for p in PROFILES if p.name == profile_name), None)
    prices = profile.prices() if profile is not None else None
    if prices is None:
        return None
    return (prompt_tokens * prices[0] + completion_tokens * prices[1]) / 1_000_000


def get_provider(name: str | None = None) -> LLMProvider:
    """A provider for profile `name` (default: PLANAGENTS_DEFAULT_PROFILE).

    Raises ProviderUnavailable when the profile is unknown or cannot run here. Model weights
    are loaded (and verified) on the first call, not here.
    """
    profile = _find(name or settings.PLANAGENTS_DEFAULT_PROFILE)
    reason = profile.check()
    if reason:
        raise ProviderUnavailable(f"The LLM profile '{profile.name}' is unavailable: {reason}")
    return profile.build(profile.name)
