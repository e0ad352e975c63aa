"""Rows made directly, for tests that need sessions of a given age."""

from django.utils import timezone

from sessions_app.models import AgentSession, SessionEvent


def make_session(user_id="anon-0123456789abcdef", *, last_activity=None, created=None, events=2, text="plain"):
    last_activity = last_activity or timezone.now()
    session = AgentSession.objects.create(
        app_name="resume_agent",
        user_id=user_id,
        state={"resume_text": text},
        created_at=created or last_activity,
        updated_at=last_activity,
    )
    SessionEvent.objects.bulk_create(
        SessionEvent(session=session, event_id=f"e{i}", timestamp=0.0, event_data=f'{{"text": "{text}"}}')
        for i in range(events)
    )
    return session
