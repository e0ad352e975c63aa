from django.core.management.base import BaseCommand, CommandError

from sessions_app.models import DeletionAudit
from sessions_app.retention import erase_all_sessions, purge_expired


class Command(BaseCommand):
    help = (
        "Deletes sessions past their TTL or maximum age (what the scheduled purge does);"
        " with --all, every session now, live ones included (incident response)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="count what would go, delete nothing")
        parser.add_argument("--ttl-hours", type=float, help="TTL for this run instead of SESSION_TTL_HOURS")
        parser.add_argument("--batch-size", type=int, help="sessions per transaction")
        parser.add_argument("--all", action="store_true", help="erase every session now, live ones included")
        parser.add_argument("--yes", action="store_true", help="with --all: do not ask for confirmation")

    def handle(self, *args, dry_run, ttl_hours, batch_size, all, yes, **options):
        if ttl_hours is not None and ttl_hours <= 0:
            raise CommandError("--ttl-hours must be positive")
        if batch_size is not None and batch_size <= 0:
            raise CommandError("--batch-size must be positive")
        if all and ttl_hours is not None:
            raise CommandError("--all erases every session: it takes no --ttl-hours")

        def progress(result):
            if result.batches % 10 == 0:
                self.stdout.write(f"... {result.sessions} sessions, {result.events} events so far")

        if all:
            if not dry_run and not yes:
                self._confirm(erase_all_sessions(dry_run=True))
            result = erase_all_sessions(dry_run=dry_run, batch_size=batch_size, progress=progress)
        else:
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

    def _confirm(self, would) -> None:
        """Asks before erasing everything; without a terminal to ask, --yes is needed."""
        question = (
            f"This erases all {would.sessions} sessions ({would.events} events) now, live ones included."
            " Their owners lose them; it cannot be undone. Type 'yes' to go on: "
        )
        try:
            answer = input(question)
        except EOFError:
            answer = ""
        if answer.strip().lower() != "yes":
            raise CommandError("nothing erased (answer 'yes', or pass --yes)")
