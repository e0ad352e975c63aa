"""Settings: read once from the environment (config/env.py), a bad value named, nothing written
when they are imported, and var/ checked by `manage.py check`."""

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from agent.config import AgentConfig
from config.env import RENAMED_PREFIXES, Env
from sessions_app.infra.var_directory import check_var_directory

ROOT = Path(__file__).resolve().parents[2]


def settings_process(code: str, tmp_path: Path, **environment: str) -> subprocess.CompletedProcess:
    """`code` in a fresh Python on the service's settings, with a var/ under `tmp_path` and no
    DJANGO_* variable of the test run's."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
    env.pop("DATABASE_URL", None)
    env.update(DJANGO_SETTINGS_MODULE="config.settings", DJANGO_VAR_DIR=str(tmp_path / "var"), **environment)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("read", "value", "kind"), [("int", "ten", "an integer"), ("float", "one", "a number")])
def test_a_bad_value_names_its_variable(monkeypatch, read, value, kind):
    monkeypatch.setenv("SOME_SETTING", value)
    with pytest.raises(ImproperlyConfigured, match=f"^The environment variable SOME_SETTING must be {kind}$"):
        getattr(Env(), read)("SOME_SETTING", default=1)


def test_an_empty_value_is_the_default_and_spaces_around_values_are_dropped(monkeypatch):
    monkeypatch.setenv("SOME_NUMBER", "  ")
    monkeypatch.setenv("SOME_NAMES", " a, b ,,")
    assert Env().int("SOME_NUMBER", default=7) == 7
    assert Env().list("SOME_NAMES", default=[]) == ["a", "b"]


def test_the_service_refuses_to_start_on_a_bad_value_naming_it(tmp_path):
    result = settings_process("import django; django.setup()", tmp_path, AGENT_SESSION_MAX_TURNS="fifty")
    assert result.returncode != 0
    assert "ImproperlyConfigured: The environment variable AGENT_SESSION_MAX_TURNS must be an integer" in result.stderr


def test_importing_the_settings_writes_nothing(tmp_path):
    # DEBUG on and no key: the key in var/ is made when first used, not by importing the settings.
    code = (
        "import config.settings.test; from django.conf import settings;"
        " print(settings.DATABASES['default']['NAME'], settings.CACHES, settings.STATIC_ROOT)"
    )
    result = settings_process(code, tmp_path, DJANGO_DEBUG="1")
    assert result.returncode == 0, result.stderr
    assert str(tmp_path / "var") in result.stdout  # the settings did name it
    assert list(tmp_path.iterdir()) == []


def test_the_app_makes_var_owner_only_when_ready(tmp_path):
    result = settings_process("import django; django.setup()", tmp_path, DJANGO_SECRET_KEY="k" * 50)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "var").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "var" / "static").is_dir()


def test_a_var_directory_the_service_cannot_use_fails_the_checks(settings, tmp_path):
    assert check_var_directory() == []  # the test run's own var/, made when the app was ready
    settings.VAR_DIR = tmp_path / "a-file"
    settings.VAR_DIR.write_text("")
    [error] = check_var_directory()
    assert error.id == "sessions_app.E009" and str(settings.VAR_DIR) in error.msg


def test_the_agent_reads_its_variables_in_one_place_and_names_a_bad_one():
    config = AgentConfig.from_env(
        {"AGENT_MODEL": " gemini-2.5-pro ", "PLAN_MAX_VERSIONS": "0", "AGENT_MODEL_ATTEMPTS": ""}
    )
    assert (config.model, config.plan_max_versions, config.model_attempts) == ("gemini-2.5-pro", 1, 3)
    with pytest.raises(ValueError, match="^The environment variable AGENT_MAX_TURNS_IN_FLIGHT must be an integer$"):
        AgentConfig.from_env({"AGENT_MAX_TURNS_IN_FLIGHT": "many"})


def test_the_settings_take_the_agent_s_turns_in_flight_from_it(tmp_path):
    code = "from django.conf import settings; print(settings.AGENT_MAX_TURNS_IN_FLIGHT)"
    result = settings_process(code, tmp_path, AGENT_MAX_TURNS_IN_FLIGHT="12")
    assert result.returncode == 0 and result.stdout.strip() == "12", result.stderr
    result = settings_process(code, tmp_path, AGENT_MAX_TURNS_IN_FLIGHT="twelve")
    assert (
        "ImproperlyConfigured: The environment variable AGENT_MAX_TURNS_IN_FLIGHT must be an integer" in result.stderr
    )


def test_the_scheduler_looks_for_queued_tasks_once_a_second_unless_told(tmp_path):
    """django-q2 polls its ORM broker every 0.2 s by default, a query each time (issue 43)."""
    code = "from django.conf import settings; print(settings.Q_CLUSTER['poll'])"
    result = settings_process(code, tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == "1.0", result.stderr
    result = settings_process(code, tmp_path, Q_POLL_SECONDS="0.2")
    assert result.returncode == 0 and result.stdout.strip() == "0.2", result.stderr


def test_a_renamed_variable_is_still_read_under_its_old_name_said_once(monkeypatch, caplog):
    [(new_prefix, old_prefix)] = RENAMED_PREFIXES.items()
    monkeypatch.setenv(f"{old_prefix}SOME_LIMIT", "7")
    env = Env()
    with pytest.warns(DeprecationWarning, match=f"^{old_prefix}SOME_LIMIT is deprecated .* set {new_prefix}SOME_LIMIT"):
        assert env.int(f"{new_prefix}SOME_LIMIT", default=1) == 7
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second warning would fail here
        assert env.int(f"{new_prefix}SOME_LIMIT", default=1) == 7
    assert [record.levelname for record in caplog.records] == ["WARNING"]
    # The new name, once set, wins, and names itself in an error.
    monkeypatch.setenv(f"{new_prefix}SOME_LIMIT", "8")
    assert env.int(f"{new_prefix}SOME_LIMIT", default=1) == 8
    monkeypatch.setenv(f"{old_prefix}SOME_LIMIT", "seven")
    monkeypatch.delenv(f"{new_prefix}SOME_LIMIT")
    with pytest.raises(ImproperlyConfigured, match=f"variable {old_prefix}SOME_LIMIT must be an integer"):
        env.int(f"{new_prefix}SOME_LIMIT", default=1)


def test_the_service_still_takes_a_session_limit_under_its_old_name(tmp_path):
    [(new_prefix, old_prefix)] = RENAMED_PREFIXES.items()
    code = f"from django.conf import settings; print(settings.{new_prefix}MAX_TURNS, settings.{new_prefix}TTL_HOURS)"
    result = settings_process(code, tmp_path, **{f"{old_prefix}MAX_TURNS": "7", f"{new_prefix}TTL_HOURS": "2"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["7", "2.0"]
    assert result.stderr.count("is deprecated") == 1 and f"set {new_prefix}MAX_TURNS instead" in result.stderr


def test_log_format_is_text_or_json_in_any_case_and_text_by_default(monkeypatch):
    assert Env().choice("LOG_FORMAT", ("text", "json"), default="text") == "text"
    monkeypatch.setenv("LOG_FORMAT", " JSON ")
    assert Env().choice("LOG_FORMAT", ("text", "json"), default="text") == "json"
    monkeypatch.setenv("LOG_FORMAT", "xml")
    with pytest.raises(ImproperlyConfigured, match="^The environment variable LOG_FORMAT must be one of: text, json$"):
        Env().choice("LOG_FORMAT", ("text", "json"), default="text")


@pytest.mark.parametrize(("value", "formatter"), [("", "Formatter"), ("json", "JsonLines")])
def test_log_format_chooses_the_console_handlers_formatter_only(tmp_path, value, formatter):
    code = (
        "import django, logging; django.setup(); from django.conf import settings;"
        " [handler] = logging.getLogger().handlers;"
        " print(type(handler.formatter).__name__, settings.LOGGING['handlers']['console']['filters'])"
    )
    result = settings_process(code, tmp_path, LOG_FORMAT=value)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split(" ", 1) == [
        formatter,
        "['redact_library_records', 'one_line_per_storage_refusal', 'loggable_request_records']\n",
    ]


def test_the_service_refuses_to_start_on_a_bad_log_format(tmp_path):
    result = settings_process("import django; django.setup()", tmp_path, LOG_FORMAT="yaml")
    assert result.returncode != 0
    assert "ImproperlyConfigured: The environment variable LOG_FORMAT must be one of: text, json" in result.stderr
