"""The API's reads. Every read it makes of a session goes through `owned_live_session`, and its
content (state, events) is opened with the caller's token. The admin's dashboards read through
`selectors_admin`."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.views.decorators.debug import sensitive_variables

from agent import APP_NAME
from agent.events import is_reply, reply_record, visible_texts
from agent.plans import plan_count, plan_versions
from agent.screening import KINDS, MODEL_FLAG_KIND
from sessions_app import retention
from sessions_app.deletion_log import store as deletion_log
from sessions_app.models import AgentSession
from sessions_app.storage import sessions

if TYPE_CHECKING:
    from google.adk.events.event import Event

FLAG_KINDS = {*KINDS, MODEL_FLAG_KIND}
REPLY_FIELDS = ("verification", "tool_calls", "model")  # what a reply shows beside its text


def owned_live_session(session_id: str, owner_id: str) -> AgentSession | None:
    """The session if it exists, belongs to `owner_id` and has not expired: "missing",
    "someone else's", "expired" and "deleted" are the same miss (None), one query."""
    return AgentSession.objects.owned(APP_NAME, owner_id, session_id).live().first()


# --- Content of an owned session: needs its token in `crypto.token_context` ---
# KeyUnavailable without one; `sealing.IntegrityCheckFailed` (a DecryptionFailed)
# for a value that does not open or a history that was rolled back or truncated
# (the API answers both with its uniform 404).
@dataclass(frozen=True)
class SessionContent:
    state: dict
    events: list[Event]


def session_content(session: AgentSession) -> SessionContent:
    """State and events, opened whole: one value that does not open fails every read
    of the session alike, whichever part that read shows. `session` is the row as read;
    `SessionMissing` when it was deleted since."""
    state, events = sessions.open_content(session)
    return SessionContent(state=state, events=events)


def session_plan(session: AgentSession) -> dict:
    """The latest saved plan and the kept versions, oldest first (`agent.plans`).

    A read: no version is saved, nothing is written. Opens the whole content, as
    every API read does, so a session that does not verify fails here too."""
    versions = plan_versions(session_content(session).state)
    return {"session_id": session.session_id, "current": versions[-1] if versions else None, "versions": versions}


# --- What the API shows of an owned session (its token in `crypto.token_context`) ---


def session_flags(state: dict) -> list[dict]:
    """The session's flags as the person sees them: where each came from (the screen at the
    start, or the model), what kind it is (the serializer labels it) and the resume line it
    points at. Flags stored before kinds existed are the model's."""
    resume_lines = [line.strip() for line in str(state.get("resume_text") or "").splitlines()]
    shown = []
    for flag in state.get("suspicious_flags") or []:
        if not isinstance(flag, dict):
            continue
        source = "screen" if flag.get("source") == "screen" else "model"
        kind = str(flag.get("kind") or MODEL_FLAG_KIND)
        kind = kind if kind in FLAG_KINDS else MODEL_FLAG_KIND
        excerpt = str(flag.get("excerpt") or "")
        line = flag.get("line")
        if not isinstance(line, int):
            line = next((i for i, text in enumerate(resume_lines) if excerpt and excerpt.strip() in text), None)
        shown.append(
            {
                "source": source,
                "kind": kind,
                "excerpt": excerpt,
                "reason": str(flag.get("reason") or ""),
                "line": None if line is None else line + 1,
                "flagged_at": flag.get("flagged_at"),
            }
        )
    return shown


def session_conversation(session: AgentSession) -> list[dict]:
    """The user's messages and the agent's replies, in order, each reply with what was shown with it
    live (tool calls and results otherwise left out)."""
    return _conversation(session_content(session).events)


def _conversation(events: list[Event]) -> list[dict]:
    """A user message per user event with text; a reply per turn, as the turn answered it: the text
    of its final responses (joined as `turns.service` joins them), with the claim checks, tool calls
    and model the turn showed (None for a reply stored before they were kept, and for a user's)."""
    messages = []
    for event in events:
        if event.author == "user":
            text = "".join(visible_texts(event))
            if text:
                messages.append(
                    {"role": "user", "text": text, "timestamp": _time(event), **dict.fromkeys(REPLY_FIELDS)}
                )
            continue
        if not is_reply(event):
            continue
        last = messages[-1] if messages else None
        if last is None or last["role"] != "agent" or last["invocation"] != event.invocation_id:
            last = {"role": "agent", "parts": [], "invocation": event.invocation_id, **dict.fromkeys(REPLY_FIELDS)}
            messages.append(last)
        last["parts"] += visible_texts(event)
        last["timestamp"] = _time(event)
        record = reply_record(event)
        if record is not None:
            last.update({field: record.get(field) for field in REPLY_FIELDS})
    for message in messages:
        if message["role"] == "agent":
            message["text"] = "\n".join(message.pop("parts")).strip()
            del message["invocation"]
    return messages


def _time(event: Event) -> dt.datetime:
    return dt.datetime.fromtimestamp(event.timestamp, tz=dt.UTC)


def session_metadata(session: AgentSession) -> dict:
    content = session_content(session)
    return _metadata(session, content.state, _conversation(content.events))


def _metadata(session: AgentSession, state: dict, messages: list[dict]) -> dict:
    return {
        "session_id": session.session_id,
        "created_at": session.created_at,
        "last_activity_at": session.last_activity_at,
        "expires_at": retention.expires_at(session.created_at, session.last_activity_at),
        "turns": sum(1 for message in messages if message["role"] == "user"),
        # Versions saved so far (the oldest may have been dropped: agent.plans).
        "plan_versions": plan_count(state),
        "flags": session_flags(state),
        # Who received its content: the providers its turns went to, not today's configuration.
        "model_providers": session.model_provider_ids,
    }


@sensitive_variables()
def session_export(session: AgentSession) -> dict:
    """Everything stored about the session, for the person to take with them."""
    content = session_content(session)
    state, events = content.state, content.events
    messages = _conversation(events)
    described = _metadata(session, state, messages)
    del described["flags"]  # the export holds them as suspicious_flags
    return {
        **described,
        "resume_text": state.get("resume_text", ""),
        "conversation": messages,
        "plan_versions": plan_versions(state),
        "suspicious_flags": session_flags(state),
        "events": [event.model_dump(mode="json", exclude_none=True) for event in events],
    }


# --- The deletion log: public, it holds nothing private (deletion_log/store.py) ---


def deletion_consistency_proof(old_size: int, size: int | None = None) -> str | None:
    """The proof that the log at `size` (the latest if None) extends the log at `old_size`."""
    if size is None:
        size = deletion_log.status().size
    return deletion_log.consistency_proof(old_size, size)
