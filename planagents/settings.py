"""Settings for PlanAgents. Every knob comes from the environment (see the README's table)."""

import os
from datetime import timedelta
from pathlib import Path

from planagents.env import (
    env_bool,
    env_database,
    env_float,
    env_int,
    env_list,
    env_networks,
    env_nonblank,
    env_path,
    env_redis_url,
    env_str,
    redis_channel_layers,
)

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = env_path("PLANAGENTS_DATA_DIR", BASE_DIR / "var")
DATA_DIR.mkdir(parents=True, exist_ok=True)

# Off unless asked for: a server started any other way than `make run` (which sets
# DJANGO_DEBUG=1) shows no tracebacks or settings to whoever finds it.
DEBUG = env_bool("DJANGO_DEBUG", False)
SECRET_KEY = env_str("DJANGO_SECRET_KEY") or "dev-only-insecure-key-change-me-in-production"
# Loopback names only, DEBUG or not; a server reached by another name lists it here.
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
    "axes",
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
    # Last, as django-axes asks: it turns a lockout flagged during login into the lockout page.
    "axes.middleware.AxesMiddleware",
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
# Django's cache holds what every process must agree on: the progress a job reports to pages
# served by another process (conversations.progress) and the share-link comment rates
# (conversations.link_comments). One process: its own memory; several: Redis.
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "planagents",
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

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
# Login throttling (django-axes): after PLANAGENTS_LOGIN_FAILURE_LIMIT wrong passwords for one
# username from one address, that pair is refused (the right password too) until
# PLANAGENTS_LOGIN_COOLOFF_MINUTES pass without another try. Keyed on the pair, so guessing
# from one address cannot lock the real user out from theirs, and other users are unaffected.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("PLANAGENTS_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("PLANAGENTS_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# Behind a reverse proxy every request comes from the proxy: list its addresses (or networks)
# and the client's address is read from the X-Forwarded-For it writes (planagents.client_ip).
# From any other address the header is ignored, so a client cannot forge its way around a lockout.
PLANAGENTS_TRUSTED_PROXIES = env_networks("PLANAGENTS_TRUSTED_PROXIES", [])
AXES_CLIENT_IP_CALLABLE = "planagents.client_ip.client_ip"
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
# Request bodies are capped before anything reads them (planagents/limits.py): a request without
# a login may send this much (the login form needs well under 1 KB), a logged-in one this much
# outside the upload pages, which take PLANAGENTS_MAX_UPLOAD_BYTES plus the form around it.
PLANAGENTS_MAX_ANONYMOUS_BODY_BYTES = env_int(
    "PLANAGENTS_MAX_ANONYMOUS_BODY_BYTES", 64 * 1024, minimum=1024
)
PLANAGENTS_MAX_BODY_BYTES = env_int("PLANAGENTS_MAX_BODY_BYTES", 1024 * 1024, minimum=64 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

# Embeddings and index.
PLANAGENTS_INDEX_DIR = DATA_DIR / "indexes"
PLANAGENTS_EMBEDDING_MODEL = env_str("PLANAGENTS_EMBEDDING_MODEL", "all-MiniLM-L6-v2")

# LLM profiles: the default for both agents, and whether the scripted fake is offered
# (it is for tests and demos; it writes deterministic replies from the retrieved code).
PLANAGENTS_MODEL_DIR = env_path("PLANAGENTS_MODEL_DIR", DATA_DIR / "models")
# Qwen2.5-Coder-1.5B: better plans than the 0.5B ("local", the fast one) within the 4-minute
# median session (bench/RESULTS-grounding.md).
PLANAGENTS_DEFAULT_PROFILE = env_str("PLANAGENTS_DEFAULT_PROFILE", "local-1.5b")
PLANAGENTS_FAKE_LLM = env_bool("PLANAGENTS_FAKE_LLM", False)
# Seconds per piece the scripted profile streams (0 in tests; a little makes demos look alive).
PLANAGENTS_FAKE_LLM_DELAY = max(0.0, env_float("PLANAGENTS_FAKE_LLM_DELAY", 0.01))
PLANAGENTS_LLM_THREADS = env_int("PLANAGENTS_LLM_THREADS", 2, minimum=1)
PLANAGENTS_LLM_CTX = env_int("PLANAGENTS_LLM_CTX", 8192, minimum=512)
# The embedded llama.cpp server: parallel slots (each with its own PLANAGENTS_LLM_CTX window and
# prompt cache), seconds without any progress (queued, reading, writing) before a call fails,
# the nice value of its threads (so the web server wins the CPU), and host RAM for prompts
# evicted from the slots.
PLANAGENTS_LLM_SLOTS = env_int("PLANAGENTS_LLM_SLOTS", 2, minimum=1)
PLANAGENTS_LLM_LOCAL_TIMEOUT = env_int("PLANAGENTS_LLM_LOCAL_TIMEOUT", 300, minimum=1)
PLANAGENTS_LLM_NICE = env_int("PLANAGENTS_LLM_NICE", 10, minimum=0)
PLANAGENTS_LLM_CACHE_MB = env_int("PLANAGENTS_LLM_CACHE_MB", 1024, minimum=0)
# The local models' evidence plan from llama.cpp's native tool calls (its chat template)
# instead of a grammar-held JSON plan. Off: both Qwen2.5-Coder models wrote their calls as
# text llama.cpp does not read as calls, so no lookup ran (bench/RESULTS-native-tools.md).
PLANAGENTS_LOCAL_NATIVE_TOOLS = env_bool("PLANAGENTS_LOCAL_NATIVE_TOOLS", False)
# One model server per machine (issue 20): when set, every process reaches the local models
# through the server `manage.py llm_server` runs at this address (its OpenAI-compatible API;
# the model of the n-th local profile listens on this port + n) instead of loading its own
# copy. Its key is read from PLANAGENTS_LLM_SERVER_KEY, else from the key file the server
# writes in the data folder. "" (the embedded default): each process runs its own server.
PLANAGENTS_LLM_SERVER = env_str("PLANAGENTS_LLM_SERVER", "")
PLANAGENTS_LLM_SERVER_KEY = env_nonblank("PLANAGENTS_LLM_SERVER_KEY")
# The model queue (agents.model_queue): at most this many local-model calls generate at once
# on this machine, whichever process makes them (default: the server's slots); the rest wait
# their turn by priority (a live turn, then a section regeneration, then background work). A
# waiting or running call that has not checked in for this many seconds is dead and ignored.
PLANAGENTS_LLM_QUEUE_WIDTH = env_int("PLANAGENTS_LLM_QUEUE_WIDTH", 0, minimum=0)
PLANAGENTS_LLM_QUEUE_STALE = env_int("PLANAGENTS_LLM_QUEUE_STALE", 30, minimum=5)
# Indexing yields to people (issue 20): a codebase's chunks are embedded on threads at this nice
# value, below the local model's (PLANAGENTS_LLM_NICE), so a live turn keeps streaming while
# another codebase indexes.
PLANAGENTS_INDEX_NICE = env_int(
    "PLANAGENTS_INDEX_NICE", min(19, PLANAGENTS_LLM_NICE + 5), minimum=0
)
# Bounded memory (issue 20): the search indexes kept loaded per process, by size (least
# recently used dropped first).
PLANAGENTS_INDEX_CACHE_MB = env_int("PLANAGENTS_INDEX_CACHE_MB", 512, minimum=1)
# Clean shutdown (issue 20): on SIGTERM, seconds the running turns get to park before exit.
PLANAGENTS_SHUTDOWN_GRACE = env_float("PLANAGENTS_SHUTDOWN_GRACE", 5.0)
# Time limits (agents.budget): one LLM call, any backend, from request to last token (at
# least this; three times the call's estimate at this machine's measured speed for its model
# when that is longer; and past it, a call is stopped only once it has stalled); and one run
# of the agents, from the human handing them the floor until it comes back (under the Celery
# soft limit, so the run ends with its own message, not the worker's). Either, when hit,
# stops the call, keeps what was written and gives the human the floor. 0: no limit.
PLANAGENTS_LLM_CALL_TIME_LIMIT = env_int("PLANAGENTS_LLM_CALL_TIME_LIMIT", 600, minimum=0)
PLANAGENTS_SESSION_TIME_LIMIT = env_int(
    "PLANAGENTS_SESSION_TIME_LIMIT", max(CELERY_TASK_SOFT_TIME_LIMIT - 60, 1), minimum=0
)
# Each LLM call's prompt and raw output are kept as a trace (agents.trace), at most this many
# characters per call (the middle of the longest parts is cut).
PLANAGENTS_TRACE_MAX_CHARS = env_int("PLANAGENTS_TRACE_MAX_CHARS", 200_000, minimum=1000)

# The call policy (agents.call_policy): a call that fails before its first token is retried
# this many times, waiting PLANAGENTS_LLM_BACKOFF seconds doubled per retry (with jitter), or
# the provider's Retry-After up to the cap; a turn whose model stays down or dies mid-reply is
# finished on the session's fallback profile, or this one. Each session may spend this many
# calls and tokens before the human is asked (0: no limit).
PLANAGENTS_LLM_RETRIES = int(env_float("PLANAGENTS_LLM_RETRIES", 2))
PLANAGENTS_LLM_BACKOFF = env_float("PLANAGENTS_LLM_BACKOFF", 1.0)
PLANAGENTS_RETRY_AFTER_CAP = env_float("PLANAGENTS_RETRY_AFTER_CAP", 30.0)
PLANAGENTS_FALLBACK_PROFILE = env_nonblank("PLANAGENTS_FALLBACK_PROFILE", "local")
PLANAGENTS_SESSION_CALL_BUDGET = int(env_float("PLANAGENTS_SESSION_CALL_BUDGET", 200))
PLANAGENTS_SESSION_TOKEN_BUDGET = int(env_float("PLANAGENTS_SESSION_TOKEN_BUDGET", 500_000))

# Remote providers (agents/providers): seconds to connect and of silence between two streamed
# pieces; then per vendor its keys (the first one set is used), model, endpoint and prices
# (USD per million input/output tokens; None: the default model's list price). The keys are
# held here and nowhere else: agents.providers.remote scrubs every one of them from replies,
# traces, errors and log lines, and Django hides settings named *KEY* on its debug pages.
PLANAGENTS_LLM_TIMEOUT = env_float("PLANAGENTS_LLM_TIMEOUT", 60.0)
GEMINI_API_KEY = env_nonblank("GEMINI_API_KEY")
GOOGLE_API_KEY = env_nonblank("GOOGLE_API_KEY")
GEMINI_MODEL = env_nonblank("GEMINI_MODEL", "gemini-2.5-flash")
GEMINI_PRICE_IN = env_float("GEMINI_PRICE_IN", None)
GEMINI_PRICE_OUT = env_float("GEMINI_PRICE_OUT", None)
GLM_API_KEY = env_nonblank("GLM_API_KEY")
ZAI_API_KEY = env_nonblank("ZAI_API_KEY")
ZHIPUAI_API_KEY = env_nonblank("ZHIPUAI_API_KEY")
GLM_MODEL = env_nonblank("GLM_MODEL", "glm-4.5-flash")
# https://api.z.ai/api/paas/v4/ outside mainland China.
GLM_BASE_URL = env_nonblank("GLM_BASE_URL", "https://open.bigmodel.cn/api/paas/v4/")
GLM_PRICE_IN = env_float("GLM_PRICE_IN", None)
GLM_PRICE_OUT = env_float("GLM_PRICE_OUT", None)
OPENAI_API_KEY = env_nonblank("OPENAI_API_KEY")
# Unset: https://api.openai.com/v1. A local server (Ollama, vLLM, LM Studio) needs no key.
OPENAI_BASE_URL = env_nonblank("OPENAI_BASE_URL")
OPENAI_MODEL = env_nonblank("OPENAI_MODEL", "gpt-4o-mini")
OPENAI_PRICE_IN = env_float("OPENAI_PRICE_IN", None)
OPENAI_PRICE_OUT = env_float("OPENAI_PRICE_OUT", None)

# Workflow limits.
PLANAGENTS_DEBATE_EXCHANGES = env_int("PLANAGENTS_DEBATE_EXCHANGES", 2, minimum=1)
PLANAGENTS_MAX_VALIDATION_RETRIES = env_int("PLANAGENTS_MAX_VALIDATION_RETRIES", 2, minimum=0)
PLANAGENTS_RETRIEVAL_K = env_int("PLANAGENTS_RETRIEVAL_K", 6, minimum=1)
# Routing (agents.routing): a phase-1 classification under this confidence, in percent, sends
# the task to the full planner.
PLANAGENTS_ROUTE_MIN_CONFIDENCE = env_int("PLANAGENTS_ROUTE_MIN_CONFIDENCE", 70, minimum=0)
# Investigation: at most this many tool steps per evidence plan (0 turns investigation off),
# and this many plan rounds.
PLANAGENTS_EVIDENCE_STEPS = env_int("PLANAGENTS_EVIDENCE_STEPS", 6, minimum=0)
PLANAGENTS_EVIDENCE_ROUNDS = env_int("PLANAGENTS_EVIDENCE_ROUNDS", 2, minimum=1)
# Chat messages a human may send in one minute, in one session and across all of theirs: each
# is stored and prompted, and one sent at a checkpoint restarts the agents.
PLANAGENTS_SESSION_MESSAGES_PER_MINUTE = env_int(
    "PLANAGENTS_SESSION_MESSAGES_PER_MINUTE", 6, minimum=1
)
PLANAGENTS_USER_MESSAGES_PER_MINUTE = env_int("PLANAGENTS_USER_MESSAGES_PER_MINUTE", 20, minimum=1)

# The REST API (issue 23, api/): Django Ninja serves /api/v1/ and its docs page from its own
# static files ("ninja" installed: no CDN). Each API token may make PLANAGENTS_API_RATE
# requests ("N/s", "N/min", "N/hour", "N/day"), counted per token in Django's cache.
INSTALLED_APPS += ["ninja", "api"]
INSTALLED_APPS += ["mcp_server"]  # the MCP server (issue 23): `manage.py mcp`, /mcp/
# A bad value stops the start-up (api.apps).
PLANAGENTS_API_RATE = env_str("PLANAGENTS_API_RATE", "120/min")

# Codebases from git (issue 23, rag/git_source.py): a shallow fetch by the git CLI in a child
# process group, stopped after PLANAGENTS_GIT_TIMEOUT_SECONDS or once it has downloaded more than
# PLANAGENTS_GIT_MAX_BYTES (the commit's files are held to the same bound). file:// URLs and local
# paths are refused unless PLANAGENTS_GIT_ALLOW_LOCAL is on (it lets users read this machine).
PLANAGENTS_GIT_TIMEOUT_SECONDS = env_float("PLANAGENTS_GIT_TIMEOUT_SECONDS", 120.0)
PLANAGENTS_GIT_MAX_BYTES = env_int("PLANAGENTS_GIT_MAX_BYTES", 100 * 1024 * 1024, minimum=1024)
PLANAGENTS_GIT_ALLOW_LOCAL = env_bool("PLANAGENTS_GIT_ALLOW_LOCAL", False)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {"refusal": {"()": "planagents.log_filters.RefusalOnOneLine"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("PLANAGENTS_LOG_LEVEL", "INFO")},
    "loggers": {
        "django.channels.server": {"level": "WARNING"},
        "faiss.loader": {"level": "WARNING"},
        # Lockouts are warnings; every login and logout is not worth a line.
        "axes": {"level": "WARNING"},
        # A refused upload (101 files, a body over the cap) is the limit working: one line.
        **{
            f"django.security.{refusal}": {"filters": ["refusal"]}
            for refusal in ("TooManyFilesSent", "TooManyFieldsSent", "RequestDataTooBig")
        },
    },
}
