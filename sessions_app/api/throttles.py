"""The API's rate limits: fixed windows counted atomically, one rule per class (DRF style).

DRF's SimpleRateThrottle reads a client's request history from the cache,
checks it, and writes it back: concurrent requests all read the same
history and all pass (60 concurrent creates against a limit of 30 got 39
201s). Here a request counts itself with `cache.add(key, 0)` then
`cache.incr(key)`, both atomic in our cache (sessions_app.infra.cache; Redis is
too), into a counter per client and window: exactly `num_requests` get
through per window, however many arrive at once. A refused request counts
too (a client that keeps hammering stays refused until the window ends).

Rates are REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"][scope] ("30/hour"), read
on every request so a settings override takes effect: DRF makes a throttle per
request, and SimpleRateThrottle's own `__init__` asks `get_rate()`, which here
reads the settings (DRF's reads a copy taken when the class was defined). A
refused request gets DRF's 429 with `Retry-After` (the seconds left in the window).
"""

from __future__ import annotations

from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from sessions_app.infra import metrics
from sessions_app.infra.cache_counters import increment
from sessions_app.infra.client_address import client_ip, client_network


class FixedWindowThrottle(SimpleRateThrottle):
    """Allows `num_requests` per `duration`-second window for each key `get_cache_key` gives."""

    cache_format = "throttle:%(scope)s:%(ident)s"
    seconds_left: float | None = None

    def get_rate(self):
        """The scope's rate in the settings as they are now; None (no limit) when it has none."""
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def allow_request(self, request, view) -> bool:
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)
        if key is None:
            return True
        now = self.timer()
        window = int(now // self.duration)
        self.seconds_left = (window + 1) * self.duration - now
        allowed = increment(f"{key}:{window}", self.seconds_left + 1) <= self.num_requests
        if not allowed:
            metrics.THROTTLED.labels(self.scope).inc()
        return allowed

    def wait(self) -> float | None:
        return self.seconds_left

    def get_ident(self, request) -> str:
        """The client's address as every limit reads it (sessions_app.infra.client_address), not DRF's
        value as given: junk in X-Forwarded-For is the proxy's, never a budget of its own."""
        return client_network(client_ip(request), ipv6_prefix=128)


class ClientAddressThrottle(FixedWindowThrottle):
    """Counts per client address (IPv6: per /64), behind NUM_PROXIES proxies."""

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": client_network(client_ip(request))}


class IPv6NetworkThrottle(FixedWindowThrottle):
    """Counts per IPv6 network of `prefix` bits; IPv4 clients are not counted here.

    One holder of a /56 (a home's usual delegation) or a /48 (a site's) has 256 or 65,536 /64s,
    each with a budget of its own under ClientAddressThrottle: this coarser budget is shared."""

    prefix = 56

    def get_cache_key(self, request, view):
        ip = client_ip(request)
        if ip is None or ip.version != 6:
            return None
        return self.cache_format % {"scope": self.scope, "ident": client_network(ip, self.prefix)}


class SessionCreateThrottle(ClientAddressThrottle):
    """Session creations per client address."""

    scope = "session_create"


class ClientMessageThrottle(ClientAddressThrottle):
    """Messages per client address, whatever sessions they go to."""

    scope = "client_message"


class SessionMessageThrottle(FixedWindowThrottle):
    """Messages per session token (its owner id; one token, one session)."""

    scope = "session_message"

    def get_cache_key(self, request, view):
        owner_id = getattr(request.user, "owner_id", None)
        if owner_id is None:
            return None  # no token: the request is answered 401 anyway
        return self.cache_format % {"scope": self.scope, "ident": owner_id}


class SessionCreatePer56Throttle(IPv6NetworkThrottle):
    """Session creations per IPv6 /56."""

    scope, prefix = "session_create_ipv6_56", 56


class SessionCreatePer48Throttle(IPv6NetworkThrottle):
    """Session creations per IPv6 /48."""

    scope, prefix = "session_create_ipv6_48", 48


class ClientMessagePer56Throttle(IPv6NetworkThrottle):
    """Messages per IPv6 /56."""

    scope, prefix = "client_message_ipv6_56", 56


class ClientMessagePer48Throttle(IPv6NetworkThrottle):
    """Messages per IPv6 /48."""

    scope, prefix = "client_message_ipv6_48", 48


class DeletionLogThrottle(ClientAddressThrottle):
    """Reads of the public deletion log (receipts, checkpoints, proofs, its key) per client address."""

    scope = "deletion_log"


class DeletionLogPer56Throttle(IPv6NetworkThrottle):
    scope, prefix = "deletion_log_ipv6_56", 56


class DeletionLogPer48Throttle(IPv6NetworkThrottle):
    scope, prefix = "deletion_log_ipv6_48", 48


def client_throttles(scope: str) -> list[type[FixedWindowThrottle]]:
    """The throttles of `scope` per client address and per IPv6 /56 and /48 (`<scope>_ipv6_56`,
    `<scope>_ipv6_48`): what every public request that costs the server something is counted by."""
    name = scope.title().replace("_", "")
    return [
        type(f"{name}Throttle", (ClientAddressThrottle,), {"scope": scope}),
        type(f"{name}Per56Throttle", (IPv6NetworkThrottle,), {"scope": f"{scope}_ipv6_56", "prefix": 56}),
        type(f"{name}Per48Throttle", (IPv6NetworkThrottle,), {"scope": f"{scope}_ipv6_48", "prefix": 48}),
    ]


# Deleting a session, exporting one and reading the OpenAPI schema (issue 39, findings 6 and 11).
SESSION_DELETE_THROTTLES = client_throttles("session_delete")
SESSION_EXPORT_THROTTLES = client_throttles("session_export")
SCHEMA_THROTTLES = client_throttles("schema")
