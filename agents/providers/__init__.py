"""LLM profiles: the named ways to reach a model, and the one function that builds a provider.

Each profile is a row in PROFILES. A new backend (Gemini, GLM, an OpenAI-compatible endpoint)
is one module with an `LLMProvider` subclass plus one row here whose `check` says, cheaply,
why it cannot be used (missing key, missing package) or "" when it can.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
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
    "prepare_weights",
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
    note: str = ""  # expected speed and quality, in plain words, for choosing a profile


@dataclass(frozen=True)
class Profile:
    name: str
    label: str
    backend: str
    model: str  # the model it runs; "" when the setting `model_setting` names it
    build: Callable[[str], LLMProvider]  # profile name -> provider; may import lazily
    check: Callable[[], str]  # "" when usable; must not load or hash anything
    listed: Callable[[], bool] = lambda: True
    key_env: str = ""
    # USD per million input / output tokens, read when asked (a setting may override); None:
    # unknown.
    prices: Callable[[], tuple[float, float] | None] = lambda: None
    # Speed and quality in plain words; figures are measured (bench/RESULTS-llm.md) or say not.
    note: str = ""
    model_setting: str = ""  # the setting naming the model, for a backend whose model is chosen
    weights: ModelSpec | None = None  # the GGUF weights of a local profile, None for the others

    def current_model(self) -> str:
        return str(getattr(settings, self.model_setting)) if self.model_setting else self.model


def _local(spec: ModelSpec) -> tuple[Callable[[str], LLMProvider], Callable[[], str]]:
    def build(name: str) -> LLMProvider:
        if settings.PLANAGENTS_LLM_SERVER:  # the machine's one model server
            from .shared import SharedLlamaProvider

            return SharedLlamaProvider(name, spec)
        from .local import LocalLlamaProvider

        return LocalLlamaProvider(name, spec)

    def check() -> str:
        from .weights import missing_packages

        if settings.PLANAGENTS_LLM_SERVER:
            return ""  # the server has the weights; a call that cannot reach it says so

        missing = missing_packages(spec)
        if missing:
            return f"Model weights not installed. Run: {install_hint(spec, missing)}"
        if importlib.util.find_spec("xllamacpp") is None:
            return "xllamacpp is not installed. Run: scripts/setup.sh"
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
    """Prices from the {prefix}_PRICE_IN / {prefix}_PRICE_OUT settings (USD per million tokens)
    or the default for the default model; an estimate, shown as one."""

    def read() -> tuple[float, float] | None:
        price_in = getattr(settings, f"{prefix}_PRICE_IN", None)
        price_out = getattr(settings, f"{prefix}_PRICE_OUT", None)
        if price_in is None and price_out is None:
            return default
        return float(price_in or 0.0), float(price_out or 0.0)

    return read


def _fake_build(name: str) -> LLMProvider:
    from .fake import FakeProvider

    return FakeProvider(name)


def _fake_enabled() -> bool:
    return bool(getattr(settings, "PLANAGENTS_FAKE_LLM", False))


def _fake_check() -> str:
    return "" if _fake_enabled() else "The scripted profile needs PLANAGENTS_FAKE_LLM=1."


# A session stores its profiles' names, and the progress estimates are kept per name: a name
# keeps meaning the model it meant when sessions were started on it (docs/decisions.md, "The
# 1.5B model by default"). The default comes first, as the pickers list it.
PROFILES: list[Profile] = [
    Profile(
        "local-1.5b",
        "Qwen2.5-Coder 1.5B (local)",
        "llama.cpp",
        QWEN_CODER_15B.name,
        *_local(QWEN_CODER_15B),
        weights=QWEN_CODER_15B,
        note=(
            "Runs on this machine's CPU with no key; 1.1 GB of weights. On 12 real issues "
            "(swe-dev) its plans named the file the fix changes in 11 of 12, and its own steps "
            "cited path:line in 82 % of them, against 9 of 12 and 20 % for the 0.5B model "
            "(bench/RESULTS-grounding.md)."
        ),
    ),
    Profile(
        "local",
        "Qwen2.5-Coder 0.5B — fast (local)",
        "llama.cpp",
        QWEN_CODER_05B.name,
        *_local(QWEN_CODER_05B),
        weights=QWEN_CODER_05B,
        note=(
            "Faster, weaker plans: on the same 12 issues its plans named the file the fix "
            "changes in 9 of 12, its own steps citing path:line in 20 % of them "
            "(bench/RESULTS-grounding.md)."
        ),
    ),
    Profile(
        "local-tiny",
        "SmolLM2 135M (local, fast, for tests)",
        "llama.cpp",
        SMOLLM2_135M.name,
        *_local(SMOLLM2_135M),
        weights=SMOLLM2_135M,
        note="For tests only: fast, but its replies are not plans.",
    ),
    Profile(
        "gemini",
        "Gemini (Google, needs GEMINI_API_KEY)",
        "gemini",
        "",
        *_remote("gemini"),
        model_setting="GEMINI_MODEL",
        key_env="GEMINI_API_KEY",
        prices=_prices("GEMINI", (0.30, 2.50)),  # gemini-2.5-flash list price
        note="Strong plans, fast; your code is sent to Google. Costs per token (see Prices).",
    ),
    Profile(
        "glm",
        "GLM (Zhipu / Z.ai, needs GLM_API_KEY)",
        "glm",
        "",
        *_remote("glm"),
        model_setting="GLM_MODEL",
        key_env="GLM_API_KEY",
        prices=_prices("GLM", (0.0, 0.0)),  # glm-4.5-flash is free
        note="Strong plans; your code is sent to Z.ai. The default glm-4.5-flash is free.",
    ),
    Profile(
        "openai",
        "OpenAI-compatible (OpenAI, Ollama, vLLM, LM Studio, OpenRouter)",
        "openai",
        "",
        *_remote("openai_compat"),
        model_setting="OPENAI_MODEL",
        key_env="OPENAI_API_KEY",
        prices=_prices("OPENAI", None),  # depends on the server; set OPENAI_PRICE_IN/OUT
        note=(
            "As good and as fast as the model behind the endpoint; with a local server "
            "(Ollama, vLLM, LM Studio) your code stays on your machine."
        ),
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
        model=profile.current_model(),
        available=not reason,
        reason=reason,
        key_env=profile.key_env,
        prices=profile.prices(),
        note=profile.note,
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


def prepare_weights(name: str | None = None) -> Path | None:
    """Unpack and verify the weights of local profile `name` (default:
    PLANAGENTS_DEFAULT_PROFILE) now, rather than on its first call; the path of the verified
    file, or None for a profile that has no local weights.

    Raises ProviderUnavailable with the command to run when the profile cannot run here.
    """
    profile = _find(name or settings.PLANAGENTS_DEFAULT_PROFILE)
    if profile.weights is None:
        return None
    reason = profile.check()
    if reason:
        raise ProviderUnavailable(f"The LLM profile '{profile.name}' is unavailable: {reason}")
    from .weights import ensure_weights

    return ensure_weights(profile.weights)


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
