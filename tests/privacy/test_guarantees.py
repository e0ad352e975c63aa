"""Guarantees that the other tests left to a second layer of defence.

Each test here was written against a deliberate break of the guarantee code
that the rest of the suite let pass (often because encryption at rest still
turned the break into the uniform 404): the owner condition of the read path,
the token taken only from its header, the exact TTL instant, the
secure_delete receiver on a SQLite that starts with it off, the erasure of an
expired session by its owner's DELETE, and the turn lock held through the
turn's writes.
"""

import datetime as dt
import sqlite3

import pytest
import time_machine
from django.db import connection
from django.db.backends.sqlite3.base import DatabaseWrapper
from django.urls import reverse

from sessions_app import retention
from sessions_app.adk.buffer import TurnBuffer
from sessions_app.infra import sqlite
from sessions_app.models import AgentSession, DeletionAudit, SessionEvent, UserState
from sessions_app.purge import purge_expired
from sessions_app.security import crypto
from sessions_app.security.tokens import owner_id_for
from sessions_app.selectors import owned_live_session
from sessions_app.storage import turn_lock
from tests.support.factories import make_session, make_user_state
from tests.support.scripted_llm import text_response
from tests.support.session_client import messages_of, say

pytestmark = pytest.mark.django_db

HOUR = dt.timedelta(hours=1)
UNIFORM_404_BODY = '{"detail": "找不到這個工作階段，可能已過期或被刪除"}'.encode()
# An instant with microseconds, so "exactly at expiry" is not a whole second.
T0 = dt.datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=dt.UTC)


# --- 1. Ownership is decided by the lookup, before any key is derived --------


def test_owned_live_session_returns_none_for_another_owners_id(new_session):
    session_id, token = new_session()
    _, other_token = new_session()
    assert owned_live_session(session_id, owner_id_for(token)).session_id == session_id
    assert owned_live_session(session_id, owner_id_for(other_token)) is None
    assert owned_live_session(session_id, owner_id_for("x" * 43)) is None


def test_a_session_of_another_adk_app_is_not_the_apis(new_session):
    """The store serves any ADK app; the API finds only its own app's sessions, even for
    the same id and owner."""
    session_id, token = new_session()
    AgentSession.objects.filter(session_id=session_id).update(app_name="another_app")
    assert owned_live_session(session_id, owner_id_for(token)) is None


@pytest.fixture
def derived_keys(monkeypatch):
    """Records every key derivation (the scope it was derived for)."""
    scopes = []
    derive = crypto.derive_key

    def recording(token, scope, purpose):
        scopes.append(scope)
        return derive(token, scope, purpose)

    monkeypatch.setattr(crypto, "derive_key", recording)
    return scopes


READS = [
    ("get", "/agent/sessions/{id}", None),
    ("get", "/agent/sessions/{id}/messages", None),
    ("post", "/agent/sessions/{id}/messages", {"message": "請更新我的計畫"}),
    ("get", "/agent/sessions/{id}/export", None),
]


@pytest.mark.parametrize("method,path,body", READS, ids=[f"{m} {p}" for m, p, _ in READS])
def test_owner_condition_is_checked_before_any_decrypt(
    api, new_session, derived_keys, scripted_model, method, path, body
):
    model = scripted_model()  # no steps: a model call would fail the turn
    session_id, _ = new_session()
    _, other_token = new_session()
    derived_keys.clear()
    response = getattr(api, method)(path.format(id=session_id), body, format="json", HTTP_X_SESSION_TOKEN=other_token)
    assert (response.status_code, response.content) == (404, UNIFORM_404_BODY)
    # The lookup by id and owner missed: no key was derived for the session,
    # so no ciphertext of someone else's session was even tried.
    assert derived_keys == []
    assert model.requests == []


# --- 2. The token is read from its header only ------------------------------

TOKEN_ELSEWHERE = ["token", "X-Session-Token", "x_session_token"]


@pytest.mark.parametrize("name", TOKEN_ELSEWHERE)
def test_token_in_the_url_is_refused_and_deletes_nothing(api, new_session, name):
    session_id, token = new_session()
    response = api.delete(f"/agent/sessions/{session_id}?{name}={token}")
    assert response.status_code == 401
    assert AgentSession.objects.filter(session_id=session_id).exists()
    assert DeletionAudit.objects.count() == 0


@pytest.mark.parametrize("name", TOKEN_ELSEWHERE)
@pytest.mark.parametrize("where", ["query", "json body", "form body"])
def test_token_outside_its_header_is_refused_and_adds_no_turn(api, new_session, scripted_model, name, where):
    model = scripted_model(text_response("must never be said"))
    session_id, token = new_session()
    url = f"/agent/sessions/{session_id}/messages"
    body = {"message": "請更新我的計畫"}
    if where == "query":
        response = api.post(f"{url}?{name}={token}", body, format="json")
    elif where == "json body":
        response = api.post(url, {**body, name: token}, format="json")
    else:
        response = api.post(url, {**body, name: token})  # multipart form
    assert response.status_code == 401
    assert model.requests == []
    assert messages_of(api, session_id, token) == []
    for read in (f"/agent/sessions/{session_id}", url, f"/agent/sessions/{session_id}/export"):
        assert api.get(f"{read}?{name}={token}").status_code == 401


# --- 3. Expiry at the exact instant: `last_activity_at + TTL` is already expired ---


def _session_created_at(api, instant) -> tuple[str, str]:
    from tests.support.privacy import fixture_resume

    with time_machine.travel(instant, tick=False):
        created = api.post("/agent/sessions", {"resume_text": fixture_resume()}, format="json").json()
    return created["session_id"], created["token"]


def test_api_treats_a_session_as_expired_at_the_exact_ttl_instant(api, settings):
    settings.AGENT_SESSION_TTL_HOURS, settings.AGENT_SESSION_MAX_AGE_HOURS = 24, 168
    session_id, token = _session_created_at(api, T0)
    url = f"/agent/sessions/{session_id}"
    with time_machine.travel(T0 + 24 * HOUR - dt.timedelta(microseconds=1), tick=False):
        response = api.get(url, HTTP_X_SESSION_TOKEN=token)
        assert response.status_code == 200
        assert dt.datetime.fromisoformat(response.json()["expires_at"]) == T0 + 24 * HOUR
    with time_machine.travel(T0 + 24 * HOUR, tick=False):
        assert api.get(url, HTTP_X_SESSION_TOKEN=token).content == UNIFORM_404_BODY


def test_api_treats_a_session_as_expired_at_the_exact_max_age_instant(api, settings):
    settings.AGENT_SESSION_TTL_HOURS, settings.AGENT_SESSION_MAX_AGE_HOURS = 24, 2
    session_id, token = _session_created_at(api, T0)
    url = f"/agent/sessions/{session_id}"
    with time_machine.travel(T0 + HOUR, tick=False):  # activity: the TTL moves on, the max age does not
        assert say(api, session_id, token).status_code == 200
    with time_machine.travel(T0 + 2 * HOUR - dt.timedelta(microseconds=1), tick=False):
        assert api.get(url, HTTP_X_SESSION_TOKEN=token).status_code == 200
    with time_machine.travel(T0 + 2 * HOUR, tick=False):
        assert api.get(url, HTTP_X_SESSION_TOKEN=token).content == UNIFORM_404_BODY


def _sessions_ending_at(instant):
    """One session at its TTL instant, one at its max-age instant, one a microsecond short of each."""
    ttl, max_age, tick = retention.ttl(), retention.max_age(), dt.timedelta(microseconds=1)
    return {
        "ttl": make_session("anon-ttl", last_activity=instant - ttl),
        "max age": make_session("anon-max-age", created=instant - max_age, last_activity=instant - HOUR),
        "live": make_session("anon-live", last_activity=instant - ttl + tick),
        "live max age": make_session("anon-live-max", created=instant - max_age + tick, last_activity=instant - HOUR),
    }


def test_admin_status_filter_counts_the_exact_instant_as_expired(client, admin_user, settings):
    settings.AGENT_SESSION_TTL_HOURS, settings.AGENT_SESSION_MAX_AGE_HOURS = 24, 168
    sessions = _sessions_ending_at(T0)
    changelist = reverse("admin:sessions_app_agentsession_changelist")

    def listed(status):
        response = client.get(changelist, {"status": status})
        return {session.pk for session in response.context["cl"].result_list}

    with time_machine.travel(T0, tick=False):
        client.force_login(admin_user)  # a login made now would have expired by T0
        assert listed("expired") == {sessions["ttl"].pk, sessions["max age"].pk}
        assert listed("live") == {sessions["live"].pk, sessions["live max age"].pk}


def test_purge_deletes_sessions_at_the_exact_instant(settings):
    settings.AGENT_SESSION_TTL_HOURS, settings.AGENT_SESSION_MAX_AGE_HOURS = 24, 168
    settings.PURGE_BATCH_PAUSE_SECONDS = 0
    sessions = _sessions_ending_at(T0)
    assert purge_expired(now=T0, trigger="ttl").sessions == 2
    assert set(AgentSession.objects.values_list("pk", flat=True)) == {sessions["live"].pk, sessions["live max age"].pk}


# --- 4. The connection receiver turns secure_delete on, whatever the build ---


class SecureDeleteOffDatabaseWrapper(DatabaseWrapper):
    """A SQLite connection as a build with SQLITE_DEFAULT_SECURE_DELETE=0 opens it."""

    def get_new_connection(self, conn_params):
        raw = super().get_new_connection(conn_params)
        raw.execute("PRAGMA secure_delete=OFF")
        return raw


def _secure_delete_off_wrapper(tmp_path) -> DatabaseWrapper:
    # An SQLite file beside whatever the suite runs on: on the PostgreSQL leg without its OPTIONS
    # (connect_timeout is libpq's, not sqlite3's).
    own = connection.settings_dict["OPTIONS"] if connection.vendor == "sqlite" else {}
    settings_dict = {**connection.settings_dict, "NAME": str(tmp_path / "secure-delete-off.sqlite3"), "OPTIONS": own}
    return SecureDeleteOffDatabaseWrapper(settings_dict, alias="secure_delete_off")


def test_new_connection_gets_secure_delete_on_even_where_sqlite_defaults_to_off(tmp_path):
    plain = sqlite3.connect(tmp_path / "control.sqlite3")
    plain.execute("PRAGMA secure_delete=OFF")
    assert plain.execute("PRAGMA secure_delete").fetchone()[0] == 0  # the control: this SQLite honours OFF
    plain.close()

    wrapper = _secure_delete_off_wrapper(tmp_path)
    try:
        wrapper.ensure_connection()  # sends connection_created: our receiver runs
        with wrapper.cursor() as cursor:
            cursor.execute("PRAGMA secure_delete")
            assert cursor.fetchone()[0] == 1
    finally:
        wrapper.close()


def test_connection_that_keeps_secure_delete_off_is_refused(tmp_path, monkeypatch):
    """Fail closed: if the PRAGMA did not take, the connection is not used at all."""
    without_secure_delete = tuple(p for p in sqlite.CONNECTION_PRAGMAS if "secure_delete" not in p)
    monkeypatch.setattr(sqlite, "CONNECTION_PRAGMAS", without_secure_delete)
    wrapper = _secure_delete_off_wrapper(tmp_path)
    try:
        with pytest.raises(RuntimeError, match="secure_delete"):
            wrapper.ensure_connection()
    finally:
        wrapper.close()


# --- 5. DELETE of an expired, not yet purged session erases it -------------


def test_delete_of_an_expired_session_erases_its_rows_and_is_audited(api, settings):
    settings.AGENT_SESSION_TTL_HOURS = 24
    token = "expired-delete-token-not-a-real-one"
    owner = owner_id_for(token)
    expired = make_session(owner, last_activity=T0 - 25 * HOUR, events=3)
    make_user_state(owner, {"k": "v"})
    bystander = make_session("anon-bystander", last_activity=T0 - 25 * HOUR, events=2)
    make_user_state("anon-bystander", {"k": "v"})

    with time_machine.travel(T0, tick=False):
        response = api.delete(f"/agent/sessions/{expired.session_id}", HTTP_X_SESSION_TOKEN=token)
    # For the caller it was already gone: the uniform 404 ...
    assert (response.status_code, response.content) == (404, UNIFORM_404_BODY)
    # ... but its sealed rows are erased now, not left for the purge.
    assert not AgentSession.objects.filter(pk=expired.pk).exists()
    assert not SessionEvent.objects.filter(agent_session_id=expired.pk).exists()
    assert not UserState.objects.filter(owner_id=owner).exists()
    audit = DeletionAudit.objects.get()
    assert (audit.trigger, audit.sessions_deleted, audit.events_deleted) == ("api", 1, 3)
    # Someone else's expired session waits for the purge, untouched.
    assert SessionEvent.objects.filter(agent_session_id=bystander.pk).count() == 2
    assert UserState.objects.filter(owner_id="anon-bystander").exists()


# --- 6. The turn lock is held until the turn's writes are committed ---------


def test_turn_lock_is_held_while_the_turn_is_written(api, new_session, scripted_model, monkeypatch):
    """A second turn that tries to start while the first one's events are being
    written must be refused: were the lock released before the writes, the
    second turn would start on the state without them and overwrite it."""
    session_id, token = new_session()
    scripted_model(text_response("Hi 林語晴, the first answer."))
    store_pending = TurnBuffer.store_pending
    seen = {}

    def second_turn_during_the_writes():
        # The same thread and connection as the first turn's write
        # transaction: it sees what another request would see once that
        # transaction commits, and it needs no second write lock to ask.
        seen["in_transaction"] = connection.in_atomic_block
        seen["lock"] = turn_lock.turn_is_locked(AgentSession.objects.get(session_id=session_id).pk)
        seen["second"] = say(api, session_id, token, "second")

    def store_pending_with_a_second_turn(self, *args, **kwargs):
        second_turn_during_the_writes()
        return store_pending(self, *args, **kwargs)

    monkeypatch.setattr(TurnBuffer, "store_pending", store_pending_with_a_second_turn)
    first = say(api, session_id, token, "first")

    assert seen["second"].status_code == 409
    assert seen["in_transaction"] and seen["lock"]
    assert first.status_code == 200
    assert not turn_lock.turn_is_locked(AgentSession.objects.get(session_id=session_id).pk)
    monkeypatch.setattr(TurnBuffer, "store_pending", store_pending)
    assert [m["text"] for m in messages_of(api, session_id, token)] == ["first", "Hi 林語晴, the first answer."]
