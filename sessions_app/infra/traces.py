"""What ADK's OpenTelemetry spans may hold: that a turn happened, never what was said, nor whose.

google-adk 2.13.0 records, in each turn's spans, the whole model request (the system
instruction holds the resume) and response, the tool calls' arguments and results, unless told
not to: its own switch, `ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS`, defaults on. The OpenTelemetry
one, `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`, defaults off but is the operator's to
set. So the process sets both at start-up (`keep_content_out_of_traces`, from the app's ready(),
whatever the environment said), and every run is given `run_telemetry()`, which says no content
to spans and logs whatever the environment says (ADK: a run's `TelemetryConfig` comes before the
environment, unless `ADK_TELEMETRY_IGNORE_RUN_CONFIG` is set, and then the environment set here
still says no).

Whatever the switches, ADK writes the session's id on its spans (`gen_ai.conversation.id`, and
`gcp.vertex.agent.session_id` in its older schema). A turn's Runner sees its session under
`traced_session_id` instead: the same name for every turn of a session, which nobody without the
service's secret key can tie to the session's id (docs/OBSERVABILITY.md, "Traces").

The service configures no exporter (no TracerProvider, no LoggerProvider): the spans go nowhere
unless an operator installs one (tests/infra/test_traces.py). While no TracerProvider is installed,
runs ask ADK for its stable GenAI conventions: its default (experimental) ones build every model
call's request as span attributes (the instruction, each message, each tool's declaration) for a
no-op span to drop (benchmarks/results/profile.md); the stable ones elide the content instead.
With a provider installed, ADK's default as before.
"""

from __future__ import annotations

import os

from django.utils.crypto import salted_hmac
from google.adk.telemetry import ContentCapturingMode, TelemetryConfig
from opentelemetry import trace

# Set at start-up, over whatever the environment held (docs/OPERATIONS.md, "Configuration").
CONTENT_OFF_ENVIRONMENT = {
    "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "false",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "NO_CONTENT",
    "ADK_CAPTURE_MCP_HTTP_BODIES": "false",
}

_SESSION_ID_SALT = "sessions_app.infra.traces.session_id"

_run_telemetry: TelemetryConfig | None = None
_untraced_run_telemetry: TelemetryConfig | None = None
# What the OpenTelemetry API serves until a provider is installed (or with OTEL_SDK_DISABLED).
_NO_PROVIDER = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)


def keep_content_out_of_traces() -> None:
    """Content capture off for this process (its app's ready()), then the runs' TelemetryConfig
    made once, after (a TelemetryConfig reads the environment when it is made)."""
    global _run_telemetry, _untraced_run_telemetry
    os.environ.update(CONTENT_OFF_ENVIRONMENT)
    _run_telemetry = TelemetryConfig(capture_message_content=ContentCapturingMode.NO_CONTENT)
    _untraced_run_telemetry = _run_telemetry.model_copy(update={"genai_semconv_stability_opt_in": "stable"})


def run_telemetry() -> TelemetryConfig:
    """Every turn's `RunConfig.telemetry`: no content on spans or on ADK's log records; with no
    TracerProvider installed, ADK's stable conventions too (the module's docstring)."""
    if _run_telemetry is None:
        keep_content_out_of_traces()
    return _untraced_run_telemetry if isinstance(trace.get_tracer_provider(), _NO_PROVIDER) else _run_telemetry


def traced_session_id(session_id: str) -> str:
    """The name a turn's Runner knows its session by, so its spans carry this, not the id:
    an HMAC of the id under a key derived from SECRET_KEY."""
    return "s-" + salted_hmac(_SESSION_ID_SALT, session_id, algorithm="sha256").hexdigest()[:32]
