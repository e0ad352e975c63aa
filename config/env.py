"""The one reader of the environment for the settings (django-environ): `env.int("NAME", default=...)`.

A value that does not parse stops the process with an ImproperlyConfigured naming the variable
and what it should be, never a bare ValueError; the value itself is not repeated (it may be a
secret). A variable set to nothing but spaces counts as unset; spaces around a value, or around
the items of a list, are dropped. Every variable: docs/OPERATIONS.md.
"""

import environ
from django.core.exceptions import ImproperlyConfigured

from agent.config import AgentConfig

# What each cast is called in the error message.
_KINDS = {int: "an integer", float: "a number", bool: "a yes/no flag"}


class Env(environ.Env):
    def get_value(self, var, cast=None, default=environ.Env.NOTSET, parse_default=False):
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


env = Env()


def agent_config() -> AgentConfig:
    """The agent's own variables (agent.config reads them, knowing no Django), a bad one named as here."""
    try:
        return AgentConfig.from_env(env.ENVIRON)
    except ValueError as error:
        raise ImproperlyConfigured(str(error)) from None
