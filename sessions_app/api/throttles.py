from rest_framework.throttling import AnonRateThrottle


class SessionCreateThrottle(AnonRateThrottle):
    """Session creation per client address; rate in REST_FRAMEWORK's DEFAULT_THROTTLE_RATES."""

    scope = "session_create"
