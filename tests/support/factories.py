"""Rows made directly, for tests that need sessions of a given age.

Their content is sealed with `sealing`'s own functions and places, as the
repository seals it, under FACTORY_TOKEN, so the rows look like real ones
(retention and the admin never need the key). Events hold a small JSON
rather than an ADK Event (tests/admin/test_admin.py counts their bytes), so
sessions are made here rather than through `appending.append_events`;
`user:` state goes through `scoped_state`.
"""

import json

from django.utils import timezone

from sessions_app.models import AgentSession, SessionEvent, UserState
from sessions_app.security import sealing
from sessions_app.security.crypto import token_context
from sessions_app.storage import scoped_state

FACTORY_TOKEN = "factory-token-not-a-real-one"


def make_session(
    owner_id="anon-0123456789abcdef",
    *,
    last_activity=None,
    created=None,
    events=2,
    text="plain",
    app_name="resume_agent",
):
    last_activity = last_activity or timezone.now()
    session = AgentSession(
        app_name=app_name, owner_id=owner_id, created_at=created or last_activity, last_activity_at=last_activity
    )
    with token_context(FACTORY_TOKEN):
        sealer = sealing.session_sealer(session.app_name, session.owner_id, session.session_id)
        # As the store leaves it after `events` appends: revision n, events numbered 1..n.
        session.revision = events
        session.state = sealing.seal_state(sealer, {"resume_text": text}, events)
        session.save()
        SessionEvent.objects.bulk_create(
            SessionEvent(
                agent_session=session,
                seq=seq,
                event_id=f"e{seq}",
                timestamp=0.0,
                event_data=sealing.seal_event(
                    sealer, seq, f"e{seq}", 0.0, json.dumps({"text": text}, ensure_ascii=False)
                ),
            )
            for seq in range(1, events + 1)
        )
    return session


def make_user_state(owner_id: str, state: dict, app_name: str = "resume_agent") -> UserState:
    with token_context(FACTORY_TOKEN):
        scoped_state.merge_user_state(app_name, owner_id, state)
    return UserState.objects.get(app_name=app_name, owner_id=owner_id)


def make_purge_schedule(next_run=None, **fields):
    """The purge's django-q2 schedule as migration 0002_purge_schedule makes it (every 15 min), made
    again: transactional tests elsewhere flush that row. `next_run` and `fields` as given."""
    from django_q.models import Schedule

    from sessions_app.retention import PURGE_TASK

    defaults = {"name": "purge expired sessions", "schedule_type": Schedule.MINUTES, "minutes": 15, "repeats": -1}
    if next_run is not None:
        defaults["next_run"] = next_run
    schedule, _ = Schedule.objects.update_or_create(func=PURGE_TASK, defaults={**defaults, **fields})
    return schedule
