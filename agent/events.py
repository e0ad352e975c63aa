"""What a person sees of an ADK event: its text and its tool calls.

The API's conversation, a turn's reply and the injection eval all read events
through these, so "visible text" means one thing everywhere.
"""

from __future__ import annotations

from google.adk.events.event import Event


def visible_texts(event: Event) -> list[str]:
    """The event's text parts, without the model's thoughts."""
    if event.content is None:
        return []
    return [part.text for part in event.content.parts or [] if part.text and not part.thought]


def tool_calls(event: Event) -> list[dict]:
    """The function calls the event asks for, as {"name", "args"}."""
    return [{"name": call.name, "args": dict(call.args or {})} for call in event.get_function_calls()]


def tool_call_outcomes(events: list[Event], tool_names: set[str]) -> list[dict]:
    """Every function call of `events`, as {"name", "args", "outcome"}: "ran" (the tool ran and
    answered), "failed" (it answered with an error, or no answer came back), or "unknown" (no tool
    of that name: ADK told the model so, and nothing ran)."""
    answers = {response.id: response.response or {} for event in events for response in event.get_function_responses()}
    outcomes = []
    for event in events:
        for call in event.get_function_calls():
            answer = answers.get(call.id)
            if call.name not in tool_names:
                outcome = "unknown"
            elif answer is None or "error" in answer:
                outcome = "failed"
            else:
                outcome = "ran"
            outcomes.append({"name": call.name, "args": dict(call.args or {}), "outcome": outcome})
    return outcomes


# What a turn showed with its reply (claim checks, tool calls, model), kept in the reply event's
# `custom_metadata` under this key: stored, sealed and erased with the event itself, so the
# conversation read back shows each reply as it was shown live.
REPLY_RECORD = "resume_agent_reply"


def reply_event(events: list[Event]) -> Event | None:
    """The last event of a turn's `events` that carries the reply's text (a final response)."""
    return next((event for event in reversed(events) if event.author != "user" and is_reply(event)), None)


def is_reply(event: Event) -> bool:
    """Whether `event` is a final response of the agent with text: a reply, or part of one."""
    return not event.partial and event.is_final_response() and bool("".join(visible_texts(event)).strip())


def reply_record(event: Event) -> dict | None:
    """What the turn showed with the reply `event` carries (None: stored before it was kept)."""
    record = (event.custom_metadata or {}).get(REPLY_RECORD)
    return record if isinstance(record, dict) else None
