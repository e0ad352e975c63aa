"""The one reader of the environment for the settings (django-environ): `env.int("NAME", default=...)`.

A value that does not parse stops the process with an ImproperlyConfigured naming the variable
and what it should be, never a bare ValueError; the value itself is not repeated (it may be a
secret). A variable set to nothing but spaces counts as unset; spaces around a value, or around
the items of a list, are dropped. Every variable: docs/OPERATIONS.md.
"""

import logging
import warnings

import environ
from django.core.exceptions import ImproperlyConfigured

from agent.config import AgentConfig

# What each cast is called in the error message.
_KINDS = {int: "an integer", float: "a number", bool: "a yes/no flag"}
# Renamed variables, by prefix: the new one, and the old one still read, for one release, where
# the new name is unset (the service's SESSION_* beside Django's own SESSION_COOKIE_* and such).
RENAMED_PREFIXES = {"AGENT_SESSION_": "SESSION_"}

logger = logging.getLogger(__name__)


class Env(environ.Env):
    def __init__(self, **scheme):
        super().__init__(**scheme)
        self._warned: set[str] = set()

    def _read_as(self, var: str) -> str:
        """The name `var`'s value is read under: its own, or, when it is unset, its old name if
        that is set (said once per process: a DeprecationWarning and a log line)."""
        for new, old in RENAMED_PREFIXES.items():
            former = old + var.removeprefix(new)
            if var.startswith(new) and not self.ENVIRON.get(var, "").strip() and self.ENVIRON.get(former, "").strip():
                if former not in self._warned:
                    self._warned.add(former)
                    message = f"{former} is deprecated and will stop working in the next release: set {var} instead"
                    warnings.warn(message, DeprecationWarning, stacklevel=4)
                    logger.warning(message)
                return former
        return var

    def get_value(self, var, cast=None, default=environ.Env.NOTSET, parse_default=False):
        var = self._read_as(var)
        if not self.ENVIRON.get(var, "").strip():
            if default is self.NOTSET:
                raise ImproperlyConfigured(f"Set the {var} environment variable")
            return default
        try:
            value = super().get_value(var, cast=cast, default=default, parse_default=parse_default)
        except (TypeError, ValueError):
            kind = _KINDS.get(cast, "a valid value")
            raise ImproperlyConfigured(f"The environment variable {var} must be {kind}") from None
        if isinstance(value, str):
            return value.strip()
        if isinstance(value, list):  # "a, b," is ["a", "b"]
            return [item.strip() for item in value if item.strip()]
        return value

    def choice(self, var: str, choices: tuple[str, ...], default: str) -> str:
        """One of `choices` (in any case), or an ImproperlyConfigured naming the variable and them."""
        value = self.str(var, default=default).lower()
        if value not in choices:
            raise ImproperlyConfigured(f"The environment variable {var} must be one of: {', '.join(choices)}")
        return value


env = Env()


def agent_config() -> AgentConfig:
    """The agent's own variables (agent.config reads them, knowing no Django), a bad one named as here."""
    try:
        return AgentConfig.from_env(env.ENVIRON)
    except ValueError as error:
        raise ImproperlyConfigured(str(error)) from None
