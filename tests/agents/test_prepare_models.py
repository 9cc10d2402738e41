"""`make run` unpacks and verifies the models it serves before the server starts
(`manage.py prepare_models`): the default profile's and the fallback's."""

from __future__ import annotations

import hashlib
import io
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from agents import providers
from agents.providers import weights
from agents.providers.weights import ModelSpec

SLICES = {"one": [b"GGUF" + b"1" * 500, b"x" * 11], "two": [b"GGUF" + b"2" * 300, b"y" * 7]}


def sliced(site: Path, key: str) -> ModelSpec:
    """A two-slice model in importable packages, like the real ones but tiny."""
    for i, data in enumerate(SLICES[key], start=1):
        package = site / f"prep{key}_part{i}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{i:02d}.bin").write_bytes(data)
    return ModelSpec(
        name=f"prep-{key}",
        filename=f"prep-{key}.gguf",
        parts=weights._split_parts(f"prep{key}-part", f"prep{key}_part", 2),
        sha256=hashlib.sha256(b"".join(SLICES[key])).hexdigest(),
    )


@pytest.fixture
def two_local_profiles(tmp_path, monkeypatch, settings) -> Path:
    site = tmp_path / "site"
    rows = []
    for key in SLICES:
        spec = sliced(site, key)
        build, check = providers._local(spec)
        rows.append(providers.Profile(f"prep-{key}", key, "llama.cpp", spec.name, build, check,
                                      weights=spec))  # fmt: skip
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(providers, "PROFILES", [*providers.PROFILES, *rows])
    weights._verified.clear()
    settings.PLANAGENTS_MODEL_DIR = tmp_path / "models"
    return tmp_path / "models"


def prepare(*names: str) -> str:
    out = io.StringIO()
    call_command("prepare_models", *names, stdout=out)
    return out.getvalue()


def test_it_prepares_the_default_and_the_fallback_model(two_local_profiles, settings):
    settings.PLANAGENTS_DEFAULT_PROFILE = "prep-one"
    settings.PLANAGENTS_FALLBACK_PROFILE = "prep-two"

    said = prepare()

    for key in SLICES:
        path = two_local_profiles / f"prep-{key}.gguf"
        assert path.read_bytes() == b"".join(SLICES[key])
        assert f"Local model ready: prep-{key} ({path})" in said


def test_a_remote_default_leaves_only_the_local_fallback_to_prepare(two_local_profiles, settings):
    settings.PLANAGENTS_DEFAULT_PROFILE = "gemini"
    settings.PLANAGENTS_FALLBACK_PROFILE = "prep-two"

    said = prepare()

    assert sorted(p.name for p in two_local_profiles.glob("*.gguf")) == ["prep-two.gguf"]
    assert "gemini" not in said


def test_a_model_whose_packages_are_missing_is_named_with_its_install_command(
    two_local_profiles, monkeypatch
):
    monkeypatch.setitem(sys.modules, "preptwo_part2", None)

    said = prepare("prep-two", "prep-one")

    assert "The LLM profile 'prep-two' is unavailable" in said
    assert "Run: pip install preptwo-part2" in said
    # The other model is still made ready: one missing package does not stop `make run`.
    assert "Local model ready: prep-one" in said
