"""Settings for PlanAgents. Every knob comes from the environment (see the README's table)."""

import os
from pathlib import Path

from planagents.env import (
    env_bool,
    env_database,
    env_int,
    env_list,
    env_path,
    env_redis_url,
    env_str,
    redis_channel_layers,
)

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = env_path("PLANAGENTS_DATA_DIR", BASE_DIR / "var")
DATA_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DJANGO_DEBUG", True)
SECRET_KEY = env_str("DJANGO_SECRET_KEY") or "dev-only-insecure-key-change-me-in-production"
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "planagents",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rag",
    "agents",
    "conversations",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "planagents.urls"
ASGI_APPLICATION = "planagents.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# DATABASE_URL (postgres://…) selects PostgreSQL; without it, the embedded SQLite file.
_postgres = env_database("DATABASE_URL")
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": env_path("PLANAGENTS_SQLITE_PATH", DATA_DIR / "planagents.sqlite3"),
        "OPTIONS": {
            # Jobs write from worker threads while requests write too: WAL plus an
            # IMMEDIATE transaction mode keeps SQLite from failing with "database is locked".
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
        },
        # One file per test run: several runs in one tree (CI and a person) must not share it.
        "TEST": {"NAME": str(DATA_DIR / f"test-{os.getpid()}.sqlite3")},
    }
}
if _postgres is not None:
    DATABASES["default"] = _postgres
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# REDIS_URL selects the Redis channel layer and Celery with Redis as its broker; without it,
# the in-memory layer and in-process jobs (one process serves everything).
REDIS_URL = env_redis_url("REDIS_URL")
if REDIS_URL:
    CHANNEL_LAYERS = redis_channel_layers(
        REDIS_URL, capacity=env_int("PLANAGENTS_CHANNEL_CAPACITY", 1000, minimum=10)
    )
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# Celery (only used when REDIS_URL is set; see docs/decisions.md for why each value).
CELERY_BROKER_URL = REDIS_URL
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env_int("PLANAGENTS_JOB_TIME_LIMIT", 1800, minimum=10)
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - min(60, CELERY_TASK_TIME_LIMIT // 10)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_TASK_TIME_LIMIT * 2}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_IGNORE_RESULT = True
# A broker outage (Redis restarted) must not cancel a session that is streaming fine: it keeps
# running, and its publishes resume when Redis is back.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_TASK_DEFAULT_QUEUE = "planagents"
# A job holds a lease on what it works on; it renews it every third of this. A worker that
# dies stops renewing, and after this many seconds another worker may take the work over.
PLANAGENTS_JOB_LEASE_SECONDS = env_int("PLANAGENTS_JOB_LEASE_SECONDS", 60, minimum=3)
# Stamp every streamed event with the time it was published (bench/scaleout measures latency).
PLANAGENTS_EVENT_TIMESTAMPS = env_bool("PLANAGENTS_EVENT_TIMESTAMPS", False)
# How often each Celery worker looks for sessions whose job died (0 turns the sweep off).
PLANAGENTS_SWEEP_SECONDS = env_int("PLANAGENTS_SWEEP_SECONDS", 15, minimum=0)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
WHITENOISE_USE_FINDERS = (
    True  # serve straight from static/ too, so a dev run needs no collectstatic
)

# Uploads: the whole pack must fit in this many bytes; larger requests are refused.
PLANAGENTS_MAX_UPLOAD_BYTES = env_int("PLANAGENTS_MAX_UPLOAD_BYTES", 50 * 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

# Embeddings and index.
PLANAGENTS_INDEX_DIR = DATA_DIR / "indexes"
PLANAGENTS_EMBEDDING_MODEL = env_str("PLANAGENTS_EMBEDDING_MODEL", "all-MiniLM-L6-v2")

# LLM profiles: the default for both agents, and whether the scripted fake is offered
# (it is for tests and demos; it writes deterministic replies from the retrieved code).
PLANAGENTS_MODEL_DIR = env_path("PLANAGENTS_MODEL_DIR", DATA_DIR / "models")
PLANAGENTS_DEFAULT_PROFILE = env_str("PLANAGENTS_DEFAULT_PROFILE", "local")
PLANAGENTS_FAKE_LLM = env_bool("PLANAGENTS_FAKE_LLM", False)
PLANAGENTS_LLM_THREADS = env_int("PLANAGENTS_LLM_THREADS", 2, minimum=1)
PLANAGENTS_LLM_CTX = env_int("PLANAGENTS_LLM_CTX", 8192, minimum=512)

# Workflow limits.
PLANAGENTS_DEBATE_EXCHANGES = env_int("PLANAGENTS_DEBATE_EXCHANGES", 2, minimum=1)
PLANAGENTS_MAX_VALIDATION_RETRIES = env_int("PLANAGENTS_MAX_VALIDATION_RETRIES", 2, minimum=0)
PLANAGENTS_RETRIEVAL_K = env_int("PLANAGENTS_RETRIEVAL_K", 6, minimum=1)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("PLANAGENTS_LOG_LEVEL", "INFO")},
    "loggers": {
        "django.channels.server": {"level": "WARNING"},
        "faiss.loader": {"level": "WARNING"},
    },
}
