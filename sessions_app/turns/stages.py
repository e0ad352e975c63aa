"""What a running turn reports it is doing: the one list the turn (turns/plugins.py,
turns/service.py), the stream's labels (api/event_stream.py) and the schema (api/schema.py) share."""

from enum import StrEnum


class Stage(StrEnum):
    READING = "reading"  # the resume and the conversation, before the model
    THINKING = "thinking"  # each model call, with its number (`model_call`)
    CHECKING_CLAIMS = "checking_claims"  # with the claims' `count`
    SAVING_PLAN = "saving_plan"  # with the plan's `version`
    CHECKING_REPLY = "checking_reply"  # the reply checked against the resume
    SAVING = "saving"  # the turn stored
