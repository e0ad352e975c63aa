"""Request threads kept between requests (sessions_app/infra/request_threads.py, issue 43).

Django's ASGI handler starts a thread for every request's synchronous code, and another to join
it; in front of it, RequestThreads hands each request a thread kept from an earlier one, through
asgiref's public ThreadSensitiveContext(executor=...), and keeps at most `keep` idle.
"""

import asyncio
import json
import threading

import pytest
from asgiref.sync import SyncToAsync, ThreadSensitiveContext, sync_to_async
from django.db.backends.signals import connection_created

from sessions_app.infra.request_threads import RequestThreads


def _django_like(seen: list, gate: asyncio.Event | None = None):
    """An ASGI app that, as Django's handler does, enters a ThreadSensitiveContext of its own and runs
    its synchronous code with sync_to_async (thread-sensitive): records that code's thread."""

    async def app(scope, receive, send):
        async with ThreadSensitiveContext():
            seen.append(await sync_to_async(threading.current_thread)())
            if gate is not None:
                await gate.wait()
            seen.append(await sync_to_async(threading.current_thread)())

    return app


async def _call(app):
    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        pass

    await app({"type": "http", "method": "GET", "path": "/", "headers": []}, receive, send)


def test_requests_one_after_another_run_on_one_kept_thread():
    seen: list[threading.Thread] = []
    app = RequestThreads(_django_like(seen), keep=4)

    async def three():
        for _ in range(3):
            await _call(app)

    asyncio.run(three())
    assert len(seen) == 6 and len(set(seen)) == 1, "a new thread for a request: Django's default is back"
    assert seen[0] is not threading.main_thread() and seen[0].is_alive()
    assert app.idle() == 1


def test_without_kept_threads_every_request_has_a_thread_of_its_own():
    seen: list[threading.Thread] = []
    app = RequestThreads(_django_like(seen), keep=0)

    async def three():
        for _ in range(3):
            await _call(app)

    asyncio.run(three())
    assert len(set(seen)) == 3 and seen[0] is seen[1]  # one thread a request, the same within it
    assert app.idle() == 0


def test_requests_at_once_each_have_a_thread_and_at_most_keep_stay_idle():
    seen: list[threading.Thread] = []

    async def many():
        gate = asyncio.Event()
        app = RequestThreads(_django_like(seen, gate), keep=2)
        calls = [asyncio.create_task(_call(app)) for _ in range(5)]
        while len(seen) < 5:  # each is inside its request, waiting at the gate
            await asyncio.sleep(0.01)
        assert app.idle() == 0
        gate.set()
        await asyncio.gather(*calls)
        return app

    app = asyncio.run(many())
    firsts, seconds = seen[:5], seen[5:]
    assert len(set(firsts)) == 5, "requests at once would wait for one another's thread"
    assert set(seconds) == set(firsts)  # each request stayed on its own thread
    assert app.idle() == 2


def test_a_forked_child_keeps_none_of_its_parents_threads(monkeypatch):
    seen: list[threading.Thread] = []
    app = RequestThreads(_django_like(seen), keep=4)
    asyncio.run(_call(app))
    assert app.idle() == 1
    monkeypatch.setattr("os.getpid", lambda: -1)  # as a forked child sees its own pid
    assert app.idle() == 0
    asyncio.run(_call(app))
    assert seen[2] is not seen[0]


def test_other_scopes_than_http_pass_through_untouched():
    called = []

    async def app(scope, receive, send):
        called.append(SyncToAsync.thread_sensitive_context.get(None))

    guarded = RequestThreads(app, keep=4)
    asyncio.run(guarded({"type": "lifespan"}, None, None))
    assert called == [None] and guarded.idle() == 0


@pytest.mark.django_db(transaction=True)
def test_a_kept_thread_keeps_no_database_connection_of_a_request(settings):
    """Through the application `make run` serves: the second request's sync code runs on the first's
    thread, and still opens a database connection of its own (Django closes each at its request's end)."""
    from config.asgi import application

    assert isinstance(application, RequestThreads) and application.keep > 0
    opened, threads = [], []

    def created(sender, connection, **kwargs):
        opened.append(connection)
        threads.append(threading.current_thread())

    body = json.dumps({"resume_text": "Jane Doe\nEngineer at Example Corp, 2019-2024\nPython, SQL"}).encode()

    async def create():
        sent, bodies = [], [{"type": "http.request", "body": body, "more_body": False}]

        async def receive():
            if bodies:
                return bodies.pop()
            await asyncio.sleep(3600)  # no disconnect: Django cancels this once it has answered

        async def send(message):
            sent.append(message)

        headers = [(b"host", b"testserver"), (b"content-type", b"application/json")]
        headers += [(b"content-length", str(len(body)).encode())]
        scope = {"type": "http", "method": "POST", "path": "/agent/sessions", "raw_path": b"/agent/sessions"}
        scope |= {"headers": headers, "query_string": b"", "client": ("127.0.0.1", 1), "server": ("testserver", 80)}
        scope |= {"scheme": "http", "http_version": "1.1", "asgi": {"version": "3.0"}, "root_path": ""}
        await application(scope, receive, send)
        return sent[0]["status"]

    connection_created.connect(created)
    try:

        async def two():
            return [await create(), await create()]

        statuses = asyncio.run(two())
    finally:
        connection_created.disconnect(created)
    assert statuses == [201, 201]
    first, second = opened[: len(opened) // 2], opened[len(opened) // 2 :]
    assert first and second and len(first) == len(second), opened
    assert threads[0] is threads[-1], "the second request ran on a new thread"
    assert all(c.connection is None for c in opened), "a request's connection outlived it"
