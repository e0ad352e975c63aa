import os

from django.core.management.base import BaseCommand, CommandError
from django.utils import translation
from django.utils.formats import number_format
from django.utils.translation import gettext as _

from sessions_app.choices import ErasureTrigger
from sessions_app.infra.disk_space import is_disk_full
from sessions_app.purge import erase_all_sessions, purge_expired


def grouped(count: int) -> str:
    """A count as the language writes it (12,345), in a message."""
    return number_format(count, force_grouping=True)


def shell_language() -> str:
    """The operator's language from the shell's locale (LANGUAGE, LC_ALL, LC_MESSAGES, LANG):
    Traditional Chinese for a Chinese locale, otherwise English."""
    for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(name, "")
        if value:
            return "zh-hant" if value.lower().startswith("zh") else "en"
    return "en"


class Command(BaseCommand):
    help = (
        "Deletes sessions past their TTL or maximum age (what the scheduled purge does);"
        " with --all, every session now, live ones included (incident response)."
    )
    # An operator reads what it prints: in the shell's language, not the service's default.
    leave_locale_alone = True

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="count what would go, delete nothing")
        parser.add_argument("--ttl-hours", type=float, help="TTL for this run instead of AGENT_SESSION_TTL_HOURS")
        parser.add_argument("--batch-size", type=int, help="sessions per transaction")
        parser.add_argument("--all", action="store_true", help="erase every session now, live ones included")
        parser.add_argument("--yes", action="store_true", help="with --all: do not ask for confirmation")

    def handle(self, *args, **options):
        with translation.override(shell_language()):
            try:
                self._handle(**options)
            except Exception as exc:
                if not is_disk_full(exc):
                    raise
                # One line, no traceback: what an operator needs is that the disk is full.
                raise CommandError(
                    _("could not purge: the database's disk is full (even with the erasure reserve given back)")
                ) from None

    def _handle(self, *, dry_run, ttl_hours, batch_size, all, yes, **options):
        if ttl_hours is not None and ttl_hours <= 0:
            raise CommandError(_("--ttl-hours must be positive"))
        if batch_size is not None and batch_size <= 0:
            raise CommandError(_("--batch-size must be positive"))
        if all and ttl_hours is not None:
            raise CommandError(_("--all erases every session: it takes no --ttl-hours"))

        def progress(result):
            if result.batches % 10 == 0:
                self.stdout.write(
                    _("... %(sessions)s sessions, %(events)s events so far")
                    % {"sessions": grouped(result.sessions), "events": grouped(result.events)}
                )

        if all:
            if not dry_run and not yes:
                self._confirm(erase_all_sessions(dry_run=True))
            result = erase_all_sessions(dry_run=dry_run, batch_size=batch_size, progress=progress)
        else:
            result = purge_expired(
                dry_run=dry_run,
                ttl_hours=ttl_hours,
                batch_size=batch_size,
                trigger=ErasureTrigger.COMMAND,
                progress=progress,
            )
        counts = {
            "sessions": grouped(result.sessions),
            "events": grouped(result.events),
            "owner_states": grouped(result.user_states),
            "seconds": result.seconds,
        }
        if dry_run:
            message = _("would delete %(sessions)s sessions, %(events)s events, %(owner_states)s owner states")
        else:
            message = _(
                "deleted %(sessions)s sessions, %(events)s events, %(owner_states)s owner states in %(seconds).2fs"
            )
        self.stdout.write(message % counts)

    def _confirm(self, would) -> None:
        """Asks before erasing everything; without a terminal to ask, --yes is needed."""
        question = _(
            "This erases all %(sessions)s sessions (%(events)s events) now, live ones included."
            " Their owners lose them; it cannot be undone. Type 'yes' to go on: "
        ) % {"sessions": grouped(would.sessions), "events": grouped(would.events)}
        try:
            answer = input(question)
        except EOFError:
            answer = ""
        if answer.strip().lower() != "yes":
            raise CommandError(_("nothing erased (answer 'yes', or pass --yes)"))
