"""Traces stay empty of content (issue 42, point 6): one whole turn through the API, on ADK's
Gemini class talking HTTP to the local double (tests/support/gemini_double.py), with OpenTelemetry's SDK
keeping every span and log record in memory (tests/support/otel_capture.py). No span's name, status,
attribute, event or link, and no log record ADK emits as a GenAI event, holds a line of the
resume, the message, the token, the owner id derived from it or the session's id, in UTF-8,
JSON-escaped or hex (tests/support/privacy.py), in either of ADK's telemetry schemas.

Off by configuration (sessions_app/infra/traces.py): the switches set at start-up, the run's
TelemetryConfig, and the name the Runner knows the session by. The controls put each back as it
was and see the same scan find what it looks for, so the scan can fail.
"""

import os

import pytest
from django.conf import settings
from google.adk.plugins import BasePlugin
from google.adk.runners import Runner
from google.adk.telemetry import ContentCapturingMode, TelemetryConfig

from sessions_app.infra import traces
from sessions_app.security.tokens import owner_id_for
from sessions_app.turns.runner import process_runner
from tests.config.test_settings import settings_process
from tests.support.gemini_double import call_answer, text_answer
from tests.support.privacy import find_in_text, fixture_markers
from tests.support.session_client import answer_to, create_session, say

pytestmark = pytest.mark.django_db

MESSAGE = "請幫我看看求職方向 訊息標記-Quillowen"
PLAN = "1. Apply to platform teams. 計畫標記-Marrowind"
REPLY = "Hi 林語晴. At 翠鳥雲端股份有限公司 Kingfisher Cloud you led the billing migration."
SCHEMAS = {"semconv schema (2, ADK's default)": "2", "legacy schema (1)": "1"}


def _one_turn(api, gemini_double) -> dict[str, list[str]]:
    """A session created, then one turn: the model checks a claim, saves a plan, and answers
    quoting the resume. Returns what the traces must not hold, by kind."""
    session_id, token = create_session(api)
    gemini_double.answer(
        call_answer("verify_claims", {"claims": ["Worked at 翠鳥雲端股份有限公司 Kingfisher Cloud"]}),
        call_answer("save_plan", {"plan": PLAN}),
        text_answer(REPLY),
    )
    answer_to(api, session_id, token, MESSAGE)
    # What went to the model did hold them: the turn carried content the spans could have kept.
    assert find_in_text(str(gemini_double.requests), [*fixture_markers(), MESSAGE]) != []
    return {
        "resume": fixture_markers(),
        "message and plan": [MESSAGE, PLAN.split()[-1]],
        "token": [token, owner_id_for(token)],
        "session id": [session_id],
    }


def _found(telemetry, secrets: dict[str, list[str]]) -> dict[str, list]:
    text = telemetry.text()
    return {kind: hits for kind, markers in secrets.items() if (hits := find_in_text(text, markers))}


@pytest.fixture(params=list(SCHEMAS.values()), ids=list(SCHEMAS))
def schema(request, monkeypatch):
    """ADK's telemetry schema an operator may pin (ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN); the
    runs' TelemetryConfig is made anew under it (it reads the environment when made), and the
    process's own is back after the test."""
    monkeypatch.setenv("ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN", request.param)
    monkeypatch.setattr(traces, "_run_telemetry", None)
    return request.param


@pytest.mark.usefixtures("runner_on_gemini_double")
def test_one_turn_leaves_no_content_in_spans_or_events(api, gemini_double, telemetry, schema):
    secrets = _one_turn(api, gemini_double)
    spans = telemetry.spans()
    names = {span.name for span in spans}
    # The turn was traced: the agent, each model call, each tool, with their timings and counts.
    assert {"invoke_agent resume_agent", "execute_tool verify_claims", "execute_tool save_plan"} <= names
    assert sum(name.startswith(("generate_content", "call_llm")) for name in names) >= 1
    assert _found(telemetry, secrets) == {}
    # ADK's id of the conversation is there, as the name the Runner knew the session by.
    conversation_ids = {
        span.attributes.get(key)
        for span in spans
        for key in ("gen_ai.conversation.id", "gcp.vertex.agent.session_id")
        if span.attributes.get(key) is not None
    }
    assert conversation_ids == {traces.traced_session_id(secrets["session id"][0])}


def test_content_capture_is_off_by_configuration():
    """After start-up (the app's ready()), whatever the environment said: ADK's own switch and
    OpenTelemetry's say no content, and so does every run's TelemetryConfig."""
    for name, value in traces.CONTENT_OFF_ENVIRONMENT.items():
        assert os.environ[name] == value
    for config in (TelemetryConfig(), traces.run_telemetry()):
        assert config.resolved_content_capturing_mode is ContentCapturingMode.NO_CONTENT
        assert not config.should_add_content_to_legacy_spans
        assert not config.should_add_content_to_experimental_spans
        assert not config.should_add_content_to_logs


def test_start_up_turns_capture_off_over_the_environment(monkeypatch):
    monkeypatch.setenv("ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS", "true")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_AND_EVENT")
    monkeypatch.setenv("ADK_CAPTURE_MCP_HTTP_BODIES", "true")
    monkeypatch.setattr(traces, "_run_telemetry", None)
    assert TelemetryConfig().should_add_content_to_legacy_spans  # ADK would capture
    traces.keep_content_out_of_traces()
    assert not TelemetryConfig().should_add_content_to_legacy_spans
    assert traces.run_telemetry().resolved_content_capturing_mode is ContentCapturingMode.NO_CONTENT


def test_the_run_config_holds_even_where_an_operator_locks_adk_to_the_environment(monkeypatch):
    """ADK_TELEMETRY_IGNORE_RUN_CONFIG makes ADK read the environment instead of the run's config:
    the environment set at start-up says no content too."""
    monkeypatch.setenv("ADK_TELEMETRY_IGNORE_RUN_CONFIG", "true")
    monkeypatch.setattr(traces, "_run_telemetry", None)
    config = traces.run_telemetry()
    assert not config.should_add_content_to_legacy_spans
    assert not config.should_add_content_to_experimental_spans
    assert not config.should_add_content_to_logs


@pytest.mark.parametrize("installed", [False, True], ids=["no provider", "a provider"])
def test_runs_ask_for_adks_stable_conventions_only_while_no_tracer_provider_is_installed(monkeypatch, installed):
    """With nothing to record, ADK's default (experimental) conventions would build each model call's
    request as attributes for a no-op span; its stable ones elide the content. Once an operator
    installs a provider, ADK's default again. Content off either way."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    monkeypatch.delenv("ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN", raising=False)
    monkeypatch.setattr(traces, "_run_telemetry", None)
    provider = TracerProvider() if installed else trace.ProxyTracerProvider()
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    config = traces.run_telemetry()
    assert config.should_use_experimental_genai_semconv is installed
    assert config.resolved_content_capturing_mode is ContentCapturingMode.NO_CONTENT
    assert not config.should_add_content_to_legacy_spans and not config.should_add_content_to_logs


class _RunsSeen(BasePlugin):
    """What each run was given, as ADK's plugins see it (their first callback)."""

    def __init__(self):
        super().__init__(name="runs_seen")
        self.seen = []

    async def before_run_callback(self, *, invocation_context):
        self.seen.append((invocation_context.run_config.telemetry, invocation_context.session.id))


@pytest.mark.usefixtures("runner_on_gemini_double")
def test_each_run_is_told_no_content_and_knows_its_session_by_another_name(api, settings, new_session):
    """Both, as the Runner is given them: the run's own config, not only the environment behind it."""
    runs = _RunsSeen()
    base = process_runner()  # runner_on_gemini_double's
    app = base.app.model_copy(update={"plugins": [*base.app.plugins, runs]})
    runner = Runner(app=app, app_name=base.app_name, session_service=base.session_service)
    settings.AGENT_RUNNER_FACTORY = lambda: runner
    session_id, token = new_session()
    assert say(api, session_id, token, MESSAGE).status_code == 200
    [(config, traced_id)] = runs.seen
    assert config.capture_message_content is ContentCapturingMode.NO_CONTENT
    assert traced_id == traces.traced_session_id(session_id) != session_id


def _capture_back_on(monkeypatch, mode: ContentCapturingMode) -> None:
    """The configuration as ADK has it by default (its switch on) and as an operator may set it."""
    monkeypatch.setenv("ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS", "true")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", mode.value)
    monkeypatch.setattr(traces, "run_telemetry", lambda: TelemetryConfig(capture_message_content=mode))


@pytest.mark.parametrize("mode", [ContentCapturingMode.SPAN_ONLY, ContentCapturingMode.EVENT_ONLY])
@pytest.mark.usefixtures("runner_on_gemini_double")
def test_control_with_content_capture_back_on_the_scan_finds_the_resume(
    api, gemini_double, telemetry, monkeypatch, mode
):
    """Control: the same turn with capture on (on spans, or on ADK's GenAI events) puts the
    resume and the message where the scan looks."""
    _capture_back_on(monkeypatch, mode)
    found = _found(telemetry, _one_turn(api, gemini_double))
    assert "resume" in found and "message and plan" in found


@pytest.mark.usefixtures("runner_on_gemini_double")
def test_control_with_the_runner_on_the_sessions_id_the_scan_finds_it(api, gemini_double, telemetry, monkeypatch):
    """Control: ADK writes the session's id on its spans whatever the switches say, so the Runner
    must not know the session by it."""
    monkeypatch.setattr(traces, "traced_session_id", lambda session_id: session_id)
    assert list(_found(telemetry, _one_turn(api, gemini_double))) == ["session id"]


def test_the_traced_name_is_stable_per_session_and_keyed():
    first = traces.traced_session_id("65287eab-95d0-4c6b-9dd1-1e65f921fdf4")
    assert first == traces.traced_session_id("65287eab-95d0-4c6b-9dd1-1e65f921fdf4")
    assert first != traces.traced_session_id("65287eab-95d0-4c6b-9dd1-1e65f921fdf5")
    assert first.startswith("s-") and len(first) == 34
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(settings, "SECRET_KEY", "another-" + settings.SECRET_KEY)
        assert traces.traced_session_id("65287eab-95d0-4c6b-9dd1-1e65f921fdf4") != first


EXPORTS_NOTHING = """
import django
django.setup()
from opentelemetry import _logs, metrics, trace
from sessions_app.turns.runner import process_runner
process_runner()
print(type(trace.get_tracer_provider()).__name__, type(_logs.get_logger_provider()).__name__,
      type(metrics.get_meter_provider()).__name__)
"""


def test_the_service_installs_no_exporter(tmp_path, monkeypatch):
    """A started process (settings, apps, the Runner) sets no OpenTelemetry provider: ADK's
    spans, log records and metrics go nowhere, on no network, unless an operator installs one."""
    for name in [name for name in os.environ if name.startswith("OTEL_")]:
        monkeypatch.delenv(name)
    done = settings_process(EXPORTS_NOTHING, tmp_path, DJANGO_DEBUG="1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ProxyTracerProvider", "ProxyLoggerProvider", "_ProxyMeterProvider"]
