"""Settings are read from the environment once, in planagents/settings.py, when the process
starts; the code reads django.conf.settings (so a Celery worker or a subprocess has its own
copy, and a test sets a setting rather than an environment variable)."""

import ast
import runpy
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("agents", "conversations", "planagents")
# Where settings are read from the environment, once, when the settings module is imported.
HOMES = {"planagents/settings.py", "planagents/env.py"}
# Any other module that touches the environment, and why it must.
EXCEPTIONS = {
    "planagents/asgi.py": "names the settings module (DJANGO_SETTINGS_MODULE) before any exists",
    "planagents/celery.py": "names the settings module (DJANGO_SETTINGS_MODULE) before any exists",
}
ENV_NAMES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def environment_reads(tree: ast.Module) -> list[int]:
    """Lines that reach the process environment: os.environ / os.getenv (under any alias of
    `os`), or those names imported from os."""
    os_names = set()
    from_os = set()
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "os" or alias.name.startswith("os."):
                    os_names.add(alias.asname or "os")
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            for alias in node.names:
                if alias.name in ENV_NAMES or alias.name == "*":
                    from_os.add(alias.asname or alias.name)
                    lines.append(node.lineno)
    for node in ast.walk(tree):
        through_os = (
            isinstance(node, ast.Attribute)
            and node.attr in ENV_NAMES
            and isinstance(node.value, ast.Name)
            and node.value.id in os_names
        )
        if through_os or (isinstance(node, ast.Name) and node.id in from_os):
            lines.append(node.lineno)
    return sorted(set(lines))


def modules() -> dict[str, Path]:
    return {
        path.relative_to(ROOT).as_posix(): path
        for package in SCANNED
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def test_no_module_reads_the_environment_outside_the_settings():
    found = {}
    for name, path in modules().items():
        lines = environment_reads(ast.parse(path.read_text(), str(path)))
        if lines and name not in HOMES and name not in EXCEPTIONS:
            found[name] = lines
    assert not found, (
        "Read the environment once, in planagents/settings.py (a named setting, with its "
        f"default), and django.conf.settings where it is needed. Found at: {found}"
    )


def test_only_the_settings_modules_use_the_environment_helpers():
    settings_modules = {"planagents/settings.py", "planagents/settings_production.py"}
    users = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            imported = (
                [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
                if isinstance(node, ast.ImportFrom)
                else [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            if "planagents.env" in imported and name not in settings_modules:
                users.append(name)
    assert not users, f"planagents.env reads the environment: only settings may use it: {users}"


def test_every_exception_is_still_needed():
    stale = [
        name
        for name in EXCEPTIONS
        if not environment_reads(ast.parse((ROOT / name).read_text(), name))
    ]
    assert not stale, f"No longer touches the environment; drop it from EXCEPTIONS: {stale}"


def test_the_scan_sees_every_way_of_reaching_the_environment():
    source = """
import os
import os as system
from os import getenv as read

def at_call_time():
    return os.environ.get("A"), system.getenv("B"), read("C"), os.path.join("x")
"""
    assert environment_reads(ast.parse(source)) == [4, 7]


# The defaults of the README's configuration table.
MOVED = {
    "PLANAGENTS_FALLBACK_PROFILE": "local",
    "PLANAGENTS_LLM_TIMEOUT": 60.0,
    "PLANAGENTS_LLM_RETRIES": 2,
    "PLANAGENTS_LLM_BACKOFF": 1.0,
    "PLANAGENTS_RETRY_AFTER_CAP": 30.0,
    "PLANAGENTS_SESSION_CALL_BUDGET": 200,
    "PLANAGENTS_SESSION_TOKEN_BUDGET": 500_000,
    "PLANAGENTS_FAKE_LLM_DELAY": 0.01,
    "GEMINI_API_KEY": "",
    "GOOGLE_API_KEY": "",
    "GEMINI_MODEL": "gemini-2.5-flash",
    "GLM_API_KEY": "",
    "ZAI_API_KEY": "",
    "ZHIPUAI_API_KEY": "",
    "GLM_MODEL": "glm-4.5-flash",
    "GLM_BASE_URL": "https://open.bigmodel.cn/api/paas/v4/",
    "OPENAI_API_KEY": "",
    "OPENAI_BASE_URL": "",
    "OPENAI_MODEL": "gpt-4o-mini",
    **{
        f"{vendor}_PRICE_{way}": None
        for vendor in ("GEMINI", "GLM", "OPENAI")
        for way in ("IN", "OUT")
    },
}


def load_settings(monkeypatch, tmp_path, **env: str) -> dict:
    monkeypatch.setenv("PLANAGENTS_DATA_DIR", str(tmp_path))
    for name in MOVED:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(ROOT / "planagents" / "settings.py"))


def test_the_llm_settings_default_to_the_readmes_values(monkeypatch, tmp_path):
    loaded = load_settings(monkeypatch, tmp_path)
    assert {name: loaded[name] for name in MOVED} == MOVED


def test_the_llm_settings_are_parsed_as_they_always_were(monkeypatch, tmp_path):
    loaded = load_settings(
        monkeypatch,
        tmp_path,
        PLANAGENTS_LLM_RETRIES="3.0",
        PLANAGENTS_FALLBACK_PROFILE="  ",
        PLANAGENTS_FAKE_LLM_DELAY="-1",
        GLM_API_KEY=" glm.key-with-spaces ",
        OPENAI_PRICE_IN="0.15",
    )
    assert loaded["PLANAGENTS_LLM_RETRIES"] == 3
    assert loaded["PLANAGENTS_FALLBACK_PROFILE"] == "local"  # blank is unset
    assert loaded["PLANAGENTS_FAKE_LLM_DELAY"] == 0.0
    assert loaded["GLM_API_KEY"] == "glm.key-with-spaces"
    assert (loaded["OPENAI_PRICE_IN"], loaded["OPENAI_PRICE_OUT"]) == (0.15, None)


@pytest.mark.parametrize("name", ["PLANAGENTS_FAKE_LLM_DELAY", "PLANAGENTS_LLM_RETRIES"])
def test_a_setting_that_is_not_a_number_fails_at_startup_naming_it(monkeypatch, tmp_path, name):
    with pytest.raises(ImproperlyConfigured, match=f"{name} must be a number, got 'soon'"):
        load_settings(monkeypatch, tmp_path, **{name: "soon"})


def test_changing_the_environment_later_changes_nothing(monkeypatch, settings):
    from agents.providers import get_profile_info, openai_compat

    settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL = "", ""
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    monkeypatch.setenv("OPENAI_MODEL", "from-the-environment")
    assert not get_profile_info("openai").available
    assert openai_compat.configured_model() == settings.OPENAI_MODEL

    settings.OPENAI_BASE_URL = "http://localhost:11434/v1"
    settings.OPENAI_MODEL = "qwen2.5-coder:7b"
    assert get_profile_info("openai").available
    assert get_profile_info("openai").model == "qwen2.5-coder:7b"


def test_api_keys_are_hidden_where_django_shows_settings(settings):
    from django.views.debug import SafeExceptionReporterFilter

    from agents.providers.remote import SECRET_SETTINGS

    for name in SECRET_SETTINGS:
        setattr(settings, name, f"{name.lower()}-value-0042")
    shown = SafeExceptionReporterFilter().get_safe_settings()
    for name in SECRET_SETTINGS:
        assert shown[name] != f"{name.lower()}-value-0042"
        assert set(str(shown[name])) == {"*"}


def test_every_configured_key_is_scrubbed_from_text(settings):
    from agents.providers.remote import SECRET_SETTINGS, scrub

    for name in SECRET_SETTINGS:
        setattr(settings, name, f"{name.lower()}-value-0042")
    text = " ".join(f"{name.lower()}-value-0042" for name in SECRET_SETTINGS)
    assert scrub(text) == " ".join(["***"] * len(SECRET_SETTINGS))
