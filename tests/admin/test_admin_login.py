"""The admin login locks out after repeated wrong passwords (django-axes, config/settings/base.py)."""

import datetime as dt

import pytest
import time_machine
from axes.models import AccessAttempt, AccessLog
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from sessions_app.admin.login_attempts import login_client_address

# The admin in English (its source language): what these tests read; tests/project/test_translations.py
# covers the Traditional Chinese.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_english")]

LOGIN = reverse("admin:login")
INDEX = reverse("admin:index")
PASSWORD = "correct-horse-battery-staple"  # fictional
LIMIT = settings.AXES_FAILURE_LIMIT


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # tests only


@pytest.fixture
def operator(django_user_model):
    return django_user_model.objects.create_user("operator", password=PASSWORD, is_staff=True)


def _login(client, username, password, address="198.51.100.10", **extra):
    headers = {key: extra.pop(key) for key in list(extra) if key.startswith("HTTP_")}
    return client.post(
        LOGIN,
        {"username": username, "password": password, "next": INDEX, **extra},
        REMOTE_ADDR=address,
        HTTP_USER_AGENT="test-browser",
        **headers,
    )


def _logged_in(client) -> bool:
    return client.get(INDEX).status_code == 200


def _locked_out(response) -> bool:
    return response.status_code == 429 and "Too many failed logins" in response.content.decode()


def test_settings_lock_after_a_few_attempts_for_a_while():
    assert 3 <= LIMIT <= 10
    assert dt.timedelta(minutes=15) == settings.AXES_COOLOFF_TIME
    assert settings.AUTHENTICATION_BACKENDS[0] == "axes.backends.AxesStandaloneBackend"
    assert settings.MIDDLEWARE[-1] == "axes.middleware.AxesMiddleware"


def test_wrong_passwords_up_to_the_limit_still_allow_the_right_one(client, operator):
    for _ in range(LIMIT - 1):
        response = _login(client, "operator", "wrong")
        assert response.status_code == 200 and not _logged_in(client)
    assert _login(client, "operator", PASSWORD).status_code == 302
    assert _logged_in(client)


def test_the_nth_wrong_password_locks_the_account_even_against_the_right_one(client, operator):
    responses = [_login(client, "operator", f"wrong-{i}") for i in range(LIMIT)]
    assert all(r.status_code == 200 for r in responses[:-1])
    locked = responses[-1]
    assert _locked_out(locked)  # a readable page, not a 500
    assert locked["Content-Type"].startswith("text/html")
    # What the page says: the limit and the wait, as the settings have them (English, to compare).
    assert f"after {LIMIT} wrong passwords" in locked.content.decode()
    assert "15 minutes" in locked.content.decode()

    assert _locked_out(_login(client, "operator", PASSWORD))
    assert not _logged_in(client)
    # From another address too: the username is locked wherever the guesses come from.
    assert _locked_out(_login(client, "operator", PASSWORD, address="203.0.113.99"))
    assert not _logged_in(client)

    # After the cool-off the right password works again.
    with time_machine.travel(timezone.now() + settings.AXES_COOLOFF_TIME + dt.timedelta(seconds=5)):
        assert _login(client, "operator", PASSWORD, address="203.0.113.99").status_code == 302
        assert _logged_in(client)


def test_guesses_spread_over_addresses_still_lock_the_account(client, operator):
    for i in range(LIMIT):
        _login(client, "operator", "wrong", address=f"192.0.2.{i + 1}")
    assert _locked_out(_login(client, "operator", PASSWORD, address="192.0.2.200"))
    assert not _logged_in(client)


def test_one_address_trying_many_usernames_is_locked(client, operator):
    for i in range(LIMIT):
        _login(client, f"guess-{i}", "wrong", address="198.51.100.66")
    # That address is locked, even for a real operator's right password ...
    assert _locked_out(_login(client, "operator", PASSWORD, address="198.51.100.66"))
    assert not _logged_in(client)
    # ... other addresses are not.
    assert _login(client, "operator", PASSWORD, address="198.51.100.67").status_code == 302
    assert _logged_in(client)


def test_attempt_records_hold_no_password_and_successes_leave_none(client, operator):
    _login(client, "operator", "my-secret-guess-1", csrfmiddlewaretoken="csrf-token-of-this-browser")
    _login(client, "operator", PASSWORD)
    assert not AccessLog.objects.exists()  # no row per successful login
    stored = "\n".join(
        repr(row)
        for row in AccessAttempt.objects.values_list(
            "username", "ip_address", "user_agent", "path_info", "get_data", "post_data"
        )
    )
    assert AccessAttempt.objects.count() == 1
    assert "operator" in stored and "198.51.100.10" in stored  # the control: this is the attempt
    assert "next=/admin/" in stored  # the form data is stored, masked:
    assert "my-secret-guess-1" not in stored and PASSWORD not in stored
    assert "csrf-token-of-this-browser" not in stored


def test_attempt_records_expire_with_the_cooloff(client, operator):
    _login(client, "operator", "wrong")
    assert AccessAttempt.objects.count() == 1
    with time_machine.travel(timezone.now() + settings.AXES_COOLOFF_TIME + dt.timedelta(seconds=5)):
        _login(client, "someone-else", "wrong", address="203.0.113.5")  # any attempt cleans expired rows
    assert list(AccessAttempt.objects.values_list("username", flat=True)) == ["someone-else"]


def test_lockout_logs_name_the_address_not_the_typed_username(client, operator, captured_logs):
    _, raw = captured_logs
    for _ in range(LIMIT):
        _login(client, "typed-a-password-here", "wrong")
    logged = raw.getvalue()
    assert "AXES" in logged and "198.51.100.10" in logged  # the control: axes did log
    assert "typed-a-password-here" not in logged


def test_login_client_address_follows_num_proxies(rf, settings):
    request = rf.get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.7")
    assert login_client_address(request) == "10.0.0.1"  # NUM_PROXIES 0: the header is not trusted
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    assert login_client_address(request) == "203.0.113.7"
    bad = rf.get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="not-an-address")
    assert login_client_address(bad) == "10.0.0.1"


def test_behind_a_proxy_each_client_address_counts_alone(client, operator, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    for i in range(LIMIT):
        _login(client, f"guess-{i}", "wrong", address="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.1")
    # Same proxy, another client: not locked out by the first one's guesses.
    assert (
        _login(client, "operator", PASSWORD, address="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.2").status_code == 302
    )
    assert _logged_in(client)
