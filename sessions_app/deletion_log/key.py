"""The deletion log's signing key: Ed25519, in Go's signed-note format (sessions_app.deletion_log.formats.note).

Given by the environment (settings.DELETION_LOG_SIGNING_KEY), or else made on first use in
settings.DELETION_LOG_KEY_FILE (var/deletion_log_key, 0600, beside the secret key; every process
on that var/ reads the same). Its name is the log's origin (settings.DELETION_LOG_ORIGIN): a
checkpoint is signed by a key named after its log. The public keys it replaced, after a rotation,
are settings.DELETION_LOG_PREVIOUS_KEYS. Rotation: docs/API.md, "Deletion receipts".
"""

from __future__ import annotations

import functools
from pathlib import Path

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext

from sessions_app.deletion_log.formats.note import Signer, Verifier
from sessions_app.deletion_log.formats.strict import Rejected
from sessions_app.infra.private_files import read_or_create_private_text


def signer() -> Signer:
    """The key that signs the log's checkpoints (made on first use when none is given)."""
    given, path = settings.DELETION_LOG_SIGNING_KEY, Path(settings.DELETION_LOG_KEY_FILE)
    return _signer(settings.DELETION_LOG_ORIGIN, given, path)


def verifier() -> Verifier:
    """The log's public key: what anyone checks a receipt with."""
    return signer().verifier


def previous_verifiers() -> tuple[Verifier, ...]:
    """The public keys the log signed with before its key was rotated (DELETION_LOG_PREVIOUS_KEYS):
    the checkpoints signed before verify with them only."""
    return _previous(settings.DELETION_LOG_ORIGIN, settings.DELETION_LOG_PREVIOUS_KEYS)


def verifiers() -> tuple[Verifier, ...]:
    """Every key the log has signed with, the current one first (for checking the whole log)."""
    return (verifier(), *previous_verifiers())


@functools.cache
def _previous(origin: str, given: str) -> tuple[Verifier, ...]:
    keys = []
    for vkey in given.split():
        try:
            key = Verifier.from_vkey(vkey)
        except Rejected:
            raise ImproperlyConfigured(
                "DELETION_LOG_PREVIOUS_KEYS holds something that is not a <name>+<id>+<key> verifier key"
            ) from None
        if key.name != origin:
            raise ImproperlyConfigured(
                f"a key in DELETION_LOG_PREVIOUS_KEYS is named {key.name!r}, but DELETION_LOG_ORIGIN is {origin!r}:"
                " a rotated key keeps the log's name (docs/API.md, 'Deletion receipts')"
            )
        keys.append(key)
    return tuple(keys)


@functools.cache
def _signer(origin: str, given: str, path: Path) -> Signer:
    if given:
        try:
            key = Signer.from_skey(given)
        except ValueError:
            raise ImproperlyConfigured("DELETION_LOG_SIGNING_KEY is not a PRIVATE+KEY+<name>+<id>+<key> key") from None
        where = "DELETION_LOG_SIGNING_KEY"
    else:
        key = Signer.from_skey(read_or_create_private_text(path, lambda: Signer.generate(origin).skey))
        where = str(path)
    if key.name != origin:
        raise ImproperlyConfigured(
            f"the deletion log's key in {where} is named {key.name!r}, but DELETION_LOG_ORIGIN is {origin!r}:"
            " a log signs with a key named after it (docs/API.md, 'Deletion receipts')"
        )
    return key


def signing_key_problem() -> Exception | None:
    """Why the log's keys cannot be used (the signing key, or a previous key, unreadable or
    misnamed), or None when they can: `manage.py check` and the readiness probe both ask."""
    try:
        signer()
        previous_verifiers()
    except (ImproperlyConfigured, ValueError, OSError) as error:
        return error
    return None


@checks.register("deletion_log")
def check_signing_key(app_configs=None, **kwargs) -> list:
    """Every erasure signs a checkpoint: a key that cannot be read or made stops them all, so
    `manage.py check` (which `serve` runs before it starts) says so first."""
    error = signing_key_problem()
    if error is not None:
        message = gettext("The deletion log cannot sign its checkpoints: %(problem)s.") % {"problem": error}
        hint = gettext("No session can be erased until this is fixed (docs/API.md, 'Deletion receipts').")
        return [checks.Error(message, hint=hint, id="sessions_app.E008")]
    return []
