"""Two web servers on one PostgreSQL and one Redis, as the README's "several servers" section
starts them: each gunicorn with a var/ of its own, so all they share is the database and the
cache. What one server stores or deletes, the other sees at once, and a rate limit counts
requests to both. (Runs in the PostgreSQL + Redis leg of `make test`.)"""

import os

import httpx
import pytest
from django.conf import settings
from django.db import connection

from .privacy import fixture_resume
from .test_servers import BIN, ROOT, _free_port, start_server

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]
CREATES_ALLOWED = 3


@pytest.fixture
def two_servers(tmp_path):
    servers = []
    for name in ("a", "b"):
        port = _free_port()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "PYTEST", "DJANGO_"))},
            "DATABASE_URL": _database_url(),
            "CACHE_URL": settings.CACHES["default"]["LOCATION"],
            "DJANGO_SECRET_KEY": "two-servers-test-key",
            "DJANGO_VAR_DIR": str(tmp_path / f"var-{name}"),
            "PYTHONPATH": str(ROOT),
            "SESSION_CREATE_RATE": f"{CREATES_ALLOWED}/hour",
        }
        command = [str(BIN / "gunicorn"), "config.wsgi", "--workers", "1", "--threads", "4", "--bind"]
        servers.append(start_server([*command, f"127.0.0.1:{port}"], env, tmp_path / f"{name}.log", port))
    yield [base for _, base in servers]
    for process, _ in servers:
        process.terminate()
        process.wait(timeout=30)


def test_a_session_made_on_one_server_is_used_and_deleted_through_the_other(two_servers):
    a, b = (httpx.Client(base_url=base, timeout=30) for base in two_servers)
    created = a.post("/agent/sessions", json={"resume_text": fixture_resume()})
    assert created.status_code == 201
    session_id, headers = created.json()["session_id"], {"X-Session-Token": created.json()["token"]}
    url = f"/agent/sessions/{session_id}"

    assert b.post(f"{url}/messages", json={"message": "Please draft my plan"}, headers=headers).status_code == 200
    described = a.get(url, headers=headers)
    assert (described.status_code, described.json()["turns"], described.json()["plan_versions"]) == (200, 1, 1)

    assert a.delete(url, headers=headers).status_code == 204
    gone_on_b = b.get(url, headers=headers)
    assert gone_on_b.status_code == 404
    assert gone_on_b.content == a.get(url, headers=headers).content  # the one uniform 404


def test_the_create_limit_counts_requests_to_both_servers(two_servers):
    a, b = (httpx.Client(base_url=base, timeout=30) for base in two_servers)
    body = {"resume_text": "Chen Mei-Ling\nData Analyst"}
    statuses = [(a if i % 2 else b).post("/agent/sessions", json=body).status_code for i in range(CREATES_ALLOWED)]
    assert statuses == [201] * CREATES_ALLOWED
    refused = [client.post("/agent/sessions", json=body) for client in (a, b)]
    assert [r.status_code for r in refused] == [429, 429]
    assert all(r.headers.get("Retry-After") for r in refused)
