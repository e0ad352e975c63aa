# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
SECRET_KEY_FILE := var/secret_key

.PHONY: run test test-fast venv dev-venv migrate admin bench mutants clean

# The service's packages (requirements.txt) for `make run`; the tools for tests,
# benchmarks and mutation testing on top (requirements-dev.txt). Each stamp is
# redone when a file it depends on changes.
$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed requirements.txt requirements-dev.txt
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed
dev-venv: $(VENV)/.installed-dev

# A local secret key, made once and kept out of git (var/ is ignored); owner-only
# from the start (umask), like var/ itself. With DJANGO_DEBUG=1 the settings
# read (or make) this same file.
$(SECRET_KEY_FILE):
	umask 077 && mkdir -p var && $(PY) -c "import secrets; print(secrets.token_urlsafe(50))" > $@

migrate: venv $(SECRET_KEY_FILE)
	DJANGO_SECRET_KEY="$$(cat $(SECRET_KEY_FILE))" $(PY) manage.py migrate --noinput
	DJANGO_SECRET_KEY="$$(cat $(SECRET_KEY_FILE))" $(PY) manage.py collectstatic --noinput --verbosity 0

# An operator's account for the admin at /admin/: asks for a name and a password.
admin: migrate
	DJANGO_SECRET_KEY="$$(cat $(SECRET_KEY_FILE))" $(PY) manage.py createsuperuser

# The web server (gunicorn) and the purge scheduler (django-q2's qcluster)
# together; Ctrl-C stops both (sessions_app/management/commands/serve.py).
run: migrate
	DJANGO_SECRET_KEY="$$(cat $(SECRET_KEY_FILE))" $(PY) manage.py serve --bind $(HOST):$(PORT)

# What the tests need from Debian: Chromium for the browser tests (they drive Debian's
# Chromium, not a browser Playwright downloads), a CJK font so that Traditional Chinese
# pages are text and not boxes in their screenshots, GNU gettext (makemessages,
# tests/project/test_translations.py), nginx (tests/serving/test_proxy.py starts config/nginx/ in front
# of the service; its package's own server is not started) and Prometheus (its promtool checks and tests
# config/prometheus/alerts.yml, tests/infra/test_alert_rules.py; tests/serving/test_prometheus_scrape.py
# starts its server on a temporary configuration; the package's own service is not needed: where systemd
# started it, `systemctl disable --now prometheus`). Installed only where missing and we are root; elsewhere
# the tests that need them skip themselves, saying why (under CI they fail: tests/support/system_tools.py).
.PHONY: browser system-packages
browser: system-packages
system-packages:
	@missing=""; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	fc-list 2>/dev/null | grep -qi "Noto Sans CJK" || missing="$$missing fonts-noto-cjk"; \
	command -v xgettext >/dev/null || missing="$$missing gettext"; \
	[ -x /usr/sbin/nginx ] || missing="$$missing nginx"; \
	[ -x /usr/bin/promtool ] || missing="$$missing prometheus"; \
	if [ -z "$$missing" ]; then \
		true; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	else \
		echo "note: missing Debian packages:$$missing (install them as root: make system-packages); the tests that need them will be skipped"; \
	fi

# Lint and format checks first ([tool.ruff] in pyproject.toml), then the whole suite
# on SQLite and, at the same time, on PostgreSQL + Redis where both answer
# (TEST_POSTGRES_URL, TEST_REDIS_URL; tests/backends.py says when that leg is skipped).
test: dev-venv system-packages page-audit-tools
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m tests.backends

# The quick check while working (under a minute on 2 cores): ruff, then the suite on SQLite
# without the tests marked `slow` (servers, browsers, a filled filesystem), one pytest worker
# per core (pytest-xdist; each worker has its own database and cache). CI and `make test` run
# everything, on both backends.
test-fast: dev-venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	env -u DATABASE_URL -u CACHE_URL -u REDIS_URL $(PY) -m pytest -q -m "not slow" -n auto

# All benchmarks (about 23 minutes on 2 cores), then benchmarks/RESULTS.md.
# Each script also runs alone, e.g. `.venv/bin/python benchmarks/store_bench.py --quick --out var/bench`
# (--out: where <name>.md and .json go; default benchmarks/results).
# BENCH_POSTGRES=postgres://postgres@127.0.0.1:5432: the purge also on PostgreSQL, in a scratch database.
bench: dev-venv
	$(PY) benchmarks/store_bench.py
	$(PY) benchmarks/service_bench.py
	$(PY) benchmarks/purge_bench.py $(if $(BENCH_POSTGRES),--database-url $(BENCH_POSTGRES))
	$(PY) benchmarks/session_limits_bench.py
	$(PY) benchmarks/memory_bench.py
	$(PY) benchmarks/screen_bench.py
	$(PY) benchmarks/log_bench.py
	$(PY) benchmarks/account_bench.py
	$(PY) benchmarks/report.py

# Mutation testing of the guarantee modules ([tool.mutmut] in pyproject.toml),
# outside `make test` and CI: long, since every mutant reruns the tests that
# reach its function. mutmut works in mutants/ (its pytest runs load
# tests/mutation_plugin.py, which `make test` does not) and
# keeps its results there (a rerun tests only what changed); then
# docs/MUTATION_REPORT.md. MUTANT_CHILDREN: parallel workers.
MUTANT_CHILDREN ?= 2
mutants: dev-venv
	$(PY) -m mutmut run --max-children $(MUTANT_CHILDREN)
	$(PY) tests/mutation_report.py

# The page's audits from npm, Lighthouse and axe-core, at the exact versions of tests/page/audit/'s
# package-lock.json (tests/page/test_page_lighthouse.py, test_page_axe.py), where npm is; without
# it those tests skip (under CI they fail: tests/support/audit_tools.py).
AUDIT_TOOLS := tests/page/audit
.PHONY: page-audit-tools
page-audit-tools:
	@if ! command -v npm >/dev/null; then \
		echo "note: no npm here: the Lighthouse and axe-core tests will be skipped"; \
	elif [ ! $(AUDIT_TOOLS)/node_modules/.package-lock.json -nt $(AUDIT_TOOLS)/package-lock.json ]; then \
		cd $(AUDIT_TOOLS) && npm ci --no-audit --no-fund; \
	fi

# The page's Markdown library and sanitiser are committed in sessions_app/static/page/vendor/ (the
# page needs no Node); this brings them again from the exact versions of sessions_app/page/vendor/.
PAGE_VENDOR := sessions_app/page/vendor
.PHONY: page-vendor
page-vendor:
	cd $(PAGE_VENDOR) && npm ci --no-audit --no-fund
	cp $(PAGE_VENDOR)/node_modules/markdown-it/dist/browser/markdown-it.umd.min.js* \
	   $(PAGE_VENDOR)/node_modules/dompurify/dist/purify.min.js* sessions_app/static/page/vendor/
	cp $(PAGE_VENDOR)/node_modules/markdown-it/LICENSE sessions_app/static/page/vendor/LICENSE-markdown-it.txt
	cp $(PAGE_VENDOR)/node_modules/dompurify/LICENSE sessions_app/static/page/vendor/LICENSE-dompurify.txt
	rm -rf $(PAGE_VENDOR)/node_modules

clean:
	rm -rf $(VENV) var
