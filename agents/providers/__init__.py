"""LLM profiles: the named ways to reach a model, and the one function that builds a provider.

Each profile is a row in PROFILES. A new backend (Gemini, GLM, an OpenAI-compatible endpoint)
is one module with an `LLMProvider` subclass plus one row here whose `check` says, cheaply,
why it cannot be used (missing key, missing package) or "" when it can.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

from .base import LLMProvider, ProviderUnavailable
from .weights import QWEN_CODER_05B, QWEN_CODER_15B, SMOLLM2_135M, ModelSpec, install_hint

__all__ = [
    "PROFILES",
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


@dataclass(frozen=True)
class Profile:
    name: str
    label: str
    backend: str
    model: str
    build: Callable[[str], LLMProvider]  # profile name -> provider; may import lazily
    check: Callable[[], str]  # "" when usable; must not load or hash anything
    listed: Callable[[], bool] = lambda: True


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
        "fake",
        "Scripted (tests and demos)",
        "scripted",
        "scripted",
        _fake_build,
        _fake_check,
        listed=_fake_enabled,
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
    )


def list_profiles() -> list[ProfileInfo]:
    """Every profile offered here, usable or not (the UI greys out the unusable ones)."""
    return [_info(p) for p in PROFILES if p.listed()]


def get_profile_info(name: str) -> ProfileInfo:
    return _info(_find(name))


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
