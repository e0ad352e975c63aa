"""Production settings: `manage.py check --deploy` is silent behind TLS, and no
secret key is ever a constant.

Each test starts a fresh Python with its own environment (settings read it at
import), its own var/ and no DJANGO_* variable inherited from the test run.
"""

import os
import secrets
import stat
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test starts a Python of its own
ROOT = Path(__file__).resolve().parents[2]
OLD_DEBUG_KEY = "insecure-key-for-debug-and-tests-only"
TLS_ENVIRONMENT = {"DJANGO_HTTPS": "1", "DJANGO_SECURE_PROXY_SSL_HEADER": "1"}


def run_python(args: list[str], var_dir: Path, **environment: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
    env.pop("DATABASE_URL", None)
    env.update(DJANGO_VAR_DIR=str(var_dir), **environment)
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def check_deploy(var_dir: Path, **environment: str) -> subprocess.CompletedProcess:
    return run_python(
        ["manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        var_dir,
        DJANGO_SECRET_KEY=secrets.token_urlsafe(64),
        DJANGO_ALLOWED_HOSTS="resume.example.org",
        **environment,
    )


def test_check_deploy_reports_nothing_in_production_behind_tls(tmp_path):
    result = check_deploy(tmp_path / "var", **TLS_ENVIRONMENT)
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout
    assert "WARNING" not in result.stdout + result.stderr


def test_check_deploy_warns_without_the_tls_settings(tmp_path):
    result = check_deploy(tmp_path / "var")
    assert result.returncode != 0
    for check in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert check in result.stderr, check


def secret_key_with_debug_on(var_dir: Path) -> str:
    result = run_python(
        ["-c", "from django.conf import settings; print(settings.SECRET_KEY)"],
        var_dir,
        DJANGO_SETTINGS_MODULE="config.settings",
        DJANGO_DEBUG="1",
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_debug_without_a_secret_key_uses_a_random_one_kept_in_var(tmp_path):
    first_var, second_var = tmp_path / "first" / "var", tmp_path / "second" / "var"
    first, second = secret_key_with_debug_on(first_var), secret_key_with_debug_on(second_var)
    assert OLD_DEBUG_KEY not in (first, second)
    assert first != second and len(first) >= 50
    # Kept owner-only in var/, and the same for every process on that var/
    # (gunicorn workers), so an admin login holds across them.
    key_file = first_var / "secret_key"
    assert key_file.read_text().strip() == first
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(first_var.stat().st_mode) == 0o700
    assert secret_key_with_debug_on(first_var) == first


def test_without_debug_a_missing_secret_key_refuses_to_start(tmp_path):
    result = run_python(
        ["-c", "from django.conf import settings; print(settings.SECRET_KEY)"],
        tmp_path / "var",
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr
    assert not (tmp_path / "var" / "secret_key").exists()
