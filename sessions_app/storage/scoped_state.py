"""ADK's scoped state: the app's `app:` state (clear) and each owner's `user:` state (sealed with
the owner's key), one row per app and per owner, shared by all of their sessions."""

from __future__ import annotations

from django.db import transaction

from sessions_app.infra import sql
from sessions_app.models import AppState, UserState
from sessions_app.security import sealing

# Scoped state deltas, as ADK splits a state dict: {"app": {...}, "user": {...}, "session": {...}}.
Deltas = dict[str, dict]

_APP_STATE = AppState._meta.get_field("state")

SCOPED_STATES = sql.Statement(
    lambda n: (
        f"""SELECT (SELECT {n.column(AppState, "state")} FROM {n.table(AppState)}
                          WHERE {n.column(AppState, "app_name")} = %s),
                         (SELECT {n.column(UserState, "state")} FROM {n.table(UserState)}
                          WHERE {n.column(UserState, "app_name")} = %s AND {n.column(UserState, "owner_id")} = %s)"""
    )
)


def open_user_state(app_name: str, owner_id: str, sealed) -> dict:
    """The owner's `user:` state; {} where none is stored (then no key is needed)."""
    if sealed is None:
        return {}
    return sealing.open_user_state(sealing.owner_sealer(app_name, owner_id), sealed)


def open_app_state(value, connection) -> dict:
    """The `app:` state from its raw column value; {} where none is stored."""
    return sql.from_db(_APP_STATE, value, connection) or {}


def scoped_states(cursor, connection, app_name: str, owner_id: str) -> tuple[dict, dict]:
    """(app state, user state) in one statement; {} where none is stored."""
    cursor.execute(SCOPED_STATES(connection), [app_name, app_name, owner_id])
    app_value, user_value = cursor.fetchone()
    return open_app_state(app_value, connection), open_user_state(app_name, owner_id, user_value)


def app_state(app_name: str) -> dict:
    return AppState.objects.filter(app_name=app_name).values_list("state", flat=True).first() or {}


def user_state(app_name: str, owner_id: str) -> dict:
    sealed = UserState.objects.filter(app_name=app_name, owner_id=owner_id).values_list("state", flat=True).first()
    return open_user_state(app_name, owner_id, sealed)


# The state rows are locked (where the database can) so two sessions writing
# the same app or user state at once cannot lose one another's keys; ADK's
# DatabaseSessionService locks them the same way. A no-op on SQLite, whose
# IMMEDIATE transactions already serialize writers.
def _merge_into_app_state(app_name: str, delta: dict) -> None:
    row, _ = AppState.objects.select_for_update().get_or_create(app_name=app_name)
    row.state = {**row.state, **delta}
    row.save(update_fields=["state", "updated_at"])


def _merge_into_user_state(app_name: str, owner_id: str, delta: dict) -> None:
    sealer = sealing.owner_sealer(app_name, owner_id)
    # A new row starts empty and is sealed below, in the same transaction.
    row, created = UserState.objects.select_for_update().get_or_create(
        app_name=app_name, owner_id=owner_id, defaults={"state": b""}
    )
    stored = {} if created else sealing.open_user_state(sealer, row.state)
    row.state = sealing.seal_user_state(sealer, {**stored, **delta})
    row.save(update_fields=["state", "updated_at"])


def merge_user_state(app_name: str, owner_id: str, delta: dict) -> None:
    """Merges `delta` into the owner's `user:` state (sealed with the owner's key)."""
    with transaction.atomic():
        _merge_into_user_state(app_name, owner_id, delta)


def apply_scoped_deltas(app_name: str, owner_id: str, deltas: Deltas) -> None:
    if deltas["app"]:
        _merge_into_app_state(app_name, deltas["app"])
    if deltas["user"]:
        _merge_into_user_state(app_name, owner_id, deltas["user"])
