"""Runs the web server and the django-q2 cluster together; Ctrl-C stops both.

Each child gets its own process group, so the terminal's Ctrl-C reaches only
this command, which then stops the children the way each stops cleanly:
SIGINT to qcluster's main process (SIGTERM to its whole process group
deadlocks its shutdown) and SIGTERM to gunicorn's master.
"""

import signal
import subprocess
import sys
import time

from django.core.management.base import BaseCommand

from sessions_app.models import DeletionAudit
from sessions_app.retention import purge_expired

DEFAULT_WORKERS = 2
THREADS = 4


def gunicorn_command(python: str, bind: str, workers: int = DEFAULT_WORKERS) -> list[str]:
    """The production web server's command line (benchmarks start the same one)."""
    return [
        python,
        "-m",
        "gunicorn",
        "config.wsgi",
        "--bind",
        bind,
        "--workers",
        str(workers),
        "--threads",
        str(THREADS),
        "--preload",
        "--access-logfile",
        "-",
    ]


class Command(BaseCommand):
    help = "Serve the API (gunicorn) and run the scheduler (qcluster) until interrupted."

    def add_arguments(self, parser):
        parser.add_argument("--bind", default="127.0.0.1:8000")
        parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS)

    def handle(self, *args, bind, workers, **options):
        # Purge once at start, so a service that was down past some TTLs (or
        # whose cluster has not run yet) does not keep expired resumes.
        result = purge_expired(trigger=DeletionAudit.Trigger.STARTUP)
        self.stdout.write(f"start-up purge: {result.sessions} expired sessions deleted")
        python = sys.executable
        children = {
            "web": subprocess.Popen(gunicorn_command(python, bind, workers), start_new_session=True),
            "scheduler": subprocess.Popen([python, "manage.py", "qcluster"], start_new_session=True),
        }
        stop_signals = {"web": signal.SIGTERM, "scheduler": signal.SIGINT}
        stopping = False

        def stop(signum=None, frame=None):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        self.stdout.write(f"serving on http://{bind} with the purge scheduler; Ctrl-C stops both")
        while not stopping and all(child.poll() is None for child in children.values()):
            time.sleep(0.2)
        for name, child in children.items():
            if child.poll() is None:
                child.send_signal(stop_signals[name])
        for name, child in children.items():
            try:
                child.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.stderr.write(f"{name} did not stop in 20 s; killing it")
                child.kill()
                child.wait()
        if not stopping:  # a child died on its own: say so with the exit status
            raise SystemExit(1)
