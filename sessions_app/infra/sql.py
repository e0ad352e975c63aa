"""Plain SQL on Django's connection, for the few statements the ORM builds too slowly.

A `Statement` is written as a function of a `Names`, which quotes a model's table
(`names.table(Model)`) and a field's column (`names.column(Model, "field")`) for the connection
it runs on; it is built once per database alias. Only the session store's load, append and usage
and the deletion log's append use it (benchmarks/results/store.md says why); everything else is
the ORM.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import Func, IntegerField


class Names:
    """The quoted names of models' tables and columns on one connection."""

    def __init__(self, connection):
        self.connection = connection
        self._quote = connection.ops.quote_name

    def table(self, model) -> str:
        return self._quote(model._meta.db_table)

    def column(self, model, field_name: str) -> str:
        return self._quote(model._meta.get_field(field_name).column)

    @property
    def for_update(self) -> str:
        """` FOR UPDATE` where the database has it (SQLite's IMMEDIATE transaction already locks)."""
        return " FOR UPDATE" if self.connection.features.has_select_for_update else ""


class Statement:
    """One named statement: `build(names)` gives its SQL, built once per database alias."""

    every: list[Statement] = []  # noqa: RUF012 (one list of every statement made, for `forget_all`)

    def __init__(self, build: Callable[[Names], str]):
        self.build = build
        self._by_alias: dict[str, str] = {}
        Statement.every.append(self)

    def __call__(self, connection) -> str:
        sql = self._by_alias.get(connection.alias)
        if sql is None:
            sql = self._by_alias[connection.alias] = " ".join(self.build(Names(connection)).split())
        return sql

    @classmethod
    def forget_all(cls) -> None:
        """Builds every statement again at its next use (a mutation test's fork shares its parent's)."""
        for statement in cls.every:
            statement._by_alias.clear()


def keys(count: int) -> str:
    """`count` placeholders, comma-separated, for an IN (...) list."""
    return ", ".join(["%s"] * count)


def from_db(model_field, value, connection):
    """A raw column value as the ORM would return it (the field's own converters)."""
    if value is None:
        return None
    expression = model_field.cached_col
    for converter in connection.ops.get_db_converters(expression) + expression.get_db_converters(connection):
        value = converter(value, expression, connection)
    return value


class ByteLength(Func):
    """Length in bytes, not characters: UTF-8 text takes more bytes than it has characters."""

    function = "OCTET_LENGTH"
    output_field = IntegerField()

    def as_sqlite(self, compiler, connection, **extra_context):
        return self.as_sql(compiler, connection, template="LENGTH(CAST(%(expressions)s AS BLOB))", **extra_context)
