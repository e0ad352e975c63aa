"""gunicorn's server hooks for `make run` (its `--config python:sessions_app.infra.gunicorn_hooks`,
sessions_app/infra/supervisor.py): gunicorn reads only the names of its settings here."""

from sessions_app.infra import metrics


def child_exit(server, worker) -> None:
    """In the master, after a worker has ended: its turns in flight no longer count
    (prometheus_client's mark_process_dead; sessions_app/infra/metrics.py)."""
    metrics.process_ended(worker.pid)
