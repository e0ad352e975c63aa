"""`config.settings`, what `make run` and manage.py serve with: base.py plus service.py.
The tests run on config.settings.test (pyproject.toml)."""

from config.settings.service import *  # noqa: F403
