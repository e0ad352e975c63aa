"""The alert rules (config/prometheus/alerts.yml) and the Grafana dashboard
(config/grafana/resume-agent.json): promtool checks the rules and runs their unit tests on
synthetic series (config/prometheus/alerts_test.yml), each alert has a case where it fires and one
where it does not, and every metric the rules and the dashboard name is one the service exports."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from sessions_app.api.scrape import StateCollector
from sessions_app.infra import metrics
from tests.support.servers import ROOT
from tests.support.system_tools import debian_program

RULES = ROOT / "config" / "prometheus" / "alerts.yml"
RULE_TESTS = ROOT / "config" / "prometheus" / "alerts_test.yml"
DASHBOARD = ROOT / "config" / "grafana" / "resume-agent.json"
METRIC = re.compile(rf"\b{metrics.PREFIX}_[a-z0-9_]+")
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}


def promtool():
    return debian_program("promtool", "/usr/bin/promtool", "prometheus")


def alerts() -> list[dict]:
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]


def dashboard_exprs() -> list[str]:
    def panels(container):
        for panel in container.get("panels", []):
            yield panel
            yield from panels(panel)

    dashboard = json.loads(DASHBOARD.read_text())
    variables = dashboard["templating"]["list"]
    queries = [variable["query"]["query"] for variable in variables if variable["type"] == "query"]
    return [target["expr"] for panel in panels(dashboard) for target in panel.get("targets", [])] + queries


def exported_names() -> set[str]:
    """Every sample name the service's /metrics may give: its families' (a gauge read at scrape that
    is absent here, e.g. before the first checkpoint, still has its family)."""
    names = set()
    for family in text_string_to_metric_families(metrics.exposition("", StateCollector())[0].decode()):
        names.add(family.name)
        names.update(family.name + suffix for suffix in SUFFIXES.get(family.type, ()))
        names.update(sample.name for sample in family.samples)
    return names


@pytest.mark.backend_independent
def test_promtool_finds_the_rules_sound():
    checked = subprocess.run([promtool(), "check", "rules", RULES], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in checked.stdout


@pytest.mark.backend_independent
def test_the_rules_unit_tests_pass_in_promtool():
    tested = subprocess.run(
        [promtool(), "test", "rules", RULE_TESTS.name],
        cwd=RULE_TESTS.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


@pytest.mark.backend_independent
def test_each_alert_is_tested_firing_and_not_firing():
    cases = [case for test in yaml.safe_load(RULE_TESTS.read_text())["tests"] for case in test["alert_rule_test"]]
    names = [rule["alert"] for rule in alerts()]
    assert set(names) == {
        "ResumeAgentNotReady",
        "ResumeAgentDiskHeadroomLow",
        "ResumeAgentPurgeStalled",
        "ResumeAgentModelFailing",
        "ResumeAgentTurnsNearBound",
        "ResumeAgentBusy503",
        "ResumeAgentIntegrityFailure",
        "ResumeAgentDeletionLogCheckpointStale",
    }
    for name in names:
        assert any(case["alertname"] == name and case["exp_alerts"] for case in cases), f"{name} never fires"
        assert any(case["alertname"] == name and not case["exp_alerts"] for case in cases), f"{name} always fires"


@pytest.mark.backend_independent
def test_every_alert_says_what_in_both_languages():
    for rule in alerts():
        assert {"summary", "summary_zh_TW", "description", "description_zh_TW"} <= set(rule["annotations"]), rule
        assert rule["labels"]["severity"] in {"page", "warning"}


@pytest.mark.django_db
def test_the_rules_and_the_dashboard_name_only_metrics_the_service_exports():
    exported = exported_names()
    exprs = [rule["expr"] for rule in alerts()] + dashboard_exprs()
    named = {name for expr in exprs for name in METRIC.findall(expr)}
    assert named - exported == set()
    # What the rules lean on, whether the dashboard shows it or not.
    assert {
        "resume_agent_readiness_check",
        "resume_agent_purge_interval_seconds",
        "resume_agent_deletion_log_checkpoint_age_seconds",
    } <= named


@pytest.mark.backend_independent
def test_the_dashboard_covers_turns_latency_failures_purge_disk_and_the_log():
    exprs = " ".join(dashboard_exprs())
    for metric in (
        "resume_agent_turns_total",
        "resume_agent_turn_duration_seconds_bucket",
        "resume_agent_turn_model_seconds_bucket",
        "resume_agent_turn_first_progress_seconds_bucket",
        "resume_agent_busy_answers_total",
        "resume_agent_purge_runs_total",
        "resume_agent_purge_last_success_timestamp_seconds",
        "resume_agent_storage_free_bytes",
        "resume_agent_storage_headroom_bytes",
        "resume_agent_deletion_log_entries",
        "resume_agent_deletion_log_checkpoint_age_seconds",
    ):
        assert metric in exprs, metric
