"""The client's address, behind NUM_PROXIES proxies: what every rate limit, every bound on turns in
flight and the admin's lockout count a client by, read in this one place.

DRF's `get_ident` takes the NUM_PROXIES-th value from the right of X-Forwarded-For and gives it as
it is: "203.0.113.7:51234", "junk" and "" each got a budget of their own (issue 39), so a client
that can reach that value had as many budgets as it liked. Here the value is read as nginx's realip
module reads it: a bare address, or an address with a port (`203.0.113.7:51234`,
`[2001:db8::1]:443`, as some proxies write it) for that address; anything else (junk, empty,
several addresses in one value) is not an address, and the request counts as the peer's
(REMOTE_ADDR, the proxy), as nginx then keeps the connection's address. A proxy that writes its
own peer's address (nginx's `proxy_add_x_forwarded_for`) never writes such a value: it comes from
a client, through a NUM_PROXIES set too high or a proxy that passes the client's header on. Then
every such request shares the proxy's one budget, and a stranger gains nothing by writing junk,
while people whose requests carry a real address keep theirs. (Refusing them, a 400, would refuse
everyone behind a proxy that writes one odd value, for a fault that is not theirs.)
"""

from __future__ import annotations

import ipaddress
import re

from rest_framework.settings import api_settings

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
IPV6_CLIENT_PREFIX = 64  # one IPv6 client (a home, a host) gets a /64: counted as one

_WITH_PORT = re.compile(r"\[(?P<bracketed>[^\]]+)\](?::\d{1,5})?|(?P<ipv4>[0-9.]+):\d{1,5}")


def address(value: str | None) -> IP | None:
    """The address `value` names: a bare IPv4 or IPv6 address (a zone dropped, an IPv4-mapped one as
    its IPv4 address), or one with a port; None for anything else."""
    text = (value or "").strip()
    with_port = _WITH_PORT.fullmatch(text)
    if with_port is not None:
        text = with_port["bracketed"] or with_port["ipv4"]
    try:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    return ip.ipv4_mapped if ip.version == 6 and ip.ipv4_mapped is not None else ip


def forwarded_value(request) -> str | None:
    """The value DRF's `get_ident` picks: REMOTE_ADDR without proxies (or without the header), else
    the NUM_PROXIES-th value of X-Forwarded-For from the right (its first one when it has fewer)."""
    peer = request.META.get("REMOTE_ADDR")
    forwarded, proxies = request.META.get("HTTP_X_FORWARDED_FOR"), api_settings.NUM_PROXIES
    if not proxies or forwarded is None:
        return peer
    values = forwarded.split(",")
    return values[-min(proxies, len(values))]


def client_ip(request) -> IP | None:
    """The client's address; the peer's (REMOTE_ADDR) when the forwarded value is not an address;
    None when neither is one (a server on a Unix socket with no proxy count set)."""
    return address(forwarded_value(request)) or address(request.META.get("REMOTE_ADDR"))


def client_network(ip: IP | None, ipv6_prefix: int = IPV6_CLIENT_PREFIX, ipv4_prefix: int = 32) -> str:
    """The client an address stands for: its IPv4 address (or `ipv4_prefix` network), or the /64
    (`ipv6_prefix`) of an IPv6 one; "unknown" (one budget for all such requests) for no address."""
    if ip is None:
        return "unknown"
    prefix = ipv6_prefix if ip.version == 6 else ipv4_prefix
    if prefix == ip.max_prefixlen:
        return str(ip)
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))
