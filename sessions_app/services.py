"""What the API does with sessions: create, describe, export and delete them.

Views stay thin and call these; every function takes a session already
checked by `selectors.owned_live_session`, except `create_session` and
`delete_owned_session`. Those that read what the person wrote (state,
events) open it with the token the view put in `crypto.token_context`. The
rows themselves are storage's.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _
from django.views.decorators.debug import sensitive_variables
from google.adk.events.event import Event

from agent import APP_NAME
from agent.events import visible_texts
from agent.plans import initial_state, plan_count, plan_versions
from agent.screening import MODEL_FLAG_KIND
from sessions_app import erasure, retention, selectors
from sessions_app.infra import disk_space
from sessions_app.models import AgentSession, DeletionAudit
from sessions_app.security.crypto import token_context
from sessions_app.security.sealing import IntegrityCheckFailed
from sessions_app.security.tokens import new_token, owner_id_for
from sessions_app.storage import failure_counts, sessions


@dataclass
class NewSession:
    session_id: str
    expires_at: dt.datetime
    token: str  # handed to the client once, never stored


# What each flag's kind means, for the person (the API's `label`, in the request's language).
FLAG_LABELS = {
    "override": _("Asks an AI to ignore or replace its instructions"),
    "role_switch": _("Tries to give an AI a new role"),
    "role_tag": _("Poses as a chat message or a system message"),
    "markup_comment": _("An instruction hidden in a markup comment"),
    "prompt_leak": _("Asks an AI to reveal its hidden instructions"),
    "others_data": _("Asks for other people's data"),
    "tool_call": _("Asks an AI to call a tool or open a link"),
    "output_control": _("Dictates what an AI should reply or save"),
    "addressed": _("An instruction addressed to an AI"),
    "split": _("Part of an instruction split across lines"),
    "disguised": _("An instruction disguised with look-alike letters"),
    "hidden": _("Characters no resume needs: invisible tags, text-direction overrides or private-use characters"),
    "encoded": _("An instruction hidden in encoded text (base64, ROT13, reversed or spaced-out letters)"),
    MODEL_FLAG_KIND: _("The agent found this line tries to instruct it"),
}


def flags(state: dict) -> list[dict]:
    """The session's flags as the person sees them: where each came from (the screen at the
    start, or the model), what kind it is (with its label) and the resume line it points at.
    Flags stored before kinds existed are the model's."""
    resume_lines = [line.strip() for line in str(state.get("resume_text") or "").splitlines()]
    shown = []
    for flag in state.get("suspicious_flags") or []:
        if not isinstance(flag, dict):
            continue
        source = "screen" if flag.get("source") == "screen" else "model"
        kind = str(flag.get("kind") or MODEL_FLAG_KIND)
        kind = kind if kind in FLAG_LABELS else MODEL_FLAG_KIND
        excerpt = str(flag.get("excerpt") or "")
        line = flag.get("line")
        if not isinstance(line, int):
            line = next((i for i, text in enumerate(resume_lines) if excerpt and excerpt.strip() in text), None)
        shown.append(
            {
                "source": source,
                "kind": kind,
                "label": str(FLAG_LABELS[kind]),
                "excerpt": excerpt,
                "reason": str(flag.get("reason") or ""),
                "line": None if line is None else line + 1,
                "flagged_at": flag.get("flagged_at"),
            }
        )
    return shown


@sensitive_variables()
def create_session(resume_text: str) -> NewSession:
    # Before anything is written: under the headroom, nothing of the resume is stored.
    disk_space.ensure_headroom()
    token = new_token()
    # initial_state screens the resume (agent/screening.py): its findings are the session's
    # first flags, sealed with the rest of the state. The new session's state is sealed
    # with a key derived from its new token.
    with token_context(token):
        deltas = {"app": {}, "user": {}, "session": initial_state(resume_text)}
        created = sessions.create(APP_NAME, owner_id_for(token), None, deltas, count_plans=plan_count)
    return NewSession(
        session_id=created.session_id,
        expires_at=retention.expires_at(created.last_activity_at, created.last_activity_at),
        token=token,
    )


def delete_owned_session(session_id: str, owner_id: str) -> str | None:
    """Deletes the owner's session (live or expired) and what only it needed; never refused for
    lack of room (`erasure`). Returns the receipt lookup of its erasure only when a live session
    was deleted: an expired one is erased too, but for the caller it was already gone."""
    selection = AgentSession.objects.owned(APP_NAME, owner_id, session_id)
    erased = erasure.erase_sessions(selection, trigger=DeletionAudit.Trigger.API)
    return erased.receipts[0] if erased.live else None


def integrity_failure_record(failure: IntegrityCheckFailed) -> None:
    """Counts a read refused because the session did not verify, for the operators (one log line
    naming the session's public id and the kind, one row): the API answers it with its 404."""
    failure_counts.record_failure(failure)


def conversation(session: AgentSession) -> list[dict]:
    """The user's and the agent's texts, in order (tool calls and results left out)."""
    return _conversation(selectors.session_content(session).events)


def _conversation(events: list[Event]) -> list[dict]:
    messages = []
    for event in events:
        text = "".join(visible_texts(event))
        if not text:
            continue
        messages.append(
            {
                "role": "user" if event.author == "user" else "agent",
                "text": text,
                "timestamp": dt.datetime.fromtimestamp(event.timestamp, tz=dt.UTC),
            }
        )
    return messages


def expires_at(session: AgentSession) -> dt.datetime:
    """Needs no key: times are stored in clear."""
    return retention.expires_at(session.created_at, session.last_activity_at)


def metadata(session: AgentSession) -> dict:
    content = selectors.session_content(session)
    return _metadata(session, content.state, _conversation(content.events))


def _metadata(session: AgentSession, state: dict, messages: list[dict]) -> dict:
    return {
        "session_id": session.session_id,
        "created_at": session.created_at,
        "last_activity_at": session.last_activity_at,
        "expires_at": expires_at(session),
        "turns": sum(1 for message in messages if message["role"] == "user"),
        # Versions saved so far (the oldest may have been dropped: agent.plans).
        "plan_versions": plan_count(state),
        "flags": flags(state),
        # Who received its content: the providers its turns went to, not today's configuration.
        "model_providers": session.model_provider_ids,
    }


@sensitive_variables()
def export(session: AgentSession) -> dict:
    """Everything stored about the session, for the person to take with them."""
    content = selectors.session_content(session)
    state, events = content.state, content.events
    messages = _conversation(events)
    described = _metadata(session, state, messages)
    del described["flags"]  # the export holds them as suspicious_flags
    return {
        **described,
        "resume_text": state.get("resume_text", ""),
        "conversation": messages,
        "plan_versions": plan_versions(state),
        "suspicious_flags": flags(state),
        "events": [event.model_dump(mode="json", exclude_none=True) for event in events],
    }
