"""SQLite settings that every connection of the project gets.

`secure_delete=ON` makes SQLite overwrite deleted content with zeros instead
of only unlinking it from the b-tree, so a deleted resume leaves no bytes in
the database file. Debian builds SQLite with it on by default, stock SQLite
(macOS, python.org builds, most distributions) with it off, so we set it
ourselves on every connection and never rely on the platform.

journal_mode=DELETE: the rollback journal holds the before-images of a
transaction's pages (for a delete, the very text being deleted) and is
unlinked when the transaction commits, so after commit no sidecar file holds
them. PERSIST would keep them in a `-journal` file, and WAL keeps the
inserted text in `-wal` frames until a checkpoint that any open reader can
hold back. What remains outside SQLite's reach (freed filesystem blocks) is
discussed in docs/DATA_INVENTORY.md.

temp_store=MEMORY keeps statement journals and temporary tables off disk:
otherwise SQLite may spill them into unlinked temp files.

File modes: the database file is created 0600 (and an existing one and its
sidecars made so) before SQLite opens it, by the connection factory that
settings put in DATABASES OPTIONS (sessions_app.infra.private_files); the journal SQLite
creates gets the database file's mode. Not done here: connection_created
fires after SQLite has already created the file.

The busy timeout is the `timeout` option in settings.DATABASES.

synchronous stays FULL (SQLite's default; not set here): NORMAL was no
faster for our two commits a turn, and in journal_mode=DELETE it risks a
corrupt file on power loss (benchmarks/results/sqlite_choices.md).

The write gate (one writer at a time per database file, across threads and
processes) is in the project's database backend, `sessions_app.infra.sqlite_backend`.
"""

from django.core.checks import Error, register
from django.db import connections
from django.db.backends.signals import connection_created
from django.dispatch import receiver

CONNECTION_PRAGMAS = ("PRAGMA secure_delete=ON", "PRAGMA journal_mode=DELETE", "PRAGMA temp_store=MEMORY")


def secure_delete_enabled(connection) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA secure_delete")
        return cursor.fetchone()[0] == 1


@receiver(connection_created, dispatch_uid="sessions_app.configure_sqlite_connection")
def configure_sqlite_connection(sender, connection, **kwargs) -> None:
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        for pragma in CONNECTION_PRAGMAS:
            cursor.execute(pragma)
    # Fail closed: a connection that would leave deleted resumes readable in
    # the file must not be used at all.
    if not secure_delete_enabled(connection):
        raise RuntimeError("SQLite refused PRAGMA secure_delete=ON on a new connection")


@register("database")
def check_secure_delete(app_configs=None, databases=None, **kwargs) -> list[Error]:
    errors = []
    for alias in databases or []:
        connection = connections[alias]
        if connection.vendor == "sqlite" and not secure_delete_enabled(connection):
            errors.append(
                Error(
                    f"SQLite connection '{alias}' has secure_delete off: deleted sessions"
                    " would stay readable in the database file.",
                    hint="sessions_app.infra.sqlite.configure_sqlite_connection must run on every"
                    " connection (it is connected in SessionsAppConfig.ready()).",
                    id="sessions_app.E001",
                )
            )
    return errors
