"""Turns in flight per client, so that a few strangers cannot hold every place of the server.

A process runs at most AGENT_MAX_TURNS_IN_FLIGHT turns (turns/service.py): one pool for everyone,
which about 26 IPv4 addresses filled with a slow model (issue 39). Here each client is bounded
too, across every process and server: per IPv4 address or IPv6 /64 (AGENT_MAX_TURNS_PER_CLIENT),
per IPv4 /24 and per IPv6 /56 and /48 (AGENT_MAX_TURNS_PER_IPV4_24, _IPV6_56, _IPV6_48).

Counted in the default cache (sessions_app.infra.cache_counters.HeldCounts): one file shared by
the machine's gunicorn workers, or Redis shared by every server, so a client's bound holds whichever
process its turns reach, not once per process. A turn's counts live at least as long as a turn
may (its timeout and a margin for storing it and the stream's last events) and at most twice
that: a worker killed mid-turn leaves counts that are gone within two lifetimes.
"""

from __future__ import annotations

from django.conf import settings

from sessions_app.exceptions import ClientTurnsBusy
from sessions_app.infra.cache_counters import HeldCounts
from sessions_app.infra.client_address import IP, client_network

STORE_MARGIN_SECONDS = 30  # beyond the model's timeout: verifying, storing, the stream's last events


def _bounds(ip: IP) -> list[tuple[str, int]]:
    """(the client or network `ip` is counted in, its bound) for each bound that is on."""
    if ip.version == 4:
        scopes = [
            (client_network(ip), settings.AGENT_MAX_TURNS_PER_CLIENT),
            (client_network(ip, ipv4_prefix=24), settings.AGENT_MAX_TURNS_PER_IPV4_24),
        ]
    else:
        scopes = [
            (client_network(ip), settings.AGENT_MAX_TURNS_PER_CLIENT),
            (client_network(ip, ipv6_prefix=56), settings.AGENT_MAX_TURNS_PER_IPV6_56),
            (client_network(ip, ipv6_prefix=48), settings.AGENT_MAX_TURNS_PER_IPV6_48),
        ]
    return [(network, bound) for network, bound in scopes if bound > 0]


def _counts() -> HeldCounts:
    return HeldCounts("turns_in_flight", settings.AGENT_TURN_TIMEOUT_SECONDS + STORE_MARGIN_SECONDS)


def take(ip: IP | None) -> list[str]:
    """Counts one more turn of the client at `ip` (and its networks); the counters to `release`.
    ClientTurnsBusy, with nothing counted, when one of them already has its bound."""
    if ip is None:
        return []
    counts, taken = _counts(), []
    for network, bound in _bounds(ip):
        counter = counts.take(network, bound)
        if counter is None:
            release(taken)
            raise ClientTurnsBusy
        taken.append(counter)
    return taken


def release(counters: list[str]) -> None:
    for counter in counters:
        HeldCounts.release(counter)
