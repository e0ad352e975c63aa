"""Differential contract tests: ADK's InMemorySessionService against our DjangoSessionService.

Ported from google/adk-python `tests/unittests/sessions/test_session_service.py`
at commit 11cc093158fed8ad72b40fce0d0bf3d8b2f8aa18 (the head that moved the
shared cases onto the `_conformance` backend registry), read against the
installed google-adk 2.13.0, whose `in_memory_session_service.py`,
`sqlite_session_service.py` and `database_session_service.py` are the reference
behaviour.

Every test that takes `svc` runs once per service (`in_memory`, `django`), so a
behaviour in which our store differs from ADK's own shows up as a failing
`[django]` case next to a passing `[in_memory]` one. Upstream cases that only
exercised one service but state a behaviour every service owes its callers
(padded and blank ids, deleting, listing, idempotent re-delivery) are ported as
contract cases too.

Behaviour only a persistent store can have (stale-writer detection, JSON
coercion of state) runs against `persistent`: our store and, where ADK's own
`SqliteSessionService` has the behaviour, that service on a file in tmp_path.
Cases that only ADK's `DatabaseSessionService` has (it needs SQLAlchemy, which
this project does not install) run against `django` alone; each says why.

The services are async; tests call them through `async_to_sync`, as the
Django views do, so the ORM work runs on the test's thread and its
transactional test database.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import time

import pytest
import time_machine
from asgiref.sync import async_to_sync
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types

from sessions_app.adk.service import DjangoSessionService
from sessions_app.models import AgentSession, SessionEvent
from sessions_app.security.crypto import token_context

pytestmark = pytest.mark.django_db(transaction=True)

APP = "my_app"
USER = "test_user"
TOKEN = "contract-test-token-not-a-real-one"


@pytest.fixture(autouse=True)
def _session_token():
    """Our store seals content with keys derived from the request's token, as
    under the API; one fixed token serves every user here. The in-memory
    reference ignores it. (`async_to_sync` carries the context into the store.)"""
    with token_context(TOKEN):
        yield


class BlockingService:
    """Calls a session service's coroutines from sync test code (as Django views do)."""

    def __init__(self, service: BaseSessionService):
        self.service = service

    def __getattr__(self, name):
        attribute = getattr(self.service, name)
        if inspect.iscoroutinefunction(attribute):
            return async_to_sync(attribute)
        return attribute


@pytest.fixture(params=["in_memory", "django"])
def service(request) -> BaseSessionService:
    """ADK's reference service and ours; every contract case runs against both."""
    if request.param == "in_memory":
        return InMemorySessionService()
    return DjangoSessionService()


@pytest.fixture
def svc(service) -> BlockingService:
    return BlockingService(service)


@pytest.fixture(params=["django", "adk_sqlite"])
def persistent(request, tmp_path) -> BlockingService:
    """Our store and ADK's own SqliteSessionService, for behaviour only storage has."""
    if request.param == "django":
        return BlockingService(DjangoSessionService())
    return BlockingService(SqliteSessionService(str(tmp_path / "adk_sqlite.db")))


@pytest.fixture
def django_svc() -> BlockingService:
    return BlockingService(DjangoSessionService())


def _event(**kwargs) -> Event:
    kwargs.setdefault("invocation_id", "inv")
    kwargs.setdefault("author", "user")
    return Event(**kwargs)


def _delta(**state) -> EventActions:
    return EventActions(state_delta=state)


# --- create / get / delete ------------------------------------------------------------


def test_get_missing_session_returns_none(svc):
    assert svc.get_session(app_name=APP, user_id=USER, session_id="123") is None


def test_create_get_and_delete_session(svc):
    state = {"key": "value"}
    session = svc.create_session(app_name=APP, user_id=USER, state=state)

    assert session.app_name == APP
    assert session.user_id == USER
    assert session.id
    assert session.state == state
    assert session.events == []
    assert session.last_update_time <= time.time()

    got = svc.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert got == session
    assert got.last_update_time <= time.time()

    svc.delete_session(app_name=APP, user_id=USER, session_id=session.id)
    assert svc.get_session(app_name=APP, user_id=USER, session_id=session.id) is None


def test_deleted_session_id_can_be_reused_without_its_old_history(svc):
    session = svc.create_session(app_name=APP, user_id=USER, session_id="s1", state={"old": 1})
    svc.append_event(session, _event(actions=_delta(old=2)))
    svc.delete_session(app_name=APP, user_id=USER, session_id="s1")

    reborn = svc.create_session(app_name=APP, user_id=USER, session_id="s1", state={"new": 1})

    got = svc.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert got == reborn
    assert got.events == []
    assert got.state == {"new": 1}


def test_create_session_with_given_id_keeps_it(svc):
    session = svc.create_session(app_name=APP, user_id=USER, session_id="chosen-id")

    assert session.id == "chosen-id"
    assert svc.get_session(app_name=APP, user_id=USER, session_id="chosen-id").id == "chosen-id"


def test_create_session_without_id_generates_distinct_ids(svc):
    first = svc.create_session(app_name=APP, user_id=USER)
    second = svc.create_session(app_name=APP, user_id=USER)

    assert first.id and second.id
    assert first.id != second.id


def test_create_session_with_existing_id_raises_already_exists(svc):
    svc.create_session(app_name=APP, user_id=USER, session_id="existing_session")

    with pytest.raises(AlreadyExistsError):
        svc.create_session(app_name=APP, user_id=USER, session_id="existing_session")


def test_create_session_with_padded_duplicate_id_raises_and_keeps_original(svc):
    """The duplicate check runs on the stripped id, so a padded id cannot clobber a session."""
    svc.create_session(app_name=APP, user_id=USER, session_id="existing_session", state={"keep": "original"})

    with pytest.raises(AlreadyExistsError):
        svc.create_session(
            app_name=APP,
            user_id=USER,
            session_id="  existing_session  ",
            state={"keep": "clobbered", "app:keep": "clobbered", "user:keep": "clobbered"},
        )

    session = svc.get_session(app_name=APP, user_id=USER, session_id="existing_session")
    # The refused create wrote nothing, not even its app: and user: state.
    assert session.state == {"keep": "original"}
    assert svc.get_user_state(app_name=APP, user_id=USER) == {}


def test_padded_session_id_is_stripped_on_create_read_and_delete(svc):
    padded_id = "order-42\n"
    created = svc.create_session(app_name=APP, user_id=USER, session_id=padded_id, state={"cart": "book"})
    assert created.id == "order-42"

    session = svc.get_session(app_name=APP, user_id=USER, session_id=padded_id)
    assert session is not None
    assert session.id == "order-42"
    assert session.state["cart"] == "book"

    svc.delete_session(app_name=APP, user_id=USER, session_id=padded_id)
    assert svc.get_session(app_name=APP, user_id=USER, session_id="order-42") is None


def test_blank_session_id_generates_one(svc):
    session = svc.create_session(app_name=APP, user_id=USER, session_id="   ")

    assert session.id.strip()
    assert session.id == session.id.strip()
    assert svc.get_session(app_name=APP, user_id=USER, session_id=session.id) is not None


def test_same_session_id_is_separate_per_user(svc):
    session1 = svc.create_session(app_name=APP, user_id="u1", session_id="s1")
    svc.append_event(session1, _event(invocation_id="inv1"))
    svc.create_session(app_name=APP, user_id="u2", session_id="s1")

    got = svc.get_session(app_name=APP, user_id="u2", session_id="s1")
    assert got.user_id == "u2"
    assert got.events == []
    assert len(svc.get_session(app_name=APP, user_id="u1", session_id="s1").events) == 1


def test_delete_session_removes_only_the_targeted_users_session(svc):
    svc.create_session(app_name=APP, user_id="u1", session_id="s1")
    svc.create_session(app_name=APP, user_id="u2", session_id="s1")

    svc.delete_session(app_name=APP, user_id="u1", session_id="s1")

    assert svc.get_session(app_name=APP, user_id="u1", session_id="s1") is None
    other = svc.get_session(app_name=APP, user_id="u2", session_id="s1")
    assert other is not None and other.id == "s1"


def test_delete_missing_session_is_a_noop(svc):
    svc.create_session(app_name=APP, user_id="u1", session_id="s1")

    assert svc.delete_session(app_name=APP, user_id="u1", session_id="unknown_session") is None
    svc.delete_session(app_name=APP, user_id="unknown_user", session_id="s1")
    svc.delete_session(app_name="unknown_app", user_id="u1", session_id="s1")

    assert svc.get_session(app_name=APP, user_id="u1", session_id="s1") is not None


def test_fetched_session_is_a_copy_not_the_stored_session(svc):
    session = svc.create_session(app_name=APP, user_id=USER, state={"k": "v"})
    svc.append_event(session, _event(invocation_id="inv1"))

    fetched = svc.get_session(app_name=APP, user_id=USER, session_id=session.id)
    fetched.state["k"] = "changed"
    fetched.events.clear()

    again = svc.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert again.state == {"k": "v"}
    assert len(again.events) == 1


# --- list ---------------------------------------------------------------------------


def test_create_and_list_sessions_of_one_user(svc):
    session_ids = [f"session{i}" for i in range(5)]
    for session_id in session_ids:
        svc.create_session(app_name=APP, user_id=USER, session_id=session_id, state={"key": "value" + session_id})

    sessions = svc.list_sessions(app_name=APP, user_id=USER).sessions

    assert [s.id for s in sessions] == session_ids  # created in this order: oldest first
    for session in sessions:
        assert session.state == {"key": "value" + session.id}


def test_list_sessions_with_and_without_user_id(svc):
    svc.create_session(app_name=APP, user_id="user1", session_id="session1a", state={"key": "1a"})
    svc.create_session(app_name=APP, user_id="user1", session_id="session1b", state={"key": "1b"})
    svc.create_session(app_name=APP, user_id="user2", session_id="session2a", state={"key": "2a"})

    user1 = svc.list_sessions(app_name=APP, user_id="user1").sessions
    assert {s.id: s.state for s in user1} == {"session1a": {"key": "1a"}, "session1b": {"key": "1b"}}

    user2 = svc.list_sessions(app_name=APP, user_id="user2").sessions
    assert [(s.id, s.user_id, s.state) for s in user2] == [("session2a", "user2", {"key": "2a"})]

    everyone = svc.list_sessions(app_name=APP, user_id=None).sessions
    assert [(s.user_id, s.id) for s in everyone] == [
        ("user1", "session1a"),
        ("user1", "session1b"),
        ("user2", "session2a"),
    ]
    assert svc.list_sessions(app_name=APP).sessions == everyone


def test_list_sessions_ordered_by_last_update_time_oldest_first(svc):
    for session_id in ("a", "b", "c"):
        svc.create_session(app_name=APP, user_id=USER, session_id=session_id)

    # Make the oldest session the most recently active one: its event a second later on the clock.
    session_a = svc.get_session(app_name=APP, user_id=USER, session_id="a")
    with time_machine.travel(time.time() + 1, tick=False):
        svc.append_event(session_a, _event())

    sessions = svc.list_sessions(app_name=APP, user_id=USER).sessions
    assert [s.id for s in sessions] == ["b", "c", "a"]
    assert [s.last_update_time for s in sessions] == sorted(s.last_update_time for s in sessions)


def test_listed_sessions_carry_merged_state_but_no_events(svc):
    session = svc.create_session(
        app_name=APP, user_id="u1", session_id="s1", state={"app:a": "av", "user:u": "uv", "sk": "sv", "temp:t": "tv"}
    )
    svc.append_event(session, _event(invocation_id="inv1", actions=_delta(sk2="sv2")))

    sessions = svc.list_sessions(app_name=APP, user_id="u1").sessions

    assert [s.id for s in sessions] == ["s1"]
    assert sessions[0].events == []
    assert sessions[0].state == {"app:a": "av", "user:u": "uv", "sk": "sv", "sk2": "sv2"}


def test_listed_session_can_be_appended_to(svc):
    svc.create_session(app_name=APP, user_id=USER, session_id="s1", state={"k": 1})
    [listed] = svc.list_sessions(app_name=APP, user_id=USER).sessions

    svc.append_event(listed, _event(invocation_id="inv1", actions=_delta(k=2)))

    got = svc.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert [e.invocation_id for e in got.events] == ["inv1"]
    assert got.state == {"k": 2}


def test_list_sessions_of_unknown_app_or_user_is_empty(svc):
    svc.create_session(app_name=APP, user_id="u1", session_id="s1")

    assert svc.list_sessions(app_name="unknown_app").sessions == []
    assert svc.list_sessions(app_name=APP, user_id="unknown_user").sessions == []
    assert [s.id for s in svc.list_sessions(app_name=APP).sessions] == ["s1"]


# --- state scoping ------------------------------------------------------------------------


def test_app_state_is_shared_by_all_users_of_app(svc):
    session1 = svc.create_session(app_name=APP, user_id="u1", session_id="s1", state={"app:k1": "v1"})
    svc.append_event(session1, _event(invocation_id="inv1", actions=_delta(**{"app:k2": "v2"})))

    session2 = svc.create_session(app_name=APP, user_id="u2", session_id="s2")
    assert session2.state == {"app:k1": "v1", "app:k2": "v2"}

    session1_got = svc.get_session(app_name=APP, user_id="u1", session_id="s1")
    assert session1_got.state == {"app:k1": "v1", "app:k2": "v2"}
    # App state belongs to one app only.
    assert svc.create_session(app_name="other_app", user_id="u1").state == {}


def test_user_state_is_shared_only_by_that_users_sessions(svc):
    session1 = svc.create_session(app_name=APP, user_id="u1", session_id="s1", state={"user:k1": "v1"})
    svc.append_event(session1, _event(invocation_id="inv1", actions=_delta(**{"user:k2": "v2"})))

    session1b = svc.create_session(app_name=APP, user_id="u1", session_id="s1b")
    assert session1b.state == {"user:k1": "v1", "user:k2": "v2"}

    session2 = svc.create_session(app_name=APP, user_id="u2", session_id="s2")
    assert session2.state == {}


def test_session_state_is_not_shared(svc):
    session1 = svc.create_session(app_name=APP, user_id="u1", session_id="s1", state={"sk1": "v1"})
    svc.append_event(session1, _event(invocation_id="inv1", actions=_delta(sk2="v2")))

    session1_got = svc.get_session(app_name=APP, user_id="u1", session_id="s1")
    assert session1_got.state == {"sk1": "v1", "sk2": "v2"}

    session1b = svc.create_session(app_name=APP, user_id="u1", session_id="s1b")
    assert session1b.state == {}


def test_scoped_state_is_merged_into_get_and_list(svc):
    svc.create_session(app_name=APP, user_id="u1", session_id="s1", state={"app:a": 1, "user:u": 2, "s": 3})
    later = svc.create_session(app_name=APP, user_id="u1", session_id="s2")
    svc.append_event(later, _event(actions=_delta(**{"app:a": 10, "user:u2": 20})))

    expected = {"app:a": 10, "user:u": 2, "user:u2": 20, "s": 3}
    assert svc.get_session(app_name=APP, user_id="u1", session_id="s1").state == expected
    listed = {s.id: s.state for s in svc.list_sessions(app_name=APP, user_id="u1").sessions}
    assert listed == {"s1": expected, "s2": {"app:a": 10, "user:u": 2, "user:u2": 20}}


def test_temp_state_at_create_is_never_stored(svc):
    session = svc.create_session(app_name=APP, user_id=USER, session_id="s1", state={"temp:t": "tv", "sk": "sv"})

    assert session.state == {"sk": "sv"}
    assert svc.get_session(app_name=APP, user_id=USER, session_id="s1").state == {"sk": "sv"}


def test_temp_state_is_visible_in_memory_but_not_persisted(svc):
    session = svc.create_session(app_name=APP, user_id=USER, session_id="s1")
    event = _event(invocation_id="inv1", actions=_delta(**{"temp:k1": "v1", "sk": "v2"}))
    svc.append_event(session, event)

    # Temp state is available to the rest of this invocation...
    assert session.state.get("temp:k1") == "v1"
    assert session.state.get("sk") == "v2"
    # ...but trimmed from the event's delta...
    assert "temp:k1" not in event.actions.state_delta
    assert event.actions.state_delta.get("sk") == "v2"
    # ...and never stored.
    got = svc.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert got.state == {"sk": "v2"}
    assert got.events[0].actions.state_delta == {"sk": "v2"}


def test_temp_state_visible_across_sequential_events(svc):
    """A SequentialAgent's second agent reads what the first wrote to temp: state."""
    session = svc.create_session(app_name=APP, user_id=USER, session_id="s_seq")
    event1 = _event(author="agent1", actions=_delta(**{"temp:output": "result_from_a1"}))
    svc.append_event(session, event1)

    assert session.state.get("temp:output") == "result_from_a1"
    assert "temp:output" not in event1.actions.state_delta

    svc.append_event(session, _event(author="agent2", actions=_delta(done=True)))
    assert session.state.get("temp:output") == "result_from_a1"


# --- state deltas: dict.update semantics ------------------------------------------------


def test_dict_valued_state_delta_replaces_stored_value(svc):
    session = svc.create_session(
        app_name=APP, user_id="u1", session_id="s1", state={"profile": {"name": "ada", "role": "admin"}}
    )
    svc.append_event(session, _event(actions=_delta(profile={"name": "bob"})))

    reloaded = svc.get_session(app_name=APP, user_id="u1", session_id="s1")
    assert reloaded.state.get("profile") == {"name": "bob"}
    assert session.state.get("profile") == {"name": "bob"}


def test_none_valued_state_delta_is_stored_not_dropped(svc):
    session = svc.create_session(app_name=APP, user_id="u1", session_id="s1", state={"flag": True})
    svc.append_event(session, _event(actions=_delta(flag=None)))

    reloaded = svc.get_session(app_name=APP, user_id="u1", session_id="s1")
    assert "flag" in reloaded.state and reloaded.state["flag"] is None
    assert "flag" in session.state and session.state["flag"] is None


def test_boolean_state_survives_unrelated_state_delta(svc):
    session = svc.create_session(app_name=APP, user_id="u1", session_id="s1", state={"flag": False})
    svc.append_event(session, _event(actions=_delta(new_flag=True)))

    reloaded = svc.get_session(app_name=APP, user_id="u1", session_id="s1")
    assert reloaded.state.get("new_flag") is True
    assert reloaded.state.get("flag") is False
    assert session.state.get("new_flag") is True
    assert session.state.get("flag") is False


def test_app_state_dict_valued_delta_replaces_stored_value(svc):
    session1 = svc.create_session(
        app_name=APP, user_id="u1", session_id="s1", state={"app:cfg": {"name": "ada", "role": "admin"}}
    )
    svc.append_event(session1, _event(actions=_delta(**{"app:cfg": {"name": "bob"}})))

    session2 = svc.create_session(app_name=APP, user_id="u2", session_id="s2")
    assert session2.state.get("app:cfg") == {"name": "bob"}
    assert session1.state.get("app:cfg") == {"name": "bob"}


def test_user_state_none_valued_delta_is_stored_not_dropped(svc):
    session1 = svc.create_session(app_name=APP, user_id="u1", session_id="s1", state={"user:pref": "dark_mode"})
    svc.append_event(session1, _event(actions=_delta(**{"user:pref": None})))

    session1b = svc.create_session(app_name=APP, user_id="u1", session_id="s1b")
    assert "user:pref" in session1b.state and session1b.state["user:pref"] is None
    assert "user:pref" in session1.state and session1.state["user:pref"] is None


def test_state_deltas_accumulate_across_events(svc):
    session = svc.create_session(app_name=APP, user_id=USER, session_id="s1", state={"a": 1, "b": 1})
    svc.append_event(session, _event(actions=_delta(b=2, c=2)))
    svc.append_event(session, _event(actions=_delta(c=3, d=3)))

    expected = {"a": 1, "b": 2, "c": 3, "d": 3}
    assert session.state == expected
    assert svc.get_session(app_name=APP, user_id=USER, session_id="s1").state == expected


def test_state_values_round_trip_exactly(svc):
    values = {
        "float": 0.1 + 0.2,
        "big_int": 2**70,
        "negative": -(2**63) - 1,
        "nested": {"list": [1, "two", None, {"three": [3.5]}], "empty": {}},
        "text": "履歷 — Grüße 🚀",
        "bool": False,
        "none": None,
    }
    session = svc.create_session(app_name=APP, user_id=USER, session_id="s1", state=dict(values))
    svc.append_event(session, _event(actions=_delta(**{"later": dict(values), "user:u": dict(values)})))

    got = svc.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert got.state == {**values, "later": values, "user:u": values}
    assert svc.get_user_state(app_name=APP, user_id=USER) == {"u": values}


# --- append_event ----------------------------------------------------------------------


def test_partial_events_are_not_persisted(svc):
    session = svc.create_session(app_name=APP, user_id=USER)
    returned = svc.append_event(session, _event(partial=True, actions=_delta(k="v")))

    assert returned.partial is True
    assert session.events == []
    got = svc.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert got.events == []
    assert "k" not in got.state


def test_events_are_stored_in_append_order(svc):
    session = svc.create_session(app_name=APP, user_id=USER)
    for i in range(5):
        svc.append_event(session, _event(invocation_id=f"inv{i}", author="user" if i % 2 else "agent"))

    got = svc.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert [e.invocation_id for e in got.events] == [f"inv{i}" for i in range(5)]
    assert [e.id for e in got.events] == [e.id for e in session.events]


def test_tied_timestamps_reload_in_append_order(svc):
    """Events sharing a timestamp come back in the order they were appended.

    Upstream's head test (test_get_session_orders_tied_timestamps_by_id) expects
    id order from the database services; the installed ADK 2.13.0 breaks ties on
    insertion order in SqliteSessionService and keeps append order in
    InMemorySessionService, our reference, so append order is the contract here.
    """
    session = svc.create_session(app_name=APP, user_id=USER)
    for event_id in ["event_z", "event_a", "event_m"]:
        svc.append_event(session, Event(author="user", id=event_id, timestamp=100.0))

    got = svc.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert [e.id for e in got.events] == ["event_z", "event_a", "event_m"]
    recent = svc.get_session(
        app_name=APP, user_id=USER, session_id=session.id, config=GetSessionConfig(num_recent_events=2)
    )
    assert [e.id for e in recent.events] == ["event_a", "event_m"]


def test_append_event_returns_the_event_and_updates_the_session(svc):
    session = svc.create_session(app_name=APP, user_id=USER)
    event = _event(actions=_delta(k="v"))

    returned = svc.append_event(session, event)

    assert returned is event
    assert session.events == [event]
    assert session.state == {"k": "v"}


def test_session_last_update_time_updates_on_event(svc):
    session = svc.create_session(app_name=APP, user_id=USER)
    original_update_time = session.last_update_time

    event_timestamp = original_update_time + 10
    svc.append_event(session, _event(timestamp=event_timestamp))

    assert session.last_update_time == pytest.approx(event_timestamp, abs=1e-6)
    refreshed = svc.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert refreshed.last_update_time == pytest.approx(event_timestamp, abs=1e-6)
    assert refreshed.last_update_time > original_update_time


def test_reloaded_session_equals_the_writers_copy(svc):
    """After appends with real clock timestamps, a reload equals the session the writer holds.

    This is what the Runner relies on between turns: the session it got back
    from append_event and the one it reloads next turn must agree exactly,
    last_update_time included.
    """
    session = svc.create_session(app_name=APP, user_id=USER, state={"k": 0})
    for i in range(3):
        svc.append_event(session, _event(invocation_id=f"inv{i}", actions=_delta(k=i + 1)))

    got = svc.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert got.last_update_time == session.last_update_time
    assert got == session


def test_append_event_bytes(svc):
    session = svc.create_session(app_name=APP, user_id=USER)
    test_content = types.Content(
        role="user", parts=[types.Part.from_bytes(data=b"test_image_data", mime_type="image/png")]
    )
    test_grounding_metadata = types.GroundingMetadata(
        search_entry_point=types.SearchEntryPoint(sdk_blob=b"test_sdk_blob")
    )
    svc.append_event(
        session, _event(invocation_id="invocation", content=test_content, grounding_metadata=test_grounding_metadata)
    )

    assert session.events[0].content == test_content
    got = svc.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert len(got.events) == 1
    assert got.events[0].content == test_content
    assert got.events[0].grounding_metadata == test_grounding_metadata


def test_append_event_complete_round_trips_every_field(svc):
    session = svc.create_session(app_name=APP, user_id=USER)
    event = Event(
        invocation_id="invocation",
        author="user",
        content=types.Content(role="user", parts=[types.Part(text="test_text")]),
        turn_complete=True,
        partial=False,
        actions=EventActions(artifact_delta={"file": 0}, transfer_to_agent="agent", escalate=True),
        long_running_tool_ids={"tool1"},
        error_code="error_code",
        error_message="error_message",
        interrupted=True,
        grounding_metadata=types.GroundingMetadata(web_search_queries=["query1"]),
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=1, candidates_token_count=1, total_token_count=2
        ),
        citation_metadata=types.CitationMetadata(),
        custom_metadata={"custom_key": "custom_value"},
        timestamp=1700000000.123,
        input_transcription=types.Transcription(text="input transcription", finished=True),
        output_transcription=types.Transcription(text="output transcription", finished=True),
    )
    svc.append_event(session, event)

    assert svc.get_session(app_name=APP, user_id=USER, session_id=session.id) == session


def test_function_calls_responses_and_non_ascii_text_round_trip(svc):
    session = svc.create_session(app_name=APP, user_id=USER)
    call = types.FunctionCall(id="call-1", name="verify_claims", args={"claims": ["帶領團隊 5 人", "Grüße"]})
    response = types.FunctionResponse(
        id="call-1", name="verify_claims", response={"results": [{"claim": "帶領團隊 5 人", "ok": True}]}
    )
    events = [
        _event(content=types.Content(role="user", parts=[types.Part(text="請檢查我的履歷 🚀 — naïve café")])),
        _event(author="agent", content=types.Content(role="model", parts=[types.Part(function_call=call)])),
        _event(author="agent", content=types.Content(role="user", parts=[types.Part(function_response=response)])),
        _event(author="agent", content=types.Content(role="model", parts=[types.Part(text="完成。Done.")])),
    ]
    for event in events:
        svc.append_event(session, event)

    got = svc.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert got.events == events
    assert got.events[1].get_function_calls()[0].args == {"claims": ["帶領團隊 5 人", "Grüße"]}
    assert got.events[2].get_function_responses()[0].response["results"][0]["claim"] == "帶領團隊 5 人"
    assert got.events[0].content.parts[0].text == "請檢查我的履歷 🚀 — naïve café"


def test_append_event_with_requested_tool_confirmations(svc):
    session = svc.create_session(app_name=APP, user_id=USER)
    confirmation = ToolConfirmation(
        hint="dynamic hint", confirmed=False, payload={"collection_name": "photos", "resource_id": "album_1"}
    )
    svc.append_event(session, _event(actions=EventActions(requested_tool_confirmations={"tool_call_1": confirmation})))

    got = svc.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert len(got.events) == 1
    tc = got.events[0].actions.requested_tool_confirmations["tool_call_1"]
    assert tc.hint == "dynamic hint"
    assert tc.payload == {"collection_name": "photos", "resource_id": "album_1"}
    assert not tc.confirmed


def test_append_event_is_idempotent_for_an_equal_redelivery(svc):
    """Re-delivering an event (same object or equal copy) neither duplicates it nor re-applies state."""
    session = svc.create_session(app_name="test_app", user_id="user_dup", session_id="session_dup")
    event = _event(invocation_id="inv_dup", actions=_delta(**{"session:counter": 1}))

    svc.append_event(session, event)
    svc.append_event(session, event)
    svc.append_event(session, event.model_copy(deep=True))

    retrieved = svc.get_session(app_name="test_app", user_id="user_dup", session_id="session_dup")
    assert [e.id for e in retrieved.events] == [event.id]
    assert retrieved.state == {"session:counter": 1}
    assert [e.id for e in session.events] == [event.id]


def test_distinct_events_sharing_an_id_are_both_stored(svc):
    session = svc.create_session(app_name="test_app", user_id="user_multi", session_id="session_multi")
    svc.append_event(session, Event(id="shared-event-id", invocation_id="inv_a", author="user"))
    svc.append_event(session, Event(id="shared-event-id", invocation_id="inv_b", author="agent"))

    retrieved = svc.get_session(app_name="test_app", user_id="user_multi", session_id="session_multi")
    assert [e.author for e in retrieved.events] == ["user", "agent"]


def test_append_event_to_deleted_session_raises_session_not_found(svc):
    session = svc.create_session(app_name=APP, user_id=USER)
    svc.delete_session(app_name=APP, user_id=USER, session_id=session.id)

    with pytest.raises(SessionNotFoundError):
        svc.append_event(session, _event(invocation_id="inv1"))
    assert svc.get_session(app_name=APP, user_id=USER, session_id=session.id) is None


def test_append_event_to_never_created_session_raises_session_not_found(svc):
    from google.adk.sessions.session import Session

    stranger = Session(app_name=APP, user_id=USER, id="never-created")
    with pytest.raises(SessionNotFoundError):
        svc.append_event(stranger, _event())
    assert svc.list_sessions(app_name=APP).sessions == []


# --- get_session config --------------------------------------------------------------------


def test_get_session_with_config(svc):
    num_test_events = 5
    base_timestamp = int(time.time())
    session = svc.create_session(app_name=APP, user_id=USER)
    for i in range(1, num_test_events + 1):
        svc.append_event(session, Event(author="user", timestamp=base_timestamp + i))

    def get(**config):
        return svc.get_session(
            app_name=APP, user_id=USER, session_id=session.id, config=GetSessionConfig(**config) if config else None
        ).events

    assert len(get()) == num_test_events
    # Zero recent events means no history at all, not "no limit".
    assert get(num_recent_events=0) == []
    # The most recent 3, oldest of them first.
    assert [e.timestamp for e in get(num_recent_events=3)] == [base_timestamp + i for i in (3, 4, 5)]
    # More than there are: all of them.
    assert len(get(num_recent_events=50)) == num_test_events
    # after_timestamp is inclusive.
    after_timestamp = base_timestamp + 4
    assert [e.timestamp for e in get(after_timestamp=after_timestamp)] == [after_timestamp, after_timestamp + 1]
    assert get(after_timestamp=base_timestamp + num_test_events * 10) == []
    # Both filters: of the 3 most recent, only 2 are at or after the cutoff.
    assert len(get(after_timestamp=after_timestamp, num_recent_events=3)) == 2
    assert len(get(after_timestamp=after_timestamp, num_recent_events=1)) == 1
    assert get(after_timestamp=after_timestamp, num_recent_events=0) == []


def test_get_session_config_still_returns_state_and_update_time(svc):
    session = svc.create_session(app_name=APP, user_id=USER, state={"k": "v"})
    svc.append_event(session, _event(actions=_delta(k2="v2")))

    got = svc.get_session(
        app_name=APP, user_id=USER, session_id=session.id, config=GetSessionConfig(num_recent_events=0)
    )
    assert got.events == []
    assert got.state == {"k": "v", "k2": "v2"}
    assert got.last_update_time == pytest.approx(session.last_update_time, abs=1e-6)


@pytest.fixture
def local_timezone_with_dst():
    """Runs the test in a local time zone that repeats an hour every autumn."""
    if not hasattr(time, "tzset"):
        yield
        return
    original_tz = os.environ.get("TZ")
    os.environ["TZ"] = "America/New_York"
    time.tzset()
    try:
        yield
    finally:
        if original_tz is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = original_tz
        time.tzset()


def test_event_timestamps_survive_a_repeated_local_hour(svc, local_timezone_with_dst):
    """Events written during a repeated local hour read back at the same instant."""
    repeated_hour_epochs = [1730613600.0, 1730615400.0]  # 01:00 and 01:30 EST, the second time
    session = svc.create_session(app_name=APP, user_id=USER)
    for epoch in repeated_hour_epochs:
        svc.append_event(session, Event(author="user", timestamp=epoch))

    got = svc.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert [e.timestamp for e in got.events] == repeated_hour_epochs
    assert got.last_update_time == pytest.approx(repeated_hour_epochs[-1], abs=1e-6)


# --- get_user_state ----------------------------------------------------------------------


def test_get_user_state_is_empty_when_none_exists(svc):
    assert svc.get_user_state(app_name=APP, user_id="u1") == {}


def test_get_user_state_returns_state_written_at_create_and_append(svc):
    session = svc.create_session(app_name=APP, user_id="u1", state={"user:lang": "zh-hant", "sk": 0})
    svc.append_event(
        session, _event(author="system", actions=_delta(**{"user:profile": {"name": "Alice"}, "session_key": 1}))
    )

    assert svc.get_user_state(app_name=APP, user_id="u1") == {"lang": "zh-hant", "profile": {"name": "Alice"}}


def test_get_user_state_is_isolated_between_users_and_apps(svc):
    session = svc.create_session(app_name=APP, user_id="u1")
    svc.append_event(session, _event(author="system", actions=_delta(**{"user:secret": "only-for-u1"})))

    assert svc.get_user_state(app_name=APP, user_id="u2") == {}
    assert svc.get_user_state(app_name="other_app", user_id="u1") == {}


def test_get_user_state_outlives_the_session_and_reflects_latest_write(svc):
    session = svc.create_session(app_name=APP, user_id="u1")
    svc.append_event(session, _event(author="system", actions=_delta(**{"user:counter": 1})))
    svc.append_event(session, _event(author="system", actions=_delta(**{"user:counter": 2})))
    svc.delete_session(app_name=APP, user_id="u1", session_id=session.id)

    # Available before the user's next session is created.
    assert svc.get_user_state(app_name=APP, user_id="u1") == {"counter": 2}
    assert svc.create_session(app_name=APP, user_id="u1").state == {"user:counter": 2}


def test_get_user_state_returns_a_copy(svc):
    session = svc.create_session(app_name=APP, user_id="u1", state={"user:tags": ["a"]})
    state = svc.get_user_state(app_name=APP, user_id="u1")
    state["tags"].append("mutated")
    state["new"] = 1

    assert svc.get_user_state(app_name=APP, user_id="u1") == {"tags": ["a"]}
    assert svc.get_session(app_name=APP, user_id="u1", session_id=session.id).state == {"user:tags": ["a"]}


# --- persistent stores only ------------------------------------------------------------------


def test_stale_copy_is_rejected_and_reloaded_copy_can_append(persistent):
    """Two copies of one session: once one appends, the other is stale until reloaded.

    Persistent stores only: InMemorySessionService has no stale-writer check
    (it appends whatever copy it is given to the one stored session).
    """
    session = persistent.create_session(app_name=APP, user_id=USER)
    copy_a = persistent.get_session(app_name=APP, user_id=USER, session_id=session.id)
    copy_b = persistent.get_session(app_name=APP, user_id=USER, session_id=session.id)

    persistent.append_event(copy_a, _event(invocation_id="winner", actions=_delta(a=1)))

    with pytest.raises(StaleSessionError) as error:
        persistent.append_event(copy_b, _event(invocation_id="stale", actions=_delta(b=1)))
    assert isinstance(error.value, ValueError)

    reloaded = persistent.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert [e.invocation_id for e in reloaded.events] == ["winner"]
    assert reloaded.state == {"a": 1}

    persistent.append_event(reloaded, _event(invocation_id="after-reload", actions=_delta(c=1)))
    # The writer that won keeps going too once it reloads; its own copy is now stale.
    with pytest.raises(StaleSessionError):
        persistent.append_event(copy_a, _event(invocation_id="stale-again"))

    final = persistent.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert [e.invocation_id for e in final.events] == ["winner", "after-reload"]
    assert final.state == {"a": 1, "c": 1}


def test_append_event_to_stale_session_keeps_only_committed_events(persistent):
    """Upstream test_append_event_to_stale_session: the stale writer's event and state never land.

    Persistent stores only: InMemorySessionService has no stale-writer check.
    """
    current_time = time.time()
    original = persistent.create_session(app_name=APP, user_id=USER)
    persistent.append_event(
        original, _event(invocation_id="inv1", timestamp=current_time + 1, actions=_delta(sk1="v1"))
    )
    updated = persistent.get_session(app_name=APP, user_id=USER, session_id=original.id)
    persistent.append_event(updated, _event(invocation_id="inv2", timestamp=current_time + 2, actions=_delta(sk2="v2")))

    assert original.last_update_time < updated.last_update_time
    assert len(original.events) == 1
    assert "sk2" not in original.state

    with pytest.raises(StaleSessionError):
        persistent.append_event(
            original, _event(invocation_id="inv3", timestamp=current_time + 3, actions=_delta(sk3="v3"))
        )

    final = persistent.get_session(app_name=APP, user_id=USER, session_id=original.id)
    assert [e.invocation_id for e in final.events] == ["inv1", "inv2"]
    assert final.state == {"sk1": "v1", "sk2": "v2"}
    assert len(original.events) == 1  # the rejected event was not added to the stale copy either


def test_deep_copied_session_is_stale_after_the_original_appends(persistent):
    """Upstream test_sqlite_append_event_uses_typed_stale_session_error, on both persistent stores."""
    session = persistent.create_session(app_name="app", user_id="user")
    stale = session.model_copy(deep=True)

    persistent.append_event(session, _event(invocation_id="winner", timestamp=session.last_update_time + 1))

    with pytest.raises(StaleSessionError) as error:
        persistent.append_event(stale, _event(invocation_id="stale", timestamp=session.last_update_time + 1))
    assert isinstance(error.value, ValueError)


def test_non_serializable_state_delta_is_stored_as_text(persistent):
    """A value JSON cannot hold is stored as its string form instead of failing the event.

    Persistent stores only: InMemorySessionService keeps the object itself.
    """
    session = persistent.create_session(app_name=APP, user_id=USER)
    persistent.append_event(session, _event(actions=_delta(callback=lambda: 1, ok=2)))

    refreshed = persistent.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert len(refreshed.events) == 1
    assert refreshed.state["ok"] == 2
    assert isinstance(refreshed.state["callback"], str)


def test_after_timestamp_returns_every_event_at_or_after_the_cutoff(persistent):
    """With out-of-order timestamps, every event at or after the cutoff is returned.

    Persistent stores only. GetSessionConfig documents after_timestamp as
    "returns events with timestamp >= the given time", and ADK's persistent
    services (sqlite, database, redis, mongodb, firestore) filter exactly so.
    InMemorySessionService instead returns the events after the last one older
    than the cutoff, which differs only when timestamps are out of append
    order, so it is not held to this case. (SqliteSessionService also sorts by
    timestamp where our store keeps append order, hence the set comparison.)
    """
    session = persistent.create_session(app_name=APP, user_id=USER)
    for event_id, timestamp in [("e1", 10.0), ("e2", 50.0), ("e3", 20.0), ("e4", 60.0)]:
        persistent.append_event(session, Event(id=event_id, author="user", timestamp=timestamp))

    got = persistent.get_session(
        app_name=APP, user_id=USER, session_id=session.id, config=GetSessionConfig(after_timestamp=40.0)
    )
    assert {e.id for e in got.events} == {"e2", "e4"}


def test_events_keep_append_order_even_when_timestamps_do_not(django_svc):
    """Our store replays events in append order, as InMemorySessionService does.

    Django only: SqliteSessionService sorts by timestamp instead.
    """
    session = django_svc.create_session(app_name=APP, user_id=USER)
    for event_id, timestamp in [("e1", 10.0), ("e2", 50.0), ("e3", 20.0)]:
        django_svc.append_event(session, Event(id=event_id, author="user", timestamp=timestamp))

    got = django_svc.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert [e.id for e in got.events] == ["e1", "e2", "e3"]


def test_concurrent_stale_writers_exactly_one_wins(django_svc):
    """Two copies appended concurrently, eight rounds: each round one wins, one is stale.

    Django only: upstream runs this against DatabaseSessionService (needs
    SQLAlchemy, not installed here); SqliteSessionService checks timestamps
    outside its write transaction, so both of its writers can win.
    """
    service = django_svc.service

    async def one_round(latest, i):
        stale_1 = latest.model_copy(deep=True)
        stale_2 = latest.model_copy(deep=True)
        base = latest.last_update_time + 10.0
        return await asyncio.gather(
            service.append_event(
                stale_1, _event(invocation_id=f"inv{i}-1", timestamp=base + 1, actions=_delta(**{f"sk{i}-1": 1}))
            ),
            service.append_event(
                stale_2, _event(invocation_id=f"inv{i}-2", timestamp=base + 2, actions=_delta(**{f"sk{i}-2": 2}))
            ),
            return_exceptions=True,
        )

    session = django_svc.create_session(app_name=APP, user_id=USER)
    for i in range(8):
        latest = django_svc.get_session(app_name=APP, user_id=USER, session_id=session.id)
        results = async_to_sync(one_round)(latest, i)
        errors = [r for r in results if isinstance(r, Exception)]
        assert len(errors) == 1, results
        assert isinstance(errors[0], StaleSessionError)

    final = django_svc.get_session(app_name=APP, user_id=USER, session_id=session.id)
    assert len(final.events) == 8
    for i in range(8):
        assert (f"sk{i}-1" in final.state) != (f"sk{i}-2" in final.state)


def test_current_session_tolerates_timestamp_drift(django_svc):
    """A session that is current appends even if its float last_update_time drifted.

    Django only: upstream runs this against DatabaseSessionService, whose
    revision marker we mirror; SqliteSessionService compares timestamps and
    would call this copy stale.
    """
    session = django_svc.create_session(app_name=APP, user_id=USER, session_id="s1")
    event1 = _event(invocation_id="inv1", timestamp=session.last_update_time + 10)
    django_svc.append_event(session, event1)

    session.last_update_time -= 0.0001
    django_svc.append_event(session, _event(invocation_id="inv2", timestamp=event1.timestamp + 10))

    got = django_svc.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert [e.invocation_id for e in got.events] == ["inv1", "inv2"]


def test_markerless_current_session_can_append(django_svc):
    """A current session without a storage marker (built elsewhere) is not called stale.

    Django only, for the same reason as the timestamp-drift case.
    """
    session = django_svc.create_session(app_name=APP, user_id=USER, session_id="s1")
    event1 = _event(invocation_id="inv1", timestamp=session.last_update_time + 10)
    django_svc.append_event(session, event1)

    session._storage_update_marker = None
    session.last_update_time -= 0.0001
    django_svc.append_event(session, _event(invocation_id="inv2", timestamp=event1.timestamp + 10))

    got = django_svc.get_session(app_name=APP, user_id=USER, session_id="s1")
    assert [e.invocation_id for e in got.events] == ["inv1", "inv2"]


def test_markerless_stale_session_is_rejected(django_svc):
    """A session without a marker whose last event is not the stored last event is stale.

    Django only: the marker-less fallback mirrors DatabaseSessionService.
    """
    session = django_svc.create_session(app_name=APP, user_id=USER, session_id="s1")
    stale = session.model_copy(deep=True)
    stale._storage_update_marker = None
    django_svc.append_event(session, _event(invocation_id="winner", timestamp=session.last_update_time + 10))

    with pytest.raises(StaleSessionError):
        django_svc.append_event(stale, _event(invocation_id="stale", timestamp=session.last_update_time + 20))
    assert SessionEvent.objects.filter(agent_session__session_id="s1").count() == 1


def test_create_session_losing_an_id_race_raises_already_exists(django_svc, monkeypatch):
    """A writer that creates the same id between our check and our insert yields AlreadyExistsError.

    Django only: the race needs a database whose existence check takes no
    lock (PostgreSQL); it is simulated by inserting the competing row just
    before our insert. ADK's database services map the same race to
    AlreadyExistsError; the in-memory service cannot race.
    """
    from sessions_app.storage import scoped_state, sessions

    apply_scoped_deltas = scoped_state.apply_scoped_deltas

    def competing_writer_wins(app_name, user_id, deltas):
        apply_scoped_deltas(app_name, user_id, deltas)
        now = sessions.to_datetime(time.time())
        AgentSession.objects.create(
            app_name=app_name, owner_id=user_id, session_id="raced", created_at=now, last_activity_at=now
        )

    monkeypatch.setattr(scoped_state, "apply_scoped_deltas", competing_writer_wins)
    with pytest.raises(AlreadyExistsError):
        django_svc.create_session(app_name=APP, user_id=USER, session_id="raced", state={"user:u": 1})
    monkeypatch.undo()

    # The losing create wrote nothing of its own (its user: state was rolled back).
    assert django_svc.get_user_state(app_name=APP, user_id=USER) == {}
    assert django_svc.create_session(app_name=APP, user_id=USER, session_id="after").id == "after"


def test_deleting_a_session_removes_its_rows_but_keeps_scoped_state(django_svc):
    """Django only: checks the rows themselves (cascade to events)."""
    session = django_svc.create_session(app_name=APP, user_id=USER, state={"user:u": 1, "app:a": 1})
    django_svc.append_event(session, _event())
    django_svc.append_event(session, _event())

    django_svc.delete_session(app_name=APP, user_id=USER, session_id=session.id)

    assert AgentSession.objects.count() == 0
    assert SessionEvent.objects.count() == 0
    assert django_svc.get_user_state(app_name=APP, user_id=USER) == {"u": 1}
    assert django_svc.create_session(app_name=APP, user_id=USER).state == {"user:u": 1, "app:a": 1}
