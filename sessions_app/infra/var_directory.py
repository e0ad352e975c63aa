"""var/ (settings.VAR_DIR): made owner-only when the app is ready, not when settings are read,
and checked (`manage.py check`, which `serve` runs): a var/ or static/ directory this process
cannot use is an error that names it, not a traceback at the first write."""

import os
from pathlib import Path

from django.conf import settings
from django.core import checks
from django.utils.translation import gettext

from sessions_app.infra.private_files import private_directory


def prepare() -> None:
    """Makes var/ (0700) and its static/ if missing; a failure is left for the check to report."""
    try:
        private_directory(Path(settings.VAR_DIR))
        Path(settings.STATIC_ROOT).mkdir(exist_ok=True)
    except OSError:
        pass


def _unusable(path: Path) -> bool:
    return not (path.is_dir() and os.access(path, os.R_OK | os.W_OK | os.X_OK))


@checks.register("var_directory")
def check_var_directory(app_configs=None, **kwargs) -> list:
    hint = gettext("DJANGO_VAR_DIR must name a directory of the service's own (docs/OPERATIONS.md).")
    places = [(Path(settings.VAR_DIR), "sessions_app.E009"), (Path(settings.STATIC_ROOT), "sessions_app.E010")]
    for path, check_id in places:
        if _unusable(path):
            message = gettext("%(path)s is not a directory this service can read and write.") % {"path": path}
            return [checks.Error(message, hint=hint, id=check_id)]
    return []
