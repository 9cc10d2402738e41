"""Settings for PlanAgents. Every knob comes from the environment (see the README's table)."""

from pathlib import Path

from planagents.env import env_bool, env_int, env_list, env_path, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = env_path("PLANAGENTS_DATA_DIR", BASE_DIR / "var")
DATA_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DJANGO_DEBUG", True)
SECRET_KEY = env_str("DJANGO_SECRET_KEY") or "dev-only-insecure-key-change-me-in-production"
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
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
        "TEST": {"NAME": str(DATA_DIR / "test.sqlite3")},
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

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
