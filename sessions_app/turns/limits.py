"""What a turn may take before it starts: a place among the process's turns in flight (and its
client's, turns/client_turns.py), and room in its session."""

from __future__ import annotations

import threading

from django.conf import settings

from sessions_app.exceptions import SessionLimitReached, SessionMissing, TurnsBusy
from sessions_app.infra import metrics
from sessions_app.infra.client_address import IP
from sessions_app.models import AgentSession
from sessions_app.storage import sessions
from sessions_app.turns import client_turns


class TurnsInFlight:
    """How many turns this process runs at once, at most AGENT_MAX_TURNS_IN_FLIGHT: beyond it a
    turn is refused at once (TurnsBusy, a 503) rather than queued without limit. A client (its
    address, its network) is bounded too, across processes (ClientTurnsBusy, a 429: the client's
    doing, not the server's)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.count = 0

    def take(self, client: IP | None = None) -> TurnPlace:
        counters = client_turns.take(client)
        with self._lock:
            if self.count >= settings.AGENT_MAX_TURNS_IN_FLIGHT:
                client_turns.release(counters)
                raise TurnsBusy
            self.count += 1
            self._show()
        return TurnPlace(counters)

    def release(self) -> None:
        with self._lock:
            self.count -= 1
            self._show()

    def _show(self) -> None:
        metrics.TURNS_IN_FLIGHT.set(self.count)
        metrics.TURNS_IN_FLIGHT_BUSIEST.set(self.count)


turns_in_flight = TurnsInFlight()


class TurnPlace:
    """One of the process's places and its client's counts, given back together."""

    def __init__(self, counters: list[str]):
        self.counters = counters

    def release(self) -> None:
        try:
            turns_in_flight.release()
        finally:
            client_turns.release(self.counters)


def check_session_limits(session: AgentSession) -> None:
    """Refuses a turn on a session that already has AGENT_SESSION_MAX_TURNS turns or AGENT_SESSION_MAX_BYTES stored.

    Counted without a key (event authors and sealed sizes are in clear). A
    turn that starts under the limit may end over it by one turn's size.
    """
    usage = sessions.usage(session.pk)
    if usage is None:
        raise SessionMissing(session.session_id)  # deleted (or purged) since the view found it
    if usage.turns >= settings.AGENT_SESSION_MAX_TURNS:
        raise SessionLimitReached("turns")
    if usage.size_bytes >= settings.AGENT_SESSION_MAX_BYTES:
        raise SessionLimitReached("bytes")
