"""What every process of the service needs (web server, scheduler, manage.py commands).

`config.settings` is this plus config/settings/service.py; the tests run on config/settings/test.py.
Every value that differs between a laptop and a deployment is read here or in service.py, once,
through config.env; the defaults are safe for a local `make run`. Each variable: docs/OPERATIONS.md.
Nothing here touches the disk: var/ is made by the app's ready() (sessions_app.infra.var_directory).
"""

from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF

from config.env import agent_config, env
from sessions_app.infra.private_files import PrivateSQLiteConnection
from sessions_app.infra.redaction import CONTENT_LOGGING_LIBRARIES

BASE_DIR = Path(__file__).resolve().parent.parent.parent
# Databases, secret key, file cache: never committed, and readable by the
# service's OS user only (0700; sessions_app.infra.private_files). DJANGO_VAR_DIR must be
# a directory of the service's own.
VAR_DIR = Path(env.str("DJANGO_VAR_DIR", default=str(BASE_DIR / "var")))

DEBUG = env.bool("DJANGO_DEBUG", default=False)

# The secret key signs admin sessions and CSRF tokens. `make run` creates one in
# var/secret_key and passes it in; a deployment must set DJANGO_SECRET_KEY. Without one,
# service.py and test.py say what takes its place.
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")

ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

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
    "csp",  # Content-Security-Policy: the block at the end of this file
    "sessions_app",
]

MIDDLEWARE = [
    # First: every answer carries the request's id (X-Request-ID), and every log line of the
    # request names it (sessions_app/infra/request_id.py).
    "sessions_app.infra.request_id.RequestIdMiddleware",
    # Then: it counts every answer, whichever layer made it (sessions_app/infra/metrics.py).
    "sessions_app.infra.answer_metrics.AnswersByRoute",
    # First, so it marks every answer under /agent/, whichever layer made it.
    "sessions_app.api.middleware.NoStoreForSessionAPI",
    "django.middleware.security.SecurityMiddleware",
    # Serves the admin's static files under gunicorn/uvicorn, no web server needed.
    "sessions_app.infra.static_files.AsyncCapableWhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # After the sessions, before CommonMiddleware (as Django's docs place it); it reads the language
    # cookie the page's switch sets, else Accept-Language; no language prefix in URLs.
    "sessions_app.infra.loop_middleware.LocaleMiddleware",
    "sessions_app.infra.loop_middleware.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "sessions_app.infra.loop_middleware.AuthenticationMiddleware",
    "sessions_app.infra.loop_middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # A database refusing a write for lack of space: 507, not a 500 (the admin's pages too).
    "sessions_app.api.middleware.DiskFullAnswers",
    # django-csp's, its directives in a fixed order: the block at the end of this file.
    "sessions_app.infra.content_security_policy.FixedOrderCSPMiddleware",
]

ROOT_URLCONF = "config.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # Django's own admin templates we change (config/templates/admin/), found before the apps'.
        "DIRS": [BASE_DIR / "config" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

# --- Database -----------------------------------------------------------------
# Default: one embedded SQLite file under var/. The PRAGMAs every connection
# gets (secure_delete, journal mode, ...) are set in sessions_app.infra.sqlite.
DATABASES = {
    "default": dj_database_url.parse(
        env.str("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'sessions.db'}"), conn_max_age=0
    )
}
# How long a database or cache server may take to answer before the request (or /readyz) gives
# up on it: a blackholed host or a hung Redis must fail a probe, not hang it. libpq counts
# connect_timeout in whole seconds, at least 2.
BACKEND_TIMEOUT_SECONDS = env.float("AGENT_BACKEND_TIMEOUT_SECONDS", default=5.0)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = max(2, round(BACKEND_TIMEOUT_SECONDS))
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Django's SQLite backend with a write gate (sessions_app/infra/sqlite_backend/base.py).
    DATABASES["default"]["ENGINE"] = "sessions_app.infra.sqlite_backend"
    DATABASES["default"]["OPTIONS"] = {
        # The web server and the django-q2 cluster write to the same file.
        # IMMEDIATE takes the write lock at BEGIN, so a transaction that reads
        # and then writes never fails on a lock upgrade (which no busy timeout
        # can wait out); `timeout` is the busy timeout in seconds.
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        # Creates the file 0600 (and fixes its sidecars) before SQLite opens
        # it; SQLite would create it 0644 under the usual umask.
        "factory": PrivateSQLiteConnection,
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# --- Admin sessions -----------------------------------------------------------
# Operators' logins live in a signed cookie (HttpOnly, SameSite=Lax), never in
# the database: a copy of the database file holds no live admin session.
# Such a cookie cannot be revoked server-side before it expires (logging out
# only deletes it from the browser), so its lifetime is what a stolen cookie
# is worth: 8 hours after the session last changed, one working shift, so an
# operator logs in once a day. It is also dropped when the browser closes, and
# Django rejects it at once after that operator's password changes (or the
# SECRET_KEY does).
SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"
SESSION_COOKIE_AGE = 8 * 60 * 60
SESSION_EXPIRE_AT_BROWSER_CLOSE = True
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"

# --- HTTPS and browser security headers ----------------------------------------
# DJANGO_HTTPS=1 when clients reach the service over HTTPS only (production):
# plain HTTP is redirected, cookies are sent over HTTPS only, and browsers are
# told (HSTS) to use nothing but HTTPS for this host for DJANGO_HSTS_SECONDS,
# and for its subdomains too unless DJANGO_HSTS_SUBDOMAINS=0 (for a host with
# plain-HTTP subdomains; `check --deploy` then warns). Behind a reverse proxy
# that terminates TLS, DJANGO_SECURE_PROXY_SSL_HEADER=1 makes Django believe
# its X-Forwarded-Proto header: only for a proxy that sets it on every
# request, or a client could claim HTTPS. Without it, behind such a proxy,
# the redirect would loop.
HTTPS_ONLY = env.bool("DJANGO_HTTPS", default=False)
SECURE_SSL_REDIRECT = HTTPS_ONLY
SESSION_COOKIE_SECURE = HTTPS_ONLY
CSRF_COOKIE_SECURE = HTTPS_ONLY
SECURE_HSTS_SECONDS = env.int("DJANGO_HSTS_SECONDS", default=31536000) if HTTPS_ONLY else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS_ONLY and env.bool("DJANGO_HSTS_SUBDOMAINS", default=True)
# Only asks to be on browsers' preload list; that takes a submission by the
# domain's owner (hstspreload.org), which requires includeSubDomains.
SECURE_HSTS_PRELOAD = SECURE_HSTS_INCLUDE_SUBDOMAINS
if env.bool("DJANGO_SECURE_PROXY_SSL_HEADER", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Django's defaults, stated because the deployment relies on them. The
# referrer policy must keep same-origin Referer headers: Django's CSRF check
# over HTTPS needs them for the admin's forms.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# --- Language and time --------------------------------------------------------
# Every answer is in the language the client asks for: the cookie that the page's language switch
# sets (Django's set_language view, config/urls.py), else the first of Accept-Language's languages
# we have (LocaleMiddleware). Any Chinese (zh, zh-TW, zh-HK, and also zh-CN and zh-Hans, Django's
# nearest variant) gets Traditional Chinese; every other language, and no header at all, English
# (docs/WEB_PAGE.md, "Language", says why). Our strings are written in English and translated in
# locale/ (compiled catalogues are committed; tests/project/test_translations.py fails on a string
# without its translation).
LANGUAGE_CODE = "en"
LANGUAGES = [("zh-hant", "繁體中文"), ("en", "English")]
LOCALE_PATHS = [BASE_DIR / "locale"]
# Numbers are written as each language's readers do, in templates too (50,000 in both; config/formats).
USE_THOUSAND_SEPARATOR = True
FORMAT_MODULE_PATH = ["config.formats"]
# The switch's cookie holds only "en" or "zh-hant": kept a year, never read by the page's script,
# sent on same-site requests only, over HTTPS only where the service is.
LANGUAGE_COOKIE_AGE = 365 * 24 * 60 * 60
LANGUAGE_COOKIE_HTTPONLY = True
LANGUAGE_COOKIE_SAMESITE = "Lax"
LANGUAGE_COOKIE_SECURE = HTTPS_ONLY
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Static files (the page's, the admin's, the API docs'): `collectstatic` (make run) copies them to
# STATIC_ROOT under names that carry a hash of their content, with gzip copies beside them
# (WhiteNoise's storage), and WhiteNoise's middleware serves them from there: a hashed name never
# changes content, so it is cached for a year and marked immutable; a browser that accepts gzip gets
# it compressed. Templates name the files through {% static %}, which looks the hash up in the
# manifest collectstatic writes: without it, outside DEBUG, a page fails (the tests' own process uses
# plain names: config/settings/test.py). DJANGO_STATIC_ROOT: where they are collected, var/static/ by
# default.
STATIC_URL = "static/"
STATIC_ROOT = Path(env.str("DJANGO_STATIC_ROOT", default=str(VAR_DIR / "static")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# --- Cache --------------------------------------------------------------------
# Throttle counters live here. The cache must be shared by every worker
# process and its add/incr atomic across them, or concurrent requests
# overshoot a limit: an SQLite file on this machine (sessions_app.infra.cache).
# Django's file and database caches are not atomic (incr is get + set);
# Redis (RedisCache) is, when one is deployed.
# CACHE_URL (or REDIS_URL) names a Redis shared by several servers: Django's
# RedisCache, whose add (SET NX) and incr (INCRBY) are single commands.
CACHE_URL = env.str("CACHE_URL", default="") or env.str("REDIS_URL", default="")
if CACHE_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": CACHE_URL,
            "KEY_PREFIX": env.str("CACHE_KEY_PREFIX", default="resume-agent"),
            # redis-py's own: connecting, and each command's answer.
            "OPTIONS": {"socket_connect_timeout": BACKEND_TIMEOUT_SECONDS, "socket_timeout": BACKEND_TIMEOUT_SECONDS},
        }
    }
else:
    # The tests' own directory when DJANGO_CACHE_DIR is unset: config/settings/test.py.
    CACHE_DIR = env.str("DJANGO_CACHE_DIR", default="")
    CACHES = {
        "default": {"BACKEND": "sessions_app.infra.cache.SQLiteCache", "LOCATION": CACHE_DIR or str(VAR_DIR / "cache")}
    }

# --- Admin login attempts (django-axes) -------------------------------------------
# (one block: the app, its middleware and the auth backends are all here)
# After AXES_FAILURE_LIMIT wrong passwords within the cool-off, further logins
# are refused (a 429 page) for AXES_COOLOFF_TIME, even with the right password.
# Counted per username (from any address: guessing one operator's password from
# many addresses) and per address (for any username: one client trying many
# usernames); either locks. The price: someone who knows a username can lock
# that operator out for the cool-off; `manage.py axes_reset_username NAME` lifts it.
# Failed attempts are rows in axes' tables in this database, counted under a
# row lock (on SQLite the IMMEDIATE transaction), so parallel guesses all count.
INSTALLED_APPS += ["config.apps.LoginAttemptsConfig"]  # django-axes, named in the admin's language
MIDDLEWARE += ["axes.middleware.AxesMiddleware"]  # last, as axes asks
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked-out client before any password check
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = timedelta(minutes=15)
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = True  # guessing on while locked keeps it locked
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"
AXES_LOCKOUT_CALLABLE = "sessions_app.admin.login_attempts.login_lockout_response"  # a 429 page
# The client's address as DRF throttling sees it (NUM_PROXIES), not a proxy's.
AXES_CLIENT_IP_CALLABLE = "sessions_app.admin.login_attempts.login_client_address"
# Keep little, briefly: no row per successful login, no permanent failure log;
# attempt rows expire with the cool-off (deleted at the next login, logout or
# failed attempt). The stored form data masks the password, the username and the
# CSRF token; log lines name the address, never the typed username.
AXES_DISABLE_ACCESS_LOG = True
AXES_ENABLE_ACCESS_FAILURE_LOG = False
AXES_SENSITIVE_PARAMETERS = ["username", "ip_address", "csrfmiddlewaretoken"]
AXES_CLIENT_STR_CALLABLE = "sessions_app.admin.login_attempts.login_attempt_label"
AXES_VERBOSE = False

# --- Retention ----------------------------------------------------------------
AGENT_SESSION_TTL_HOURS = env.float("AGENT_SESSION_TTL_HOURS", default=24.0)
AGENT_SESSION_MAX_AGE_HOURS = env.float("AGENT_SESSION_MAX_AGE_HOURS", default=168.0)
# The purge deletes in batches, each its own short transaction with a pause
# after it, so API requests get the write lock in between (the defaults' figures:
# benchmarks/results/purge.md).
PURGE_BATCH_SIZE = env.int("PURGE_BATCH_SIZE", default=100)
PURGE_BATCH_PAUSE_SECONDS = env.float("PURGE_BATCH_PAUSE_SECONDS", default=0.05)
# The admin's "verify the whole log" (sessions_app/log_verification.py): one check at a time, and
# at most one started per staff user this often.
DELETION_LOG_VERIFY_INTERVAL_SECONDS = env.int("DELETION_LOG_VERIFY_INTERVAL_SECONDS", default=600)
# Used by the migration that creates the django-q2 schedule (changed on the admin's policy page afterwards).
PURGE_INTERVAL_MINUTES = env.int("PURGE_INTERVAL_MINUTES", default=15)

# --- Optional passkey accounts (docs/ACCOUNTS.md) ---------------------------------
# WebAuthn's relying party: its id (the site's registrable domain, without scheme or port) and
# every origin a ceremony may come from (scheme, host and port, exactly as the browser sends it).
WEBAUTHN_RP_ID = env.str("WEBAUTHN_RP_ID", default="localhost")
WEBAUTHN_RP_NAME = env.str("WEBAUTHN_RP_NAME", default="Resume agent")
WEBAUTHN_ORIGINS = env.list("WEBAUTHN_ORIGINS", default=["http://localhost:8000"])
# A challenge answers one ceremony, once, within this many seconds.
ACCOUNT_CHALLENGE_SECONDS = env.int("ACCOUNT_CHALLENGE_SECONDS", default=300)
# How long a sign-in (its X-Account-Token) lasts; signing out ends it at once.
ACCOUNT_SIGN_IN_HOURS = env.float("ACCOUNT_SIGN_IN_HOURS", default=12.0)
# An account with no live session, created or last signed in to longer ago than this, is erased by
# the scheduled purge (its passkeys and whatever it kept).
ACCOUNT_PURGE_AFTER_DAYS = env.float("ACCOUNT_PURGE_AFTER_DAYS", default=30.0)

# --- Disk space (sessions_app/infra/disk_space.py; docs/RETENTION.md, "When the disk is full") -------
# New content (a create, a message) is refused with 507 while the volume holding the
# database and its journal has less free space than STORAGE_HEADROOM_BYTES; deleting and
# purging never are. Under secure_delete a delete first copies every page it changes into the
# rollback journal: the default holds the journal of deleting the largest session, and of one
# purge batch, with a fourfold margin (the figures: benchmarks/results/erasure_space.md).
STORAGE_HEADROOM_BYTES = env.int("STORAGE_HEADROOM_BYTES", default=64 * 1024 * 1024)
# SQLite: a preallocated file of this size beside the database, given back when an erasure
# meets a full disk anyway (another program filled it) and made again afterwards: twice the
# journal of deleting a session at AGENT_SESSION_MAX_BYTES, or of one typical purge batch (a batch
# that does not fit is halved, down to one session). 0: no reserve.
ERASURE_RESERVE_BYTES = env.int("ERASURE_RESERVE_BYTES", default=16 * 1024 * 1024)
# A directory on the database's volume, for the headroom check: empty means the SQLite
# file's directory; on PostgreSQL the check runs only where this names a directory on the
# server's data volume (the same machine), and the service relies on 53100 disk_full.
STORAGE_VOLUME_PATH = env.str("STORAGE_VOLUME_PATH", default="")

# --- Logging --------------------------------------------------------------------
# Our code never logs resume text, messages, model output or tokens. google-adk,
# google-genai and their HTTP clients log whole prompts and responses at DEBUG
# and model errors (whose text may quote either) at ERROR: their loggers stay at
# INFO whatever DJANGO_LOG_LEVEL says, and the handler's filter drops their DEBUG
# records and reduces the others to name, level, exception type and status code
# (sessions_app/infra/redaction.py, docs/DATA_INVENTORY.md).
LOG_LEVEL = env.str("DJANGO_LOG_LEVEL", default="INFO")
# `text` (the default): one readable line per record; `json`: one JSON object per line, with the
# request's id (sessions_app/infra/json_logs.py). The same handler and filters either way.
LOG_FORMAT = env.choice("LOG_FORMAT", ("text", "json"), default="text")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {"()": "sessions_app.infra.json_logs.JsonLines"},
    },
    "filters": {
        "redact_library_records": {"()": "sessions_app.infra.redaction.RedactLibraryRecords"},
        "one_line_per_storage_refusal": {"()": "sessions_app.infra.disk_space.OneLinePerRefusal"},
        # Paths and headers quoted by Django's request warnings: escaped, no session id, no traceback.
        "loggable_request_records": {"()": "sessions_app.infra.log_lines.LoggableRequestRecords"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if LOG_FORMAT == "json" else "plain",
            "filters": ["redact_library_records", "one_line_per_storage_refusal", "loggable_request_records"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {name: {"level": "INFO" if LOG_LEVEL == "DEBUG" else LOG_LEVEL} for name in CONTENT_LOGGING_LIBRARIES},
}

# --- Metrics (sessions_app/infra/metrics.py; docs/OBSERVABILITY.md, "Metrics") -------------------
# GET /metrics answers Prometheus only with `Authorization: Bearer <METRICS_TOKEN>`; unset (the
# default), or with any other header, it is the same 404 as a path that does not exist.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")

# Error pages hide what views and services mark as sensitive, DEBUG or not.
DEFAULT_EXCEPTION_REPORTER_FILTER = "sessions_app.infra.redaction.AlwaysSafeExceptionReporterFilter"

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
    "sync": False,
    # How often the cluster checks its workers. Its scheduler runs once 30 s of these
    # cycles have passed (django-q2's guard loop), so with 30 or more the first schedule
    # check comes at start-up instead of 30 s later (tests/serving/test_serve.py uses that).
    "guard_cycle": env.float("Q_GUARD_CYCLE_SECONDS", default=0.5),
    # How often an idle cluster asks the ORM broker for a queued task (django-q2's default: 0.2 s).
    # Each look is a query costing ~2 ms of CPU, 10 ms a second at the default, served or not
    # (benchmarks/results/profile.md); the queue holds only the deletion log's verification, which
    # an operator starts, and the purge the schedule enqueues, neither waiting on the second.
    "poll": env.float("Q_POLL_SECONDS", default=1.0),
    # More clusters on the same database: any number may share this name (and its queue;
    # the schedule fires once, whichever runs it); one started with Q_CLUSTER_NAME=<other>
    # takes only tasks queued for that name (django-q2's ALT_CLUSTERS, none configured).
    "ALT_CLUSTERS": {},
}

# --- Agent ----------------------------------------------------------------------
# The model is chosen in agent.model_selection (Gemini with GOOGLE_API_KEY,
# otherwise the offline model). The process's ADK Runner is built, on its first turn, by
# AGENT_RUNNER_FACTORY: a callable taking no argument, or its dotted path; a setting, not a
# variable (tests inject a Runner on a model of their own with it: sessions_app/turns/runner.py).
AGENT_RUNNER_FACTORY = "sessions_app.turns.runner.build_runner"
# A turn longer than this answers 504.
AGENT_TURN_TIMEOUT_SECONDS = env.float("AGENT_TURN_TIMEOUT_SECONDS", default=60.0)
# Model calls within one turn (ADK's default is 500): a model that keeps
# calling tools is stopped, the turn answers 502 and nothing is saved.
AGENT_MAX_LLM_CALLS = env.int("AGENT_MAX_LLM_CALLS", default=10)
# Turns one server process runs at once. A turn waiting for the model holds no thread (the
# view awaits it), only memory and a connection to the model; beyond this a turn is answered
# 503 with Retry-After at once instead of queueing. The model client keeps as many connections
# (both take it from agent.config, which reads the agent's variables).
AGENT_MAX_TURNS_IN_FLIGHT = agent_config().max_turns_in_flight
# Turns one client has in flight at once, across every process and server (counted in the cache,
# like the rates): with a slow model, 26 IPv4 addresses held all 1,024 places of `make run`
# (issue 39). Per IPv4 address or IPv6 /64, and per network: an IPv4 /24, an IPv6 /56 (a home's
# delegation) and /48 (a site's). With the defaults, holding 1,024 places takes 64 addresses in 16
# /24s, or 8 IPv6 /48s. Beyond a bound a turn is answered 429 (`turns_in_flight`) with Retry-After,
# before anything runs; 0 switches a bound off. Requests with no address (a Unix socket and no
# NUM_PROXIES) are bounded by the process's places only.
AGENT_MAX_TURNS_PER_CLIENT = env.int("AGENT_MAX_TURNS_PER_CLIENT", default=16)
AGENT_MAX_TURNS_PER_IPV4_24 = env.int("AGENT_MAX_TURNS_PER_IPV4_24", default=64)
AGENT_MAX_TURNS_PER_IPV6_56 = env.int("AGENT_MAX_TURNS_PER_IPV6_56", default=64)
AGENT_MAX_TURNS_PER_IPV6_48 = env.int("AGENT_MAX_TURNS_PER_IPV6_48", default=128)

# --- The model provider (sessions_app/model_provider.py; docs/OPERATIONS.md, "The model provider") ---
# With a real model, every turn sends the resume and the conversation to its provider; the page
# and the create answer tell people who that is before they paste, and each session records the
# providers its turns went to. MODEL_PROVIDER says which terms the model runs under:
# gemini-api-paid, gemini-api-unpaid or vertex-ai (described from docs/DATA_INVENTORY.md), or a
# name of the operator's own, described by MODEL_PROVIDER_DESCRIPTION (JSON: "name", "retention"
# and "review", each {"en": ..., "zh-hant": ...}, and "terms_url"; it may also replace a built-in
# description). Unset with a GOOGLE_API_KEY, people are told the unpaid quota's terms (a key does
# not tell its quota) and `manage.py check` warns; without credentials (the offline model) both
# are ignored: nothing leaves the server.
MODEL_PROVIDER = env.str("MODEL_PROVIDER", default="")
MODEL_PROVIDER_DESCRIPTION = env.str("MODEL_PROVIDER_DESCRIPTION", default="")

# --- The deletion log (issue 31; sessions_app/receipts, docs/DATA_INVENTORY.md) ------------
# Every erasure appends an entry to an append-only log whose checkpoints are signed with an
# Ed25519 key (C2SP signed notes). The key is DELETION_LOG_SIGNING_KEY (Go's note format,
# PRIVATE+KEY+<origin>+<key id>+<key>), or else made on first use in var/deletion_log_key
# (0600, beside var/secret_key). The log's name, in every checkpoint and in the public key:
# a schema-less URL-like name of this service's (docs/API.md, "Deletion receipts"; rotation there).
DELETION_LOG_ORIGIN = env.str("DELETION_LOG_ORIGIN", default="localhost/resume-agent/deletion-log")
DELETION_LOG_SIGNING_KEY = env.str("DELETION_LOG_SIGNING_KEY", default="")
DELETION_LOG_KEY_FILE = Path(env.str("DELETION_LOG_KEY_FILE", default=str(VAR_DIR / "deletion_log_key")))
# The public keys this log signed with before its last rotation (verifier keys, <origin>+<key
# id>+<key>, separated by spaces or newlines): checkpoints signed before verify with them only.
DELETION_LOG_PREVIOUS_KEYS = env.str("DELETION_LOG_PREVIOUS_KEYS", default="")

# --- Abuse limits -------------------------------------------------------------------
# A full session refuses new turns (409) before the model runs; counted from
# clear metadata (user events, sealed sizes), so no key is needed. These
# bound what a session stores and what its export sends (docs/API.md, "Limits").
AGENT_SESSION_MAX_TURNS = env.int("AGENT_SESSION_MAX_TURNS", default=50)
AGENT_SESSION_MAX_BYTES = env.int("AGENT_SESSION_MAX_BYTES", default=5 * 1024 * 1024)
# PLAN_MAX_VERSIONS (saved plan versions kept in state, default 20) is read by
# agent.config: the agent package does not import Django.

# --- API --------------------------------------------------------------------------
RESUME_MAX_CHARS = env.int("RESUME_MAX_CHARS", default=50000)
MESSAGE_MAX_CHARS = env.int("MESSAGE_MAX_CHARS", default=4000)
# Bodies are parsed by DRF, which ignores DATA_UPLOAD_MAX_MEMORY_SIZE; the
# API's own parser enforces this limit (413). 6 bytes per character covers
# the largest resume even when every character is JSON-escaped (\uXXXX).
API_MAX_BODY_BYTES = env.int("API_MAX_BODY_BYTES", default=RESUME_MAX_CHARS * 6 + 1024)
# No request body ever goes to a temporary file (a resume in clear on disk, outside the sealed
# rows). The ASGI guard (sessions_app/api/asgi_guard.py) refuses, while it streams, a body over
# REQUEST_MAX_BODY_BYTES: the API's largest plus room for the admin's forms. Django's ASGI handler
# spools a body to disk past FILE_UPLOAD_MAX_MEMORY_SIZE, so that is the same number: what
# passes the guard stays in memory; and uploads are only ever held in memory.
REQUEST_MAX_BODY_BYTES = API_MAX_BODY_BYTES
# A resume as a file (docs/UPLOADS.md): POST /agent/sessions as multipart/form-data may carry one
# file of at most UPLOAD_MAX_BYTES; its body may be that plus the form's envelope (the ASGI guard
# allows it for that request only). The file is held in memory only (MemoryFileUploadHandler, no
# temporary-file handler) and read in a worker process with these bounds (agent/documents/sandbox.py).
UPLOAD_MAX_BYTES = env.int("UPLOAD_MAX_BYTES", default=2 * 1024 * 1024)
UPLOAD_MAX_BODY_BYTES = UPLOAD_MAX_BYTES + 16 * 1024
DOCUMENT_READ_WORKERS = env.int("DOCUMENT_READ_WORKERS", default=2)
DOCUMENT_READ_CPU_SECONDS = env.int("DOCUMENT_READ_CPU_SECONDS", default=5)
DOCUMENT_READ_WALL_SECONDS = env.float("DOCUMENT_READ_WALL_SECONDS", default=10.0)
DOCUMENT_READ_MEMORY_MB = env.int("DOCUMENT_READ_MEMORY_MB", default=768)
DOCUMENT_MAX_PAGES = env.int("DOCUMENT_MAX_PAGES", default=30)
FILE_UPLOAD_MAX_MEMORY_SIZE = max(REQUEST_MAX_BODY_BYTES, UPLOAD_MAX_BODY_BYTES)
DATA_UPLOAD_MAX_MEMORY_SIZE = REQUEST_MAX_BODY_BYTES
FILE_UPLOAD_HANDLERS = ["django.core.files.uploadhandler.MemoryFileUploadHandler"]

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # The answer's form comes from the Accept header only (JSON, or a turn's event stream), never
    # from a `?format=` query parameter: the API takes no query parameters.
    "URL_FORMAT_OVERRIDE": None,
    "DEFAULT_PARSER_CLASSES": ["sessions_app.api.parsers.LimitedJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "sessions_app.api.errors.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Fixed windows counted atomically in the cache (sessions_app.api.throttles);
    # client addresses are IPv4 addresses or IPv6 /64 networks. An IPv6 client is also
    # counted per /56 (a home's delegation: 256 /64s) and per /48 (a site's: 65,536).
    "DEFAULT_THROTTLE_RATES": {
        "session_create": env.str("AGENT_SESSION_CREATE_RATE", default="30/hour"),  # per client address
        "session_create_ipv6_56": env.str("AGENT_SESSION_CREATE_RATE_IPV6_56", default="120/hour"),
        "session_create_ipv6_48": env.str("AGENT_SESSION_CREATE_RATE_IPV6_48", default="480/hour"),
        "session_message": env.str("AGENT_SESSION_MESSAGE_RATE", default="30/min"),  # per session token
        "client_message": env.str("CLIENT_MESSAGE_RATE", default="120/min"),  # per client address
        "client_message_ipv6_56": env.str("CLIENT_MESSAGE_RATE_IPV6_56", default="480/min"),
        "client_message_ipv6_48": env.str("CLIENT_MESSAGE_RATE_IPV6_48", default="1920/min"),
        # The deletion log's public reads (receipts, checkpoints, proofs, the key): per client address.
        "deletion_log": env.str("DELETION_LOG_RATE", default="120/min"),
        "deletion_log_ipv6_56": env.str("DELETION_LOG_RATE_IPV6_56", default="480/min"),
        "deletion_log_ipv6_48": env.str("DELETION_LOG_RATE_IPV6_48", default="1920/min"),
        # Deleting a session, per client address: 195 DELETEs a second slowed every owner's turns
        # (issue 39). Generous, so a person deletes whenever they want: one a second is far beyond
        # what people do, even many behind one address; a refused DELETE changes nothing and the
        # page says when to press again (at most a minute), and a session expires on its own anyway.
        "session_delete": env.str("AGENT_SESSION_DELETE_RATE", default="60/min"),
        "session_delete_ipv6_56": env.str("AGENT_SESSION_DELETE_RATE_IPV6_56", default="240/min"),
        "session_delete_ipv6_48": env.str("AGENT_SESSION_DELETE_RATE_IPV6_48", default="960/min"),
        # Exports, per client address: each holds up to about twice the session (10.5 MB at most)
        # in memory while it is sent, and a reader that stops pinned it (issue 39: 200 unread exports
        # of one 0.84 MB session, 357 MB). A person exports a session once or twice; creations are
        # 30 an hour per address, so 30 exports an hour lets each be exported once, and more.
        "session_export": env.str("AGENT_SESSION_EXPORT_RATE", default="30/hour"),
        "session_export_ipv6_56": env.str("AGENT_SESSION_EXPORT_RATE_IPV6_56", default="120/hour"),
        "session_export_ipv6_48": env.str("AGENT_SESSION_EXPORT_RATE_IPV6_48", default="480/hour"),
        # The OpenAPI schema, per client address: drf-spectacular builds it on every request, about
        # 136 ms of CPU each (measured: docs/API.md, "Limits"); a client generator reads it once. 30
        # a minute holds one address to about 7 % of a core. (The docs pages are not counted:
        # /api/docs/ is built once per language and kept, /api/docs/try/ is 5 kB of HTML, 2 ms; the
        # schema Swagger UI loads is.)
        "schema": env.str("SCHEMA_RATE", default="30/min"),
        "schema_ipv6_56": env.str("SCHEMA_RATE_IPV6_56", default="120/min"),
        "schema_ipv6_48": env.str("SCHEMA_RATE_IPV6_48", default="480/min"),
        # Passkey accounts (docs/ACCOUNTS.md), per client address: registering (its two requests each
        # count), and every sign-in attempt, a passkey's (begun and finished: two requests, so 30
        # sign-ins an hour) or a recovery code's.
        "account_register": env.str("ACCOUNT_REGISTER_RATE", default="30/hour"),
        "account_register_ipv6_56": env.str("ACCOUNT_REGISTER_RATE_IPV6_56", default="120/hour"),
        "account_register_ipv6_48": env.str("ACCOUNT_REGISTER_RATE_IPV6_48", default="480/hour"),
        "account_sign_in": env.str("ACCOUNT_SIGN_IN_RATE", default="60/hour"),
        "account_sign_in_ipv6_56": env.str("ACCOUNT_SIGN_IN_RATE_IPV6_56", default="240/hour"),
        "account_sign_in_ipv6_48": env.str("ACCOUNT_SIGN_IN_RATE_IPV6_48", default="960/hour"),
    },
    # Number of reverse proxies in front of the service, so throttling sees the
    # client's address; 0 (default) trusts only REMOTE_ADDR.
    "NUM_PROXIES": env.int("NUM_PROXIES", default=0),
    "COMPACT_JSON": False,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Resume agent API",
    "DESCRIPTION": "Paste a resume, talk with an agent about it. Only the holder of the session"
    " token can read or delete a session; every miss is the same 404. With a real model configured,"
    " each message sends the resume and the conversation so far to the model's provider, which keeps"
    " its own copy under its own terms: deleting a session here does not delete it. The create answer"
    " says who that provider is (`model_provider`); a session's metadata and export name the providers"
    " its turns went to (`model_providers`).",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI's files come from the drf-spectacular-sidecar package, not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The token is declared as what it is, a required header parameter of each
    # operation on a session, not as an authentication scheme: it is the key to
    # one session, and a wrong token is answered like a wrong session id (the
    # one 404), never 401/403, which an authentication scheme would promise.
    "AUTHENTICATION_WHITELIST": [],
    # One enum for every readiness check's status (/readyz), not one per check.
    "ENUM_NAME_OVERRIDES": {"CheckStatusEnum": ["ok", "failing", "not_configured"]},
    # The created session (id and token) is linked to every operation on it.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "sessions_app.api.schema.link_created_session",
        "sessions_app.api.schema.declare_server_refusals",
        "sessions_app.api.schema.declare_request_id",
    ],
}

# --- Content-Security-Policy (django-csp) -------------------------------------------
# (one block: "csp" in INSTALLED_APPS, its middleware in MIDDLEWARE and the import of NONE and SELF
# are the only lines elsewhere; sessions_app.infra.content_security_policy only sends the directives
# in a fixed order.)
# The person's page at / (sessions_app/page) loads one script and one stylesheet from this
# origin's /static/ and talks to this origin's API with fetch(): nothing inline (no <script>
# with code, no on*= handlers, no style=), no other origin, no plugins, never framed, no
# <base>, forms post nowhere else. Every answer gets this policy: the JSON API's (a JSON body
# opened as a page can run nothing), the 404s, and the admin's, whose pages run under it
# unchanged (tests/page/test_page_browser.py visits them and sees no violation). One page is left
# out: /api/docs/try/, where drf-spectacular's Swagger UI starts with an inline script and sets
# inline styles; the policy is scoped away from it rather than loosened for everyone (the API's
# light documentation at /api/docs/ runs under it). Static files are answered by WhiteNoise before
# this middleware runs.
CONTENT_SECURITY_POLICY = {
    "EXCLUDE_URL_PREFIXES": ["/api/docs/try/"],
    "DIRECTIVES": {
        "default-src": [NONE],
        "script-src": [SELF],
        "style-src": [SELF],
        "connect-src": [SELF],
        "img-src": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
        "base-uri": [NONE],
    },
}
