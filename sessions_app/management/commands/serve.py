"""Runs the web server and the django-q2 cluster together; Ctrl-C stops both.

First the metrics' directory (made empty, then named in PROMETHEUS_MULTIPROC_DIR: this command
starts again, once, so that its start-up purge is counted there too), then the system checks (in a
child process) and a purge. Then, on SQLite, this process loads the application and forks the two
(their pages shared: sessions_app/infra/supervisor.py); on PostgreSQL it becomes
`sessions_app.infra.supervisor`, which starts each as a program of its own. Every process under it
writes its metrics to that directory (sessions_app/infra/metrics.py).
"""

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import connections

from sessions_app.choices import ErasureTrigger
from sessions_app.infra import metrics, supervisor
from sessions_app.infra.supervisor import DEFAULT_WORKERS
from sessions_app.purge import purge_expired

# Set for the command's second start (above), and taken out of the environment at once.
METRICS_READY = "RESUME_AGENT_SERVE_METRICS_READY"


class Command(BaseCommand):
    help = "Serve the API (gunicorn) and run the scheduler (qcluster) until interrupted."
    # The system checks run once in a child process that then exits: what they build (the
    # URLconf's checks, the schema's) stays out of the pages the served processes share.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--bind", default="127.0.0.1:8000")
        parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS)

    def handle(self, *args, bind, workers, **options):
        python = sys.executable
        if os.environ.pop(METRICS_READY, None) is None:
            # The metrics client chooses its mode when it is imported, which this process did before
            # it read its command: the same command again, in the environment that names the
            # directory, once the values of an earlier run are gone.
            directory = Path(settings.VAR_DIR) / metrics.METRICS_DIRECTORY
            metrics.prepare_directory(directory)
            os.environ[metrics.MULTIPROCESS_VARIABLE] = str(directory)
            os.environ[METRICS_READY] = "1"
            os.execv(python, [python, "manage.py", "serve", "--bind", bind, "--workers", str(workers)])
        subprocess.run([python, "manage.py", "check"], check=True)
        # Purge once at start, so a service that was down past some TTLs (or
        # whose cluster has not run yet) does not keep expired resumes.
        result = purge_expired(trigger=ErasureTrigger.STARTUP)
        self.stdout.write(f"start-up purge: {result.sessions} expired sessions deleted")
        self.stdout.flush()
        sqlite = connections["default"].vendor == "sqlite"
        connections.close_all()
        if sqlite:
            sys.exit(supervisor.supervise_forks(python, bind, workers))
        os.execv(python, [python, "-m", "sessions_app.infra.supervisor", bind, str(workers)])
