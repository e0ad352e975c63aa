"""PostgreSQL's planner statistics for the tables an erasure reads, where there are none yet.

A table PostgreSQL has never analysed (just restored from a dump, or filled faster than
autovacuum's first pass) has no statistics; the planner then guesses that 100 session ids
match half of the events and scans the whole table for each purge batch: 80-90 ms a batch at
140,000 events instead of 1-2 ms with the index (EXPLAIN ANALYZE, benchmarks/results/purge.md).
SQLite's planner uses the indexes without statistics; nothing to do there.
"""

import logging

from django.db import DatabaseError, connection

from sessions_app.models import AgentSession, SessionEvent

logger = logging.getLogger(__name__)

NEVER_ANALYSED = """SELECT relname FROM pg_stat_user_tables
    WHERE relname = ANY(%s) AND last_analyze IS NULL AND last_autoanalyze IS NULL"""


def analyse_if_never_analysed() -> list[str]:
    """ANALYZEs the session and event tables PostgreSQL has no statistics for; the tables it
    analysed. Never in the way of an erasure: where it fails (a full disk) the purge goes on."""
    if connection.vendor != "postgresql":
        return []
    tables = [model._meta.db_table for model in (AgentSession, SessionEvent)]
    try:
        with connection.cursor() as cursor:
            cursor.execute(NEVER_ANALYSED, [tables])
            missing = [row[0] for row in cursor.fetchall()]
            for table in missing:
                cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")
    except DatabaseError as exc:
        logger.warning("planner statistics not gathered before the purge (%s)", type(exc).__name__)
        return []
    return missing
