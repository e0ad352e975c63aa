"""The admin's login attempts (django-axes, configured in settings): the client's address, the
lockout page and how a client is named in the log."""

from axes.helpers import get_cool_off
from django.conf import settings
from django.shortcuts import render

from sessions_app.infra.client_address import client_ip


def login_client_address(request) -> str | None:
    """The client's address as the API's limits read it (honouring NUM_PROXIES; a forwarded value
    that is not an address is the proxy's), so behind a proxy every operator does not share one
    lockout address, and junk in X-Forwarded-For is no fresh one."""
    ip = client_ip(request)
    return request.META.get("REMOTE_ADDR") if ip is None else str(ip)


def login_lockout_response(request, original_response=None, credentials=None):
    """What a locked-out client gets: a readable 429 page. Its context holds no
    username (axes' own template context would, and Django logs contexts at DEBUG)."""
    return render(
        request,
        "admin/locked_out.html",
        {
            "failure_limit": settings.AXES_FAILURE_LIMIT,
            "cooloff_minutes": int(get_cool_off(request).total_seconds() // 60),
        },
        status=429,
    )


def login_attempt_label(username, ip_address, user_agent, path_info, request) -> str:
    """How axes names a client in its log lines: the address, never the typed
    username (people type passwords into the wrong field)."""
    return f"address {ip_address}, path {path_info}"
