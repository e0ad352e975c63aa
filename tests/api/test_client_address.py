"""Which client a request counts as, behind a proxy (issue 39, finding 9): a forwarded value that is
not an address (junk, empty, several in one, an address with junk around it) counts as the proxy's
address, never as a budget of its own; an address with a port counts as the address. Every limit
and the admin's lockout read it the same way (sessions_app/infra/client_address.py)."""

import ipaddress

import pytest
from django.conf import settings as django_settings
from django.test import override_settings
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.test import APIClient, APIRequestFactory

from sessions_app.admin.login_attempts import login_client_address
from sessions_app.api.throttles import ClientMessagePer56Throttle, SessionCreateThrottle
from sessions_app.infra.client_address import address

PROXY = "10.0.0.1"
NOT_ADDRESSES = [
    "",
    " ",
    "junk",
    "unknown",
    "_hidden",  # RFC 7239's obfuscated identifier
    "203.0.113.7 198.51.100.9",  # several values in one
    "203.0.113.7;198.51.100.9",
    "203.0.113.7:",
    ":8080",
    "203.0.113.7:port",
    "203.0.113.7:123456",
    "203.0.113.300",
    "[2001:db8::1",
    "2001:db8::1]:443",
    "[junk]:443",
    "203.0.113.7/24",
    "http://203.0.113.7/",
]
WITH_PORTS = {
    "203.0.113.7:51234": "203.0.113.7",
    " 203.0.113.7:443 ": "203.0.113.7",
    "[2001:db8::1]:443": "2001:db8::1",
    "[2001:db8::1]": "2001:db8::1",
    "[::ffff:203.0.113.7]:80": "203.0.113.7",
    "2001:db8::1": "2001:db8::1",
}


def _forwarded(value: str, method=None):
    factory = APIRequestFactory()
    return (method or factory.post)("/agent/sessions", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=value)


def _budget(request) -> str:
    return SessionCreateThrottle().get_cache_key(request, None)


@pytest.fixture
def one_proxy(settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}


@pytest.mark.parametrize("value", NOT_ADDRESSES)
def test_a_forwarded_value_that_is_no_address_counts_as_the_proxy(one_proxy, value):
    assert address(value) is None
    proxy = _budget(APIRequestFactory().post("/agent/sessions", REMOTE_ADDR=PROXY))
    assert _budget(_forwarded(value)) == proxy
    assert login_client_address(_forwarded(value)) == PROXY


@pytest.mark.parametrize(("value", "ip"), WITH_PORTS.items())
def test_an_address_with_a_port_counts_as_the_address(one_proxy, value, ip):
    assert str(address(value)) == ip
    assert login_client_address(_forwarded(value)) == ip
    assert _budget(_forwarded(value)) == _budget(_forwarded(ip))


def test_only_the_value_the_proxy_count_picks_is_read(one_proxy, settings):
    """The rightmost value is the one the proxy wrote: junk a client put before it changes nothing."""
    assert _budget(_forwarded("junk, 203.0.113.7")) == _budget(_forwarded("203.0.113.7"))
    assert _budget(_forwarded("203.0.113.7, junk")) == _budget(_forwarded(""))
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 0}
    assert _budget(_forwarded("203.0.113.7")) == _budget(_forwarded("junk"))  # the header is not trusted


def _ident(key: str) -> str:
    return key.split(":", 2)[2]  # throttle:<scope>:<ident>


@given(st.text())
def test_no_forwarded_text_names_a_budget_but_an_address(value):
    """Whatever a client writes there, it is counted in the proxy's budget or in an address's (an
    IPv6 one's /64, /56): never in one the text names."""
    with override_settings(REST_FRAMEWORK={**django_settings.REST_FRAMEWORK, "NUM_PROXIES": 1}):
        request = _forwarded(value)
        assert ipaddress.ip_network(_ident(_budget(request)))
        network = ClientMessagePer56Throttle().get_cache_key(request, None)
        assert network is None or ipaddress.ip_network(_ident(network))
        assert ipaddress.ip_address(login_client_address(request))


@pytest.mark.django_db
def test_junk_in_x_forwarded_for_gets_no_fresh_budget(one_proxy, settings):
    """Through the API: each junk value used to be a session-creation budget of its own."""
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"session_create": "1/hour"}}

    def create(forwarded: str | None) -> int:
        extra = {} if forwarded is None else {"HTTP_X_FORWARDED_FOR": forwarded}
        body = {"resume_text": "Lin Mei"}
        return APIClient().post("/agent/sessions", body, format="json", REMOTE_ADDR=PROXY, **extra).status_code

    assert [create("junk-1"), create("junk-2"), create(""), create(None), create("a, b")] == [201] + [429] * 4
    assert [create("198.51.100.5:4711"), create("198.51.100.5:4712"), create("198.51.100.5")] == [201, 429, 429]
    assert [create("[2001:db8:3:4::5]:443"), create("2001:db8:3:4::6")] == [201, 429]  # one /64
