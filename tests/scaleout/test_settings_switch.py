"""DATABASE_URL and REDIS_URL switch the scale-out services on; bad URLs fail loudly."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from planagents.env import env_database, env_redis_url

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = os.environ.get("PLANAGENTS_TEST_REDIS_URL", "redis://127.0.0.1:6379/9")


def test_it_reads_a_postgres_url(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://bob:pw@db.internal:5433/plans")
    config = env_database("DATABASE_URL")
    assert config is not None
    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert (config["HOST"], config["PORT"], config["NAME"]) == ("db.internal", 5433, "plans")


@pytest.mark.parametrize(
    "url",
    ["mysql://x@h/db", "postgres://h:port/db", "postgres://h:5432", "not a url"],
)
def test_it_refuses_a_malformed_database_url(monkeypatch, url):
    monkeypatch.setenv("DATABASE_URL", url)
    with pytest.raises(ImproperlyConfigured, match="DATABASE_URL"):
        env_database("DATABASE_URL")


@pytest.mark.parametrize("url", ["http://h:6379", "redis://h:port", "redis://:6379", "redis://h/x"])
def test_it_refuses_a_malformed_redis_url(monkeypatch, url):
    monkeypatch.setenv("REDIS_URL", url)
    with pytest.raises(ImproperlyConfigured, match="REDIS_URL"):
        env_redis_url("REDIS_URL")


def settings_in_child(**env: str) -> str:
    code = (
        "from django.conf import settings as s; "
        "print(s.DATABASES['default']['ENGINE'], s.CHANNEL_LAYERS['default']['BACKEND'], "
        "repr(s.CELERY_BROKER_URL), s.CACHES['default']['BACKEND'].rsplit('.', 1)[-1])"
    )
    clean = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    clean["DJANGO_SETTINGS_MODULE"] = "planagents.settings"
    out = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_without_urls_the_embedded_defaults_stay():
    assert settings_in_child() == (
        "django.db.backends.sqlite3 channels.layers.InMemoryChannelLayer '' LocMemCache"
    )


def test_the_urls_select_postgres_redis_and_celery():
    assert settings_in_child(
        DATABASE_URL="postgres://postgres@127.0.0.1:5432/x", REDIS_URL="redis://127.0.0.1:6379/3"
    ) == (
        "django.db.backends.postgresql channels_redis.core.RedisChannelLayer "
        "'redis://127.0.0.1:6379/3' RedisCache"
    )


@pytest.mark.scaleout
def test_with_redis_every_process_reads_the_cache_another_wrote():
    """A job's progress for a page served by another process, and a share link's comment
    rate counted across web servers, need one cache: Redis, once REDIS_URL is set."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(DJANGO_SETTINGS_MODULE="planagents.settings", REDIS_URL=REDIS_URL)
    key = f"settings-switch-{os.getpid()}"

    def run(code: str) -> str:
        return subprocess.run(
            [sys.executable, "-c", "import django; django.setup(); "
             f"from django.core.cache import cache; {code}"],
            cwd=ROOT, env=env, capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip

    run(f"cache.set({key!r}, 'written by another process', 30)")
    assert run(f"print(cache.get({key!r})); cache.delete({key!r})") == "written by another process"


def test_the_production_settings_pass_the_deploy_check():
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(
        DJANGO_SETTINGS_MODULE="planagents.settings_production",
        DJANGO_SECRET_KEY="x" * 20 + "production-secret-key-for-the-deploy-check-0123456789",
    )
    out = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no issues" in out.stdout
