"""GET /metrics: the service's Prometheus metrics (sessions_app/infra/metrics.py), for the operators'
scraper only.

Never open by default: without METRICS_TOKEN, and to any request whose `Authorization` is not
`Bearer <METRICS_TOKEN>`, it answers the one 404 every unknown path gets, byte for byte, so a
stranger cannot tell that it exists. A plain Django view: no rate limit counts it (the scraper asks
every few seconds), and it is not in the OpenAPI schema, which describes the person-facing API. Its
answers get no access line (sessions_app/infra/access_log.py).

The values the processes count, then those read at this scrape and only then (`StateCollector`):
a request of the API makes no query for the metrics. Among them the readiness checks of `/readyz`
(sessions_app.selectors_health), one series per check and state, which config/prometheus/alerts.yml
alerts on; with the database down the scrape still answers, its checks failing, without the gauges
that read it.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpResponse
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from sessions_app import selectors_admin, selectors_health
from sessions_app.api.errors import forbid_storing, not_found_response
from sessions_app.choices import CheckStatus, ReadinessCheck
from sessions_app.infra import metrics

BEARER = "Bearer "


def _authorised(request) -> bool:
    token = settings.METRICS_TOKEN
    given = request.headers.get("Authorization", "")
    if not token or not given.startswith(BEARER):
        return False
    return hmac.compare_digest(given[len(BEARER) :].encode(), token.encode())


def _gauge(name: str, documentation: str, value: float | None) -> GaugeMetricFamily:
    family = GaugeMetricFamily(f"{metrics.PREFIX}_{name}", documentation)
    if value is not None:
        family.add_metric([], value)
    return family


def readiness_family(checks: dict[ReadinessCheck, CheckStatus]) -> GaugeMetricFamily:
    """One series per check and state (1 for the check's state now, 0 for the others), as /readyz
    answers them."""
    family = GaugeMetricFamily(
        f"{metrics.PREFIX}_readiness_check",
        "The readiness checks of /readyz: 1 for each check's state now (ok, failing, not_configured), 0 for the"
        " others.",
        labels=["check", "state"],
    )
    for check, status in checks.items():
        for state in CheckStatus:
            family.add_metric([check.value, state.value], 1 if state == status else 0)
    return family


class StateCollector:
    """The gauges read when a scrape is made: the readiness checks (three queries, a cache round trip
    where there is a cache server, a statfs), then the purge's schedule (one query), the expired
    sessions and the log's latest checkpoint (two), the volume's space and the reserve's size."""

    def collect(self):
        readiness = selectors_health.readiness()
        yield readiness_family(readiness.checks)
        yield _gauge(
            "turns_in_flight_limit",
            "Turns one process may run at once (AGENT_MAX_TURNS_IN_FLIGHT).",
            settings.AGENT_MAX_TURNS_IN_FLIGHT,
        )
        if readiness.checks[ReadinessCheck.DATABASE] == CheckStatus.FAILING:
            return  # what follows reads the database: the scrape answers without it
        schedule = selectors_health.purge_schedule()
        yield _gauge(
            "purge_interval_seconds",
            "How often the scheduled purge runs (its schedule; absent when there is none).",
            None if schedule is None else selectors_health.schedule_interval(schedule).total_seconds(),
        )
        state = selectors_admin.observed_state()
        space = state.space
        yield _gauge(
            "sessions_expired_stored", "Sessions past their TTL or maximum age not yet purged.", state.expired_stored
        )
        yield _gauge(
            "storage_free_bytes",
            "Free space on the database's volume (absent where it cannot be measured: PostgreSQL without"
            " STORAGE_VOLUME_PATH).",
            space.free_bytes,
        )
        yield _gauge(
            "storage_headroom_bytes",
            "Below this much free space new content is refused (507): STORAGE_HEADROOM_BYTES.",
            space.headroom_bytes,
        )
        yield _gauge("erasure_reserve_bytes", "The erasure reserve's size now.", space.reserve_bytes)
        yield _gauge("erasure_reserve_wanted_bytes", "The erasure reserve's size when whole.", space.reserve_wanted)
        yield _gauge(
            "deletion_log_entries", "Entries in the deletion log (its latest checkpoint's size).", state.log_size
        )
        signed = state.checkpoint_signed_at
        yield _gauge(
            "deletion_log_checkpoint_age_seconds",
            "Seconds since the deletion log's latest checkpoint was signed (absent before the first).",
            None if signed is None else (timezone.now() - signed).total_seconds(),
        )


def metrics_view(request):
    # Any other method, like any other header, is the unknown path's 404 (a 405 would say it is here).
    if request.method not in ("GET", "HEAD") or not _authorised(request):
        return not_found_response(request)
    body, content_type = metrics.exposition(request.headers.get("Accept", ""), StateCollector())
    return forbid_storing(HttpResponse(body, content_type=content_type))
