"""Middleware hooks on the event loop under ASGI (sessions_app/infra/loop_middleware.py, issue 28).

Django's own MiddlewareMixin hands every `process_request` and `process_response` to a thread and
waits for it: about twenty hand-offs a request (benchmarks/results/request_cost.md). Ours call the
hooks that only compute on the loop, and hand off the messages' answer when it may read or write a
session row. Django's security, CSRF, clickjacking and session middleware keep their hand-offs
(`check --deploy` recognises them by their import path only).
"""

import asyncio

import pytest
from django.contrib.messages import INFO, add_message
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.backends.db import SessionStore
from django.http import HttpResponse
from django.test import AsyncClient, RequestFactory
from django.utils.module_loading import import_string

from sessions_app.infra.loop_middleware import MessageMiddleware

pytestmark = pytest.mark.django_db(transaction=True)

ABSENT_SESSION = "/agent/sessions/00000000-0000-0000-0000-000000000000"


def _on_the_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


# The middleware that keep Django's hand-off to a thread, and only these.
IN_A_THREAD = {
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
}


def test_every_other_hook_of_an_api_request_runs_on_the_event_loop(settings, monkeypatch):
    """Put Django's LocaleMiddleware (or any other MiddlewareMixin) back in settings and its hooks
    run in a thread again: this test names it."""
    where: dict[str, bool] = {}
    for path in settings.MIDDLEWARE:
        middleware = import_string(path)
        for hook in ("process_request", "process_response"):
            original = getattr(middleware, hook, None)
            if original is None:
                continue

            def recorded(self, *args, _original=original, _name=f"{path}.{hook}"):
                where[_name] = _on_the_loop()
                return _original(self, *args)

            monkeypatch.setattr(middleware, hook, recorded)

    response = asyncio.run(AsyncClient().get(ABSENT_SESSION, headers={"X-Session-Token": "not-a-token"}))

    assert response.status_code == 404
    assert len(where) >= 10  # every middleware with a hook was reached
    assert {name.rsplit(".", 1)[0] for name, on_loop in where.items() if not on_loop} == IN_A_THREAD


def test_an_admin_login_saves_its_session_from_a_thread_not_the_loop(django_user_model, settings):
    """Our admin sessions are signed cookies; with database sessions (an operator's choice) the
    login's answer saves a session row: on the loop, Django would refuse the query
    (SynchronousOnlyOperation, a 500). Put the session middleware on the loop and this fails."""
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.db"
    django_user_model.objects.create_superuser("operator", password="a-long-fictional-password")

    async def log_in_and_look():
        client = AsyncClient()
        login = await client.post(
            "/admin/login/?next=/admin/", {"username": "operator", "password": "a-long-fictional-password"}
        )
        return login, await client.get("/admin/")

    login, index = asyncio.run(log_in_and_look())

    assert login.status_code == 302
    assert index.status_code == 200


def _request_with_storage():
    request = RequestFactory().get("/admin/")
    request.session = SessionStore()
    request._messages = FallbackStorage(request)
    return request


def test_messages_queued_are_stored_from_a_thread():
    """A message that overflows its cookie is stored in the session, which may load the row."""
    middleware = MessageMiddleware(lambda request: HttpResponse())
    request = _request_with_storage()
    assert middleware.response_may_wait(request) is False
    add_message(request, INFO, "Saved.")
    assert middleware.response_may_wait(request) is True
