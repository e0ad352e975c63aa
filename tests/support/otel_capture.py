"""OpenTelemetry's SDK in memory, for the tests that read what ADK traces (tests/test_traces.py,
tests/test_leaks.py): its spans, and the log records it emits as GenAI events.

The service installs no provider, so ADK's tracer and logger are the API's proxies, which do
nothing until a provider is set. A test process sets the SDK's providers once (the API allows
one each), and each test adds its own exporters, shut down when it ends: a later test's turns
are not kept in memory by an earlier test's exporter.
"""

from __future__ import annotations

from collections.abc import Iterable

from opentelemetry import _logs, trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def _tracer_provider() -> TracerProvider:
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(TracerProvider())
    return trace.get_tracer_provider()


def _logger_provider() -> LoggerProvider:
    if not isinstance(_logs.get_logger_provider(), LoggerProvider):
        _logs.set_logger_provider(LoggerProvider())
    return _logs.get_logger_provider()


class Telemetry:
    """What ADK emitted while this capture was open: `spans()`, `log_records()`, and `text()`,
    all of it as text for `tests.privacy.find_in_text`."""

    def __init__(self):
        self.span_exporter = InMemorySpanExporter()
        self.log_exporter = InMemoryLogRecordExporter()
        _tracer_provider().add_span_processor(SimpleSpanProcessor(self.span_exporter))
        _logger_provider().add_log_record_processor(SimpleLogRecordProcessor(self.log_exporter))

    def spans(self) -> tuple[ReadableSpan, ...]:
        return self.span_exporter.get_finished_spans()

    def log_records(self) -> tuple:
        return self.log_exporter.get_finished_logs()

    def clear(self) -> None:
        self.span_exporter.clear()
        self.log_exporter.clear()

    def close(self) -> None:
        self.clear()
        self.span_exporter.shutdown()  # exports nothing more
        self.log_exporter.shutdown()

    def text(self) -> str:
        """Every span's name, status, attributes (names and values as stored), events and links,
        and every log record's event name, body and attributes; then all of it again as the SDK's
        JSON (non-ASCII escaped), so a scan sees each form a value is exported in."""
        lines = []
        for span in self.spans():
            lines += [span.name, span.status.description or ""]
            lines += _attribute_lines(span.attributes)
            for event in span.events:
                lines += [event.name, *_attribute_lines(event.attributes)]
            for link in span.links:
                lines += [repr(link.context), *_attribute_lines(link.attributes)]
            lines.append(span.to_json())
        for readable in self.log_records():
            record = readable.log_record
            lines += [record.event_name or "", str(record.body), *_attribute_lines(record.attributes)]
            lines.append(readable.to_json())
        return "\n".join(lines)


def _attribute_lines(attributes) -> list[str]:
    lines = []
    for key, value in (attributes or {}).items():
        values = value if isinstance(value, Iterable) and not isinstance(value, (str, bytes)) else [value]
        lines += [str(key), *(str(item) for item in values)]
    return lines
