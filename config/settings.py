"""Django settings for the resume agent service.

Everything that differs between a laptop and a deployment comes from the
environment; the defaults are safe for a local `make run`.
"""

import os
import sys
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"  # databases, secret key, file cache: never committed
(VAR_DIR / "static").mkdir(parents=True, exist_ok=True)

TESTING = "pytest" in sys.modules


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DJANGO_DEBUG", False)

# The secret key signs admin sessions and CSRF tokens. `make run` creates one in
# var/secret_key and passes it in; a deployment must set DJANGO_SECRET_KEY.
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if DEBUG or TESTING:
        SECRET_KEY = "insecure-key-for-debug-and-tests-only"
    else:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off (make run sets one for you)."
        )

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_q",
    "sessions_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Serves the admin's static files under gunicorn/uvicorn, no web server needed.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
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

WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

# --- Database -----------------------------------------------------------------
# Default: one embedded SQLite file under var/. The PRAGMAs every connection
# gets (secure_delete, journal mode, ...) are set in sessions_app.db_signals.
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'sessions.db'}"),
        conn_max_age=0,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["OPTIONS"] = {
        # The web server and the django-q2 cluster write to the same file.
        # IMMEDIATE takes the write lock at BEGIN, so a transaction that reads
        # and then writes never fails on a lock upgrade (which no busy timeout
        # can wait out); `timeout` is the busy timeout in seconds.
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
    # Tests run on a real file (not :memory:) so they can scan its bytes; one
    # file per test process, so two test runs never share (or lock) a file.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test_sessions_{os.getpid()}.db")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# --- Language and time --------------------------------------------------------
LANGUAGE_CODE = "zh-hant"  # user-facing messages default to Traditional Chinese
LANGUAGES = [("zh-hant", "繁體中文"), ("en", "English")]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"

# --- Cache --------------------------------------------------------------------
# A file cache is shared by every worker process, so DRF throttling counts
# requests per client across workers (the default in-process cache does not).
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": os.environ.get("DJANGO_CACHE_DIR", str(VAR_DIR / ("test_cache" if TESTING else "cache"))),
    }
}

# --- Retention ----------------------------------------------------------------
SESSION_TTL_HOURS = float(os.environ.get("SESSION_TTL_HOURS", "24"))
SESSION_MAX_AGE_HOURS = float(os.environ.get("SESSION_MAX_AGE_HOURS", "168"))
# The purge deletes in batches, each its own short transaction with a pause
# after it, so API requests get the write lock in between.
PURGE_BATCH_SIZE = int(os.environ.get("PURGE_BATCH_SIZE", "50"))
PURGE_BATCH_PAUSE_SECONDS = float(os.environ.get("PURGE_BATCH_PAUSE_SECONDS", "0.1"))
# Used by the migration that creates the django-q2 schedule (editable in the admin afterwards).
PURGE_INTERVAL_MINUTES = int(os.environ.get("PURGE_INTERVAL_MINUTES", "15"))

# --- Logging --------------------------------------------------------------------
# Our code never logs resume text, messages, model output or tokens. google-adk
# and google-genai log whole prompts and responses at DEBUG: their loggers stay
# at INFO whatever DJANGO_LOG_LEVEL says, and the handler's filter drops their
# DEBUG records even if someone lowers those levels (docs/DATA_INVENTORY.md).
LOG_LEVEL = os.environ.get("DJANGO_LOG_LEVEL", "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {"drop_library_debug": {"()": "sessions_app.redaction.DropLibraryDebugRecords"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["drop_library_debug"]}
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        name: {"level": "INFO" if LOG_LEVEL == "DEBUG" else LOG_LEVEL}
        for name in ("google_adk", "google_genai", "google.genai", "httpx", "httpcore")
    },
}

# Error pages hide what views and services mark as sensitive, DEBUG or not.
DEFAULT_EXCEPTION_REPORTER_FILTER = "sessions_app.redaction.AlwaysSafeExceptionReporterFilter"

# ADK's tracing spans would carry prompt and response text by default; we
# also pass a no-content TelemetryConfig with every run (sessions_app.turns).
os.environ["ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS"] = "false"
os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "NO_CONTENT"

# --- django-q2 ------------------------------------------------------------------
# The ORM broker keeps the queue in this same database: no extra server.
# Tasks never carry personal data (the purge task takes no arguments); the
# stored history is kept short and failed tasks are not retried forever.
Q_CLUSTER = {
    "name": "resume-agent",
    "orm": "default",
    "workers": 1,
    "timeout": 300,
    "retry": 360,
    "max_attempts": 1,
    "save_limit": 50,
    "ack_failures": True,
    "catch_up": False,
    "sync": TESTING,
}

# --- Agent ----------------------------------------------------------------------
# The model is chosen in agent.model_selection (Gemini with GOOGLE_API_KEY,
# otherwise the offline model). A turn longer than this answers 504.
AGENT_TURN_TIMEOUT_SECONDS = float(os.environ.get("AGENT_TURN_TIMEOUT_SECONDS", "60"))

# --- API --------------------------------------------------------------------------
RESUME_MAX_CHARS = int(os.environ.get("RESUME_MAX_CHARS", "50000"))
MESSAGE_MAX_CHARS = int(os.environ.get("MESSAGE_MAX_CHARS", "4000"))
# Bodies are parsed by DRF, which ignores DATA_UPLOAD_MAX_MEMORY_SIZE; the
# API's own parser enforces this limit (413). 6 bytes per character covers
# the largest resume even when every character is JSON-escaped (\uXXXX).
API_MAX_BODY_BYTES = int(os.environ.get("API_MAX_BODY_BYTES", str(RESUME_MAX_CHARS * 6 + 1024)))

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["sessions_app.api.parsers.LimitedJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "sessions_app.api.errors.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_RATES": {
        "session_create": os.environ.get("SESSION_CREATE_RATE", "30/hour"),
    },
    # Number of reverse proxies in front of the service, so throttling sees the
    # client's address; 0 (default) trusts only REMOTE_ADDR.
    "NUM_PROXIES": int(os.environ.get("NUM_PROXIES", "0")),
    "COMPACT_JSON": False,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Resume agent API",
    "DESCRIPTION": "Paste a resume, talk with an agent about it. Only the holder of the session"
    " token can read or delete a session; every miss is the same 404.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI's files come from the drf-spectacular-sidecar package, not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The created session (id and token) is linked to every operation on it.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "sessions_app.api.schema.link_created_session",
    ],
}
