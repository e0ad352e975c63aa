from django.core.management.base import BaseCommand

from sessions_app.deletion_log import key as log_key


class Command(BaseCommand):
    help = (
        "Prints the deletion log's public key (<origin>+<key id>+<key>), which checks its receipts:"
        " python -m sessions_app.deletion_log.formats.verify --key KEY RECEIPT. Makes the signing key if there is none."
    )

    def handle(self, *args, **options):
        self.stdout.write(log_key.verifier().vkey)
