"""Settings that must be safe when nobody sets anything."""

import runpy
from pathlib import Path

import pytest

SETTINGS = Path(__file__).resolve().parents[2] / "planagents" / "settings.py"


def load_settings(monkeypatch, tmp_path, **env: str) -> dict:
    """planagents/settings.py evaluated afresh with only `env` set of the knobs read here."""
    monkeypatch.setenv("PLANAGENTS_DATA_DIR", str(tmp_path))
    for name in ("DJANGO_DEBUG", "DJANGO_ALLOWED_HOSTS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(SETTINGS))


def test_debug_is_off_unless_asked_for(monkeypatch, tmp_path):
    assert load_settings(monkeypatch, tmp_path)["DEBUG"] is False
    assert load_settings(monkeypatch, tmp_path, DJANGO_DEBUG="1")["DEBUG"] is True


def test_only_loopback_names_are_allowed_by_default(monkeypatch, tmp_path):
    hosts = load_settings(monkeypatch, tmp_path)["ALLOWED_HOSTS"]

    assert set(hosts) == {"127.0.0.1", "localhost", "[::1]"}


@pytest.mark.django_db
def test_pages_get_their_css_and_js_with_debug_off(client, settings):
    settings.DEBUG = False

    for path in ("/static/css/app.css", "/static/js/session.js"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert b"".join(response.streaming_content)
