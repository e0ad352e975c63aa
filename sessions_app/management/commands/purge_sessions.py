from django.core.management.base import BaseCommand, CommandError

from sessions_app.models import DeletionAudit
from sessions_app.retention import purge_expired


class Command(BaseCommand):
    help = "Deletes sessions past their TTL or maximum age (what the scheduled purge does)."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="count what would go, delete nothing")
        parser.add_argument("--ttl-hours", type=float, help="TTL for this run instead of SESSION_TTL_HOURS")
        parser.add_argument("--batch-size", type=int, help="sessions per transaction")

    def handle(self, *args, dry_run, ttl_hours, batch_size, **options):
        if ttl_hours is not None and ttl_hours <= 0:
            raise CommandError("--ttl-hours must be positive")
        if batch_size is not None and batch_size <= 0:
            raise CommandError("--batch-size must be positive")

        def progress(result):
            if result.batches % 10 == 0:
                self.stdout.write(f"... {result.sessions} sessions, {result.events} events so far")

        result = purge_expired(
            dry_run=dry_run,
            ttl_hours=ttl_hours,
            batch_size=batch_size,
            trigger=DeletionAudit.Trigger.COMMAND,
            progress=progress,
        )
        verb = "would delete" if dry_run else "deleted"
        self.stdout.write(
            f"{verb} {result.sessions} sessions, {result.events} events, {result.user_states} owner states"
            f" in {result.seconds:.2f}s"
        )
