"""The deletion log in the service (issue 31): every erasure appends one entry per session and
signs one checkpoint, in the erasure's own transaction; receipts, checkpoints, consistency proofs
and the log's key are served without a token and verify offline. Since issue 39 an entry is filed
under a value only the token's holder can compute: a stranger holding a session id finds nothing.

Both backends (`make test` runs this file on SQLite and on PostgreSQL)."""

import datetime as dt
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import time_machine
from django.core.management import call_command
from django.db import connection, connections, transaction
from django.utils import timezone

from sessions_app import erasure, purge
from sessions_app.adk.buffer import TurnBuffer
from sessions_app.deletion_log import key as log_key
from sessions_app.deletion_log import store as deletion_log
from sessions_app.deletion_log.formats.checkpoint import Checkpoint
from sessions_app.deletion_log.formats.entry import (
    TRIGGER_KINDS,
    TRIGGERS,
    DeletionEntry,
    DeletionEntryV1,
    at_most,
    read_entry,
    session_digest,
)
from sessions_app.deletion_log.formats.lookup import receipt_lookup
from sessions_app.deletion_log.formats.merkle import MerkleTree, RightEdge, leaf_hash, post_order
from sessions_app.deletion_log.formats.note import Verifier
from sessions_app.deletion_log.formats.receipt import Receipt
from sessions_app.deletion_log.formats.strict import Rejected
from sessions_app.deletion_log.formats.verify import WhoseSession, verify_log_grew, verify_receipt
from sessions_app.models import (
    AgentSession,
    DeletionAudit,
    DeletionLogCheckpoint,
    DeletionLogEntry,
    DeletionLogNode,
    SessionEvent,
)
from sessions_app.security.tokens import owner_id_for
from tests.deletion_log.test_receipts_core import V1_FIELDS, assert_only_allowed_fields
from tests.erasure.test_one_erasure import WAYS, _started
from tests.support.answers import answer_headers
from tests.support.factories import make_session
from tests.support.privacy import encodings, fixture_markers
from tests.support.session_client import say
from tests.support.waiting import wait_until

ROOT_DIR = Path(__file__).resolve().parents[2]
KEY_PATH = "/.well-known/deletion-log-key"


def _verifier(client) -> Verifier:
    answer = client.get(KEY_PATH)
    assert answer.status_code == 200 and answer["Content-Type"] == "text/plain; charset=utf-8"
    return Verifier.from_vkey(answer.content.decode().strip())


def _entries() -> list[DeletionEntry | DeletionEntryV1]:
    leaves = DeletionLogEntry.objects.order_by("index").values_list("leaf", flat=True)
    return [read_entry(bytes(leaf)) for leaf in leaves]


def _lookup(session_id: str, token: str) -> str:
    """The receipt lookup, as the token's holder computes it (the page, the verifier)."""
    return receipt_lookup(owner_id_for(token), session_id)


# --- One entry per erasure, whoever asks ------------------------------------------------------


def _past_the_ttl(client, admin_user, monkeypatch, session_id, token):
    with time_machine.travel(timezone.now() + dt.timedelta(hours=25)):
        purge.purge_expired(trigger=DeletionAudit.Trigger.TTL)


# The five ways into the one erasure (tests/erasure/test_one_erasure.py), and the scheduled purge of a
# session past its TTL but not its maximum age; WAYS["ttl"] travels 8 days: past the maximum age.
EXPECTED = {
    "api": ("api", "owner_delete"),
    "admin": ("admin", "admin"),
    "adk": ("adk", "adk_delete_session"),
    "ttl": ("ttl", "ttl_purge"),
    "max_age": ("ttl", "max_age"),
    "startup": ("startup", "startup_purge"),
}
DELETIONS = {**WAYS, "ttl": _past_the_ttl, "max_age": WAYS["ttl"]}


@pytest.mark.django_db
@pytest.mark.parametrize("way", list(EXPECTED))
def test_every_trigger_appends_exactly_one_entry_and_one_checkpoint(way, client, admin_user, monkeypatch):
    session_id, token = _started(client)
    session = AgentSession.objects.get(session_id=session_id)
    events = SessionEvent.objects.filter(agent_session=session).count()
    appended = []
    real_append = deletion_log.append

    def append(erased, trigger):
        # Called inside the erasure's transaction, after its rows are gone.
        appended.append((transaction.get_connection().in_atomic_block, AgentSession.objects.exists()))
        return real_append(erased, trigger)

    monkeypatch.setattr(deletion_log, "append", append)

    DELETIONS[way](client, admin_user, monkeypatch, session_id, token)

    audit_trigger, entry_trigger = EXPECTED[way]
    assert appended == [(True, False)]
    assert list(DeletionAudit.objects.values_list("trigger", "sessions_deleted")) == [(audit_trigger, 1)]
    [entry] = _entries()
    kind = TRIGGER_KINDS[entry_trigger]
    assert (entry.session, entry.trigger, entry.events_at_most) == (
        _lookup(session_id, token),
        kind,
        at_most(events, 1),
    )
    assert entry.bytes_at_most >= 1024 and entry.sealed_with_unstored_key
    assert entry.sqlite_secure_delete is (connection.vendor == "sqlite")
    [leaf] = DeletionLogEntry.objects.values_list("leaf", flat=True)
    assert_only_allowed_fields(bytes(leaf))  # whoever erased: the hour, the kind, rounded sizes
    [checkpoint] = DeletionLogCheckpoint.objects.all()
    assert checkpoint.size == 1 and deletion_log.verify_whole_log() == 1


def _plans_shown(client, session_id, token) -> int:
    """The plan versions the owner's metadata counts (from the sealed state, opened with the token)."""
    answer = client.get(f"/agent/sessions/{session_id}", headers={"X-Session-Token": token})
    assert answer.status_code == 200
    return answer.json()["plan_versions"]


@pytest.mark.django_db
def test_a_turn_whose_store_fails_leaves_the_plan_count_as_it_was(client, api, monkeypatch):
    session_id, token = _started(client)
    before = _plans_shown(client, session_id, token)
    real_store = TurnBuffer.store_pending

    def store_then_fail(self, *args, **kwargs):
        real_store(self, *args, **kwargs)  # the events, the state and the count, then a failure
        raise RuntimeError("the turn's transaction fails after its writes")

    monkeypatch.setattr(TurnBuffer, "store_pending", store_then_fail)
    failed = say(api, session_id, token, "Focus on remote roles")
    assert failed.status_code == 500
    monkeypatch.setattr(TurnBuffer, "store_pending", real_store)
    stored = AgentSession.objects.get(session_id=session_id).plan_versions
    assert stored == before == _plans_shown(client, session_id, token)


@pytest.mark.django_db(transaction=True)
def test_the_migration_leaves_older_sessions_not_counted_and_new_ones_at_zero():
    """Migration 0008 cannot open a stored state to count its plans: an older session's counter is
    NULL ("not counted", not a false 0) until its next turn; a session made after starts at 0."""
    from django.db.migrations.executor import MigrationExecutor

    before, after = [("sessions_app", "0007_deletion_log")], [("sessions_app", "0008_plan_versions_counted")]
    executor = MigrationExecutor(connection)
    try:
        executor.migrate(before)
        old_model = executor.loader.project_state(before).apps.get_model("sessions_app", "AgentSession")
        now = timezone.now()
        old_model.objects.create(
            app_name="resume_agent", owner_id="anon-older", state=b"sealed", created_at=now, last_activity_at=now
        )
        executor = MigrationExecutor(connection)
        executor.migrate(after)
    finally:
        MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    make_session(owner_id="anon-newer")
    counts = dict(AgentSession.objects.values_list("owner_id", "plan_versions"))
    assert counts == {"anon-older": None, "anon-newer": 0}


def test_the_service_triggers_and_the_entry_triggers_agree():
    """Every trigger of the audit has its entry trigger, and every entry trigger is one's."""
    now = dt.datetime(2026, 5, 1, tzinfo=dt.UTC)
    fresh, old = now - dt.timedelta(hours=30), now - dt.timedelta(days=8)
    produced = {
        trigger: {deletion_log.entry_trigger(trigger, created, now) for created in (fresh, old)}
        for trigger in DeletionAudit.Trigger
    }
    assert set().union(*produced.values()) == set(TRIGGERS)
    assert produced[DeletionAudit.Trigger.TTL] == produced[DeletionAudit.Trigger.COMMAND] == {"ttl_purge", "max_age"}
    assert all(len(names) == 1 for trigger, names in produced.items() if trigger not in deletion_log.EXPIRY_TRIGGERS)


@pytest.mark.django_db
def test_a_purge_batch_is_one_checkpoint_and_the_audit_and_the_log_agree(settings):
    settings.PURGE_BATCH_SIZE, settings.PURGE_BATCH_PAUSE_SECONDS = 4, 0
    old = timezone.now() - dt.timedelta(days=2)
    sessions = {}
    for number in range(10):
        owner_id = f"anon-{number:032x}"
        sessions[owner_id] = make_session(owner_id=owner_id, last_activity=old, events=number % 3).session_id
    with transaction.atomic():
        erasure.erase(AgentSession.objects.filter(owner_id="anon-" + "0" * 32), DeletionAudit.Trigger.API)

    result = purge.purge_expired(trigger=DeletionAudit.Trigger.TTL)

    assert (result.sessions, result.batches) == (9, 3)
    sizes = list(DeletionLogCheckpoint.objects.order_by("size").values_list("size", flat=True))
    assert sizes == [1, 5, 9, 10]  # one checkpoint per erase call: the DELETE, then each batch
    audited = sum(DeletionAudit.objects.values_list("sessions_deleted", flat=True))
    assert audited == DeletionLogEntry.objects.count() == len(set(e.session for e in _entries())) == 10
    # The purge holds no token: it files each entry under the lookup of the owner id it still has.
    assert {e.session for e in _entries()} == {receipt_lookup(owner, id_) for owner, id_ in sessions.items()}
    assert [e.trigger for e in _entries()] == ["owner"] + ["retention"] * 9
    assert deletion_log.verify_whole_log() == 10


# --- All or nothing ---------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_failed_erasure_leaves_no_entry(monkeypatch):
    make_session()

    def fails(*args, **kwargs):
        raise RuntimeError("the audit row could not be written")

    # The caller's transaction fails after the erasure appended its entry (a purge's batch, the
    # API's liveness check): the entry goes with the rolled-back erasure.
    with pytest.raises(RuntimeError), transaction.atomic():
        assert erasure.erase(AgentSession.objects.all(), DeletionAudit.Trigger.ADMIN).log_size == 1
        fails()
    assert AgentSession.objects.count() == 1
    assert not DeletionLogEntry.objects.exists() and not DeletionLogCheckpoint.objects.exists()
    # The erasure fails mid-way, after the rows' deletes and before its audit row.
    monkeypatch.setattr(erasure, "record_erasure", fails)
    with pytest.raises(RuntimeError):
        erasure.erase_sessions(AgentSession.objects.all(), trigger=DeletionAudit.Trigger.ADMIN)
    assert AgentSession.objects.count() == 1
    assert not DeletionLogEntry.objects.exists() and not DeletionLogCheckpoint.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_failed_append_leaves_the_session_in_place(monkeypatch):
    make_session()

    class Unsigned(Exception):
        pass

    def broken_signer():
        raise Unsigned

    monkeypatch.setattr(log_key, "signer", broken_signer)
    with pytest.raises(Unsigned):
        erasure.erase_sessions(AgentSession.objects.all(), trigger=DeletionAudit.Trigger.ADMIN)
    assert AgentSession.objects.count() == 1 and SessionEvent.objects.count() == 2
    assert not DeletionAudit.objects.exists() and not DeletionLogEntry.objects.exists()


@pytest.mark.django_db
def test_an_erasure_of_nothing_signs_nothing():
    with transaction.atomic():
        erased = erasure.erase(AgentSession.objects.none(), DeletionAudit.Trigger.API)
    assert erased.log_size == 0 and not DeletionLogCheckpoint.objects.exists()


# --- Receipts over HTTP ----------------------------------------------------------------------


def _verify_with_the_command_line(receipt: bytes, vkey: str, tmp_path: Path, *options: str, key: str = "") -> bytes:
    """The verifier as a person runs it: the module alone, no Django, in a process of its own;
    the session key (if any) on standard input. Returns its output; fails unless it verified."""
    path = tmp_path / "receipt.tlog-proof"
    path.write_bytes(receipt)
    environment = {name: value for name, value in os.environ.items() if name != "DJANGO_SETTINGS_MODULE"}
    command = [sys.executable, "-m", "sessions_app.deletion_log.formats.verify", "--key", vkey, *options, str(path)]
    result = subprocess.run(command, cwd=ROOT_DIR, env=environment, input=key.encode(), capture_output=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.django_db
def test_the_delete_points_at_a_receipt_that_verifies_offline(client, tmp_path):
    session_id, token = _started(client)
    answer = client.delete(f"/agent/sessions/{session_id}", headers={"X-Session-Token": token})
    assert answer.status_code == 204
    assert answer["Deletion-Receipt"] == f"/deletions/{_lookup(session_id, token)}"

    fetched = client.get(answer["Deletion-Receipt"])  # no token
    assert fetched.status_code == 200 and fetched["Content-Type"] == "text/plain; charset=utf-8"
    verifier = _verifier(client)
    verified = verify_receipt(fetched.content, verifier, whose=WhoseSession.from_session_key(f"{session_id}.{token}"))
    assert (verified.index, verified.checkpoint.size, verified.entry.trigger) == (0, 1, "owner")
    with pytest.raises(Rejected):
        verify_receipt(fetched.content, verifier, whose=WhoseSession.from_session_key(f"{session_id}.{token}x"))
    with pytest.raises(Rejected):  # the id alone names no entry
        verify_receipt(fetched.content, verifier, session_id)

    out = _verify_with_the_command_line(
        fetched.content, verifier.vkey, tmp_path, "--session-key-file", "-", key=f"{session_id}.{token}\n"
    )
    assert out.startswith(b"Verified: the session given was erased in the hour from")


@pytest.mark.django_db
@pytest.mark.parametrize("way", ["api", "ttl", "max_age", "admin", "startup"])
def test_a_stranger_holding_the_session_id_learns_nothing_from_the_log(way, client, admin_user, monkeypatch):
    """The finding (issue 39, 3): with the id alone (from a log line, a file name), the receipt's
    old address answers exactly what an id that never existed gets, after any erasure; and no
    public read of the log holds the id, its SHA-256 or the receipt lookup."""
    never = client.get(f"/deletions/{session_digest('never-existed')}")
    assert never.status_code == 404
    session_id, token = _started(client)
    DELETIONS[way](client, admin_user, monkeypatch, session_id, token)
    assert not AgentSession.objects.filter(session_id=session_id).exists()

    stranger = client.get(f"/deletions/{session_digest(session_id)}")
    assert (stranger.status_code, stranger.content, answer_headers(stranger)) == (
        404,
        never.content,
        answer_headers(never),
    )
    other_token = client.get(f"/deletions/{_lookup(session_id, token + 'x')}")  # a guessed token
    assert (other_token.status_code, other_token.content) == (404, never.content)
    public = [client.get(path).content for path in ("/deletions/checkpoint", KEY_PATH)]
    public.append(client.get("/deletions/consistency", {"from": 1}).content)
    for named in (session_id, session_digest(session_id), _lookup(session_id, token)):
        assert not any(named.encode() in answer for answer in public), named
    assert client.get(f"/deletions/{_lookup(session_id, token)}").status_code == 200  # the token's holder


@pytest.mark.django_db
def test_a_receipt_found_after_a_purge_and_the_log_only_grew(client, tmp_path):
    """A person who lost the race to the purge still finds the receipt with their key (the purge
    held no token, only the owner id); a client holding an older checkpoint checks that the newer
    one only added to it."""
    first, first_token = _started(client)
    with time_machine.travel(timezone.now() + dt.timedelta(hours=25)):
        purge.purge_expired(trigger=DeletionAudit.Trigger.TTL)
    older = client.get(f"/deletions/{_lookup(first, first_token)}").content
    second, token = _started(client)
    client.delete(f"/agent/sessions/{second}", headers={"X-Session-Token": token})

    newer = client.get("/deletions/checkpoint").content
    proof = client.get("/deletions/consistency", {"from": 1, "to": 2})
    assert proof.status_code == 200
    before, after = verify_log_grew(older, newer, proof.content, _verifier(client))
    assert (before.size, after.size) == (1, 2)
    assert client.get("/deletions/consistency", {"from": 1}).content == proof.content  # `to`: the latest
    # The first receipt, fetched again, is proved against the newer checkpoint, and names the
    # session of the key its holder kept; offline, with the key on standard input.
    again = client.get(f"/deletions/{_lookup(first, first_token)}").content
    whose = WhoseSession.from_session_key(f"{first}.{first_token}")
    assert verify_receipt(again, _verifier(client), whose=whose).entry.trigger == "retention"
    out = _verify_with_the_command_line(
        again, _verifier(client).vkey, tmp_path, "--session-key-file", "-", key=f"{first}.{first_token}"
    )
    assert b"(retention: at most " in out


@pytest.mark.django_db
def test_misses_are_the_one_404_and_bad_sizes_a_400(client):
    session_id, token = _started(client)
    uniform = client.get(f"/agent/sessions/{session_id}", headers={"X-Session-Token": "wrong"})
    assert uniform.status_code == 404
    missing = [
        f"/deletions/{_lookup(session_id, token)}",  # a live session has no receipt
        f"/deletions/{session_digest(session_id)}",
        f"/deletions/{session_digest('never-existed')}",
        "/deletions/not-a-digest",
        "/deletions/checkpoint",  # nothing erased yet
    ]
    for path in missing:
        answer = client.get(path)
        assert (answer.status_code, answer.content) == (404, uniform.content), path
        assert "Allow" not in answer
    client.delete(f"/agent/sessions/{session_id}", headers={"X-Session-Token": token})
    for query in ({"from": 1, "to": 3}, {"from": 2, "to": 1}, {"from": 2}):  # never signed; shrank; beyond
        assert client.get("/deletions/consistency", query).content == uniform.content, query
    for query in ({}, {"from": 0}, {"from": "x"}, {"from": 1, "to": "y"}, {"from": 2**64}):
        answer = client.get("/deletions/consistency", query)
        assert answer.status_code == 400 and answer["Content-Type"] == "application/json", query
    refused = client.get(f"/deletions/{_lookup(session_id, token)}", headers={"Accept": "application/json"})
    assert refused.status_code == 406 and refused["Content-Type"] == "application/json"


def _a_log_written_before_issue_39(session_ids: list[str]) -> list[bytes]:
    """Format-1 entries and their signed checkpoint, as the code before issue 39 appended them, with
    the subtrees migration 0009 stores for them."""
    signer, edge, leaves = log_key.signer(), RightEdge(), []
    for index, session_id in enumerate(session_ids):
        leaf = DeletionEntryV1.for_session(session_id, **V1_FIELDS).leaf_bytes()
        DeletionLogEntry.objects.create(
            index=index, session_digest=session_digest(session_id), leaf=leaf, leaf_hash=leaf_hash(leaf)
        )
        for height, node_index, node in edge.append(leaf_hash(leaf)):
            DeletionLogNode.objects.create(position=post_order(height, node_index), node_hash=node)
        leaves.append(leaf)
    signed = Checkpoint(signer.name, edge.size, edge.root()).sign(signer)
    DeletionLogCheckpoint.objects.create(
        size=edge.size, root=edge.root(), signed=signed, right_edge=edge.to_bytes(), signed_at=timezone.now()
    )
    return leaves


@pytest.mark.django_db
def test_entries_written_before_keep_verifying_and_the_tree_just_continues(client, tmp_path):
    """A log with format-1 entries: the next erasure appends a format-2 entry to the same tree, the
    whole-log check reads both, the log only grew, and a format-1 receipt given before verifies
    (with the session id, as it did); the id's SHA-256 no longer serves it to anyone."""
    never = client.get(f"/deletions/{session_digest('never-existed')}").content
    old_ids = ["4f5e6d7c-0000-4000-8000-0000000000a1", "4f5e6d7c-0000-4000-8000-0000000000a2"]
    leaves = _a_log_written_before_issue_39(old_ids)
    older = client.get("/deletions/checkpoint").content
    session_id, token = _started(client)
    assert client.delete(f"/agent/sessions/{session_id}", headers={"X-Session-Token": token}).status_code == 204

    assert deletion_log.verify_whole_log() == 3
    assert [type(entry) for entry in _entries()] == [DeletionEntryV1, DeletionEntryV1, DeletionEntry]
    verifier, newer = _verifier(client), client.get("/deletions/checkpoint").content
    proof = client.get("/deletions/consistency", {"from": 2}).content
    assert [c.size for c in verify_log_grew(older, newer, proof, verifier)] == [2, 3]
    tree = MerkleTree(
        bytes(hashed) for hashed in DeletionLogEntry.objects.order_by("index").values_list("leaf_hash", flat=True)
    )
    kept = Receipt(leaves[1], 1, tuple(tree.inclusion_proof(1, 3)), newer.decode()).text().encode()
    assert verify_receipt(kept, verifier, old_ids[1]).entry.trigger == "owner_delete"
    with pytest.raises(Rejected):
        verify_receipt(kept, verifier, old_ids[0])
    out = _verify_with_the_command_line(kept, verifier.vkey, tmp_path, "--session-id", old_ids[1])
    assert out.startswith(b"Verified: the session given was erased at 2026-05-02 09:14:07 UTC (owner_delete")
    for session in old_ids:
        assert client.get(f"/deletions/{session_digest(session)}").content == never
    assert verify_receipt(client.get(f"/deletions/{_lookup(session_id, token)}").content, verifier).index == 2


@pytest.mark.django_db
def test_the_log_reads_are_throttled_per_client(client, settings):
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {**rates, "deletion_log": "2/min"}}
    assert [client.get(KEY_PATH).status_code for _ in range(3)] == [200, 200, 429]


def test_the_key_command_prints_the_served_key(client, capsys):
    call_command("deletion_log_key")
    assert capsys.readouterr().out.strip() == log_key.verifier().vkey
    assert log_key.verifier().name == "localhost/resume-agent/deletion-log"


def test_a_key_is_made_once_owner_only_or_taken_from_the_environment(settings, tmp_path):
    settings.DELETION_LOG_KEY_FILE = tmp_path / "deletion_log_key"
    made = log_key.signer()
    assert (tmp_path / "deletion_log_key").stat().st_mode & 0o777 == 0o600
    log_key._signer.cache_clear()
    assert log_key.signer().verifier == made.verifier  # read back, not made again
    given = type(made).generate(settings.DELETION_LOG_ORIGIN)
    settings.DELETION_LOG_SIGNING_KEY = given.skey
    assert log_key.verifier() == given.verifier
    settings.DELETION_LOG_ORIGIN = "elsewhere.example/log"
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured):
        log_key.signer()


# --- What the log holds, and that it stays ----------------------------------------------------


@pytest.mark.django_db(transaction=True)  # committed: in the files, not only in a transaction's pages
def test_the_log_holds_no_content_token_or_owner_id(client, stored_files):
    session_id, token = _started(client)
    client.delete(f"/agent/sessions/{session_id}", headers={"X-Session-Token": token})
    assert DeletionLogEntry.objects.count() == 1
    # Nor the session id in any form a stranger could compute from it.
    forbidden = [*fixture_markers(), token, owner_id_for(token), "127.0.0.1", session_id, session_digest(session_id)]
    rows = [
        *DeletionLogEntry.objects.values_list("session_digest", "leaf", "leaf_hash"),
        *DeletionLogCheckpoint.objects.values_list("root", "signed", "right_edge"),
    ]
    stored = b"\n".join(value.encode() if isinstance(value, str) else bytes(value) for row in rows for value in row)
    found = [(marker, form) for marker in forbidden for form, needle in encodings(marker).items() if needle in stored]
    assert found == []
    # The database's own bytes: on SQLite, the whole file (secure_delete overwrote the session);
    # on PostgreSQL, the log's tables' files (its WAL still holds the session's inserts).
    data = b"".join(path.read_bytes() for path in _log_files(stored_files))
    assert _lookup(session_id, token).encode() in data  # the scan does see the log's rows
    assert [(m, f) for m in forbidden for f, needle in encodings(m).items() if needle in data] == []


def _log_files(stored_files) -> list[Path]:
    if connection.vendor == "sqlite":
        return stored_files()
    stored_files()  # a CHECKPOINT: the rows are in the files
    paths = []
    with connection.cursor() as cursor:
        cursor.execute("SHOW data_directory")
        data_directory = Path(cursor.fetchone()[0])
        for model in (DeletionLogEntry, DeletionLogCheckpoint):
            table = model._meta.db_table
            cursor.execute(
                "SELECT pg_relation_filepath(oid) FROM pg_class WHERE oid = %s::regclass"
                " OR oid = (SELECT reltoastrelid FROM pg_class WHERE oid = %s::regclass)",
                [table, table],
            )
            paths += [data_directory / row[0] for row in cursor.fetchall() if row[0]]
    return [path for path in paths if path.exists()]


@pytest.mark.django_db
def test_the_log_survives_every_purge(client):
    session_id, token = _started(client)
    client.delete(f"/agent/sessions/{session_id}", headers={"X-Session-Token": token})
    make_session(last_activity=timezone.now() - dt.timedelta(days=2))
    make_session(owner_id="anon-" + "1" * 32)
    purge.purge_expired(trigger=DeletionAudit.Trigger.TTL)
    purge.erase_all_sessions()
    assert not AgentSession.objects.exists()
    assert [entry.trigger for entry in _entries()] == ["owner", "retention", "operator"]
    assert deletion_log.verify_whole_log() == 3
    assert client.get(f"/deletions/{_lookup(session_id, token)}").status_code == 200


@pytest.mark.django_db
def test_verifying_the_whole_log_finds_a_changed_entry_or_checkpoint():
    for number in range(3):
        make_session(owner_id=f"anon-{number:032x}")
        with transaction.atomic():
            erasure.erase(AgentSession.objects.all(), DeletionAudit.Trigger.ADMIN)
    assert deletion_log.verify_whole_log() == 3
    entry = DeletionLogEntry.objects.get(index=1)
    changed = bytes(entry.leaf).replace(b'"trigger":"operator"', b'"trigger":"retention"')
    DeletionLogEntry.objects.filter(index=1).update(leaf=changed, leaf_hash=leaf_hash(changed))
    with pytest.raises(deletion_log.LogBroken):
        deletion_log.verify_whole_log()
    with pytest.raises(deletion_log.LogBroken):  # the served proofs refuse a log that was rewritten
        deletion_log.receipt(entry.session_digest)


def test_the_right_edge_gives_the_trees_root_at_every_size():
    tree, edge = MerkleTree(), RightEdge()
    for number in range(70):
        assert edge.root() == tree.root()
        restored = RightEdge.from_bytes(edge.size, edge.to_bytes())
        assert restored.root() == edge.root()
        leaf = leaf_hash(f"entry {number}".encode())
        tree.append(leaf)
        edge.append(leaf)


# --- Two servers at once (PostgreSQL) ---------------------------------------------------------


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_servers_erasing_at_once_append_to_one_tree():
    """Two connections (two servers) erase at once, each in its own transactions: the entries get
    one order and one tree, and no two checkpoints of one size differ (the advisory lock)."""
    for number in range(40):
        make_session(owner_id=f"anon-{number:032x}", events=1)
    start = threading.Barrier(2)
    errors = []

    def server(parity: int) -> None:
        try:
            start.wait()
            for number in range(parity, 40, 2):
                erasure.erase_sessions(
                    AgentSession.objects.filter(owner_id=f"anon-{number:032x}"), trigger=DeletionAudit.Trigger.API
                )
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=server, args=(parity,)) for parity in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert DeletionLogEntry.objects.count() == 40 and DeletionLogCheckpoint.objects.count() == 40
    assert deletion_log.verify_whole_log() == 40
    signed = DeletionLogCheckpoint.objects.order_by("size").values_list("signed", flat=True)
    assert [Checkpoint.parse(note.split("\n\n")[0] + "\n").size for note in signed] == list(range(1, 41))
    assert Receipt.parse(deletion_log.receipt(session_digest_of(0))).index in range(40)


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_an_erasure_waits_for_the_writer_lock_another_server_holds():
    """The lock itself, without racing: while another connection (another server's erasure) holds
    the log's writer lock, an erasure waits for it inside PostgreSQL (pg_locks shows it waiting),
    appends nothing meanwhile, and appends once the holder's transaction ends."""
    make_session(events=1)
    holder = connections.create_connection("default")  # another server's connection
    erasing = threading.Thread(target=_erase_all_in_a_thread)
    try:
        holder.set_autocommit(False)
        with holder.cursor() as cursor:
            cursor.execute(deletion_log.WRITER_LOCK_SQL, [deletion_log.WRITER_LOCK])
        erasing.start()
        assert wait_until(_an_erasure_waits_for_the_writer_lock, timeout=30), "the erasure did not wait for the lock"
        assert erasing.is_alive() and not DeletionLogEntry.objects.exists()
        holder.rollback()  # the other server's transaction ends: its lock goes with it
        erasing.join(30)
        assert not erasing.is_alive()
    finally:
        holder.close()
    assert not AgentSession.objects.exists() and deletion_log.verify_whole_log() == 1


def _erase_all_in_a_thread() -> None:
    try:
        erasure.erase_sessions(AgentSession.objects.all(), trigger=DeletionAudit.Trigger.ADMIN)
    finally:
        connections.close_all()


def _an_erasure_waits_for_the_writer_lock() -> bool:
    # A bigint advisory key shows in pg_locks as its high and low 32 bits.
    high, low = deletion_log.WRITER_LOCK >> 32, deletion_log.WRITER_LOCK & 0xFFFFFFFF
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            " AND classid = %s AND objid = %s AND objsubid = 1",
            [high, low],
        )
        return cursor.fetchone()[0] == 1


def session_digest_of(number: int) -> str:
    return DeletionLogEntry.objects.order_by("index").values_list("session_digest", flat=True)[number]


def test_the_system_check_reports_a_key_that_cannot_sign(settings):
    assert log_key.check_signing_key() == []
    settings.DELETION_LOG_SIGNING_KEY = "not a key"
    [error] = log_key.check_signing_key()
    assert error.id == "sessions_app.E008" and "DELETION_LOG_SIGNING_KEY" in error.msg


def test_no_code_updates_or_deletes_the_log():
    """Append-only: the service's code creates the log's rows and reads them, nothing else."""
    import re

    writes = re.compile(r"DeletionLog(Entry|Checkpoint)\b[^\n]*\.(update|delete|save|bulk_update|update_or_create)\(")
    found = [
        f"{path.relative_to(ROOT_DIR)}:{number}"
        for path in (ROOT_DIR / "sessions_app").rglob("*.py")
        if "migrations" not in path.parts
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if writes.search(line)
    ]
    assert found == []
