"""The pure core of deletion receipts (issue 31): RFC 6962 trees and proofs, C2SP signed notes and
checkpoints, the entry's leaf bytes, tlog-proof receipts and the offline verifier. No database.

Known answers come from public test data: transparency-dev/merkle (testonly/constants.go,
testonly/reference_test.go, rfc6962/rfc6962_test.go, and its testdata/ probes gathered in
tests/fixtures/rfc6962_probes.json) and golang.org/x/mod's sumdb/note/note_test.go, plus the
example in C2SP's signed-note.md.
"""

import base64
import dataclasses
import hashlib
import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessions_app.deletion_log.formats import merkle
from sessions_app.deletion_log.formats.checkpoint import Checkpoint, open_checkpoint
from sessions_app.deletion_log.formats.entry import (
    TRIGGER_KINDS,
    TRIGGERS,
    DeletionEntry,
    DeletionEntryV1,
    at_most,
    read_entry,
    session_digest,
)
from sessions_app.deletion_log.formats.lookup import owner_id_for, receipt_lookup, receipt_lookup_for_key
from sessions_app.deletion_log.formats.merkle import EMPTY_ROOT, MerkleTree, leaf_hash, node_hash
from sessions_app.deletion_log.formats.note import Signer, Verifier, open_note
from sessions_app.deletion_log.formats.receipt import Receipt, hashes_text, parse_hashes
from sessions_app.deletion_log.formats.strict import Rejected
from sessions_app.deletion_log.formats.verify import WhoseSession, main, verify_log_grew, verify_receipt

pytestmark = pytest.mark.backend_independent

ROOT_DIR = Path(__file__).parents[2]
PROBES = json.loads((ROOT_DIR / "tests" / "fixtures" / "rfc6962_probes.json").read_text())
# transparency-dev's testonly.LeafInputs() and RootHashes() (sizes 0 to 8).
LEAF_INPUTS = [bytes.fromhex(value) for value in ["", "00", "10", "2021", "3031", "40414243", "5051525354555657"]]
LEAF_INPUTS.append(bytes.fromhex("606162636465666768696a6b6c6d6e6f"))
ROOTS = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
# Node hashes of that tree named as in testonly/reference_test.go's proofs.
A1 = "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"  # leaf 1
A0 = "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"  # leaf 0
A4 = "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"  # leaf 4
G = "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"  # leaves 0-1
H = "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"  # leaves 2-3
I = "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"  # noqa: E741 (leaves 4-5)
J = "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"  # leaves 6-7
K = "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"  # leaves 0-3
L = "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"  # leaves 4-7
INCLUSION_PROOFS = [(0, 1, []), (0, 2, [A1]), (1, 2, [A0]), (2, 3, [G]), (1, 5, [A0, H, A4]), (0, 8, [A1, H, L])]
INCLUSION_PROOFS.append((5, 8, [A4, J, K]))
CONSISTENCY_PROOFS = [(1, 1, []), (1, 8, [A1, H, L]), (2, 5, [H, A4]), (6, 8, [I, J, K])]
# Where this verifier is stricter than transparency-dev's: a root is 32 bytes even when the two
# sizes are equal and nothing is hashed.
STRICTER_THAN_GO = {"testdata/consistency/additional/sizes-are-equal-one-and-proof-is-empty.json"}


def b64(text: str | None) -> bytes:
    return base64.b64decode(text or "")


def reference_tree() -> MerkleTree:
    return MerkleTree(leaf_hash(data) for data in LEAF_INPUTS)


def rejected(check, *args, **kwargs) -> bool:
    try:
        check(*args, **kwargs)
    except Rejected:
        return True
    return False


# --- RFC 6962 hashing and proofs -------------------------------------------------------------


def test_hashes_known_answers():
    # rfc6962/rfc6962_test.go: the empty tree is not the empty leaf; leaves and nodes are prefixed.
    assert EMPTY_ROOT.hex() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert leaf_hash(b"").hex() == "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
    assert leaf_hash(b"L123456").hex() == "395aa064aa4c29f7010acfe3f25db9485bbd4b91897b6ad7ad547639252b4d56"
    assert node_hash(b"N123", b"N456").hex() == "aa217fe888e47007fa15edab33c2b492a722cb106c64667fc2b044444de66bbb"


@pytest.mark.parametrize("size", range(9))
def test_roots_of_the_reference_tree(size):
    assert reference_tree().root(size).hex() == ROOTS[size]
    assert MerkleTree(leaf_hash(data) for data in LEAF_INPUTS[:size]).root().hex() == ROOTS[size]


@pytest.mark.parametrize(("index", "size", "expected"), INCLUSION_PROOFS)
def test_inclusion_proofs_of_the_reference_tree(index, size, expected):
    tree = reference_tree()
    proof = tree.inclusion_proof(index, size)
    assert [node.hex() for node in proof] == expected
    merkle.verify_inclusion(leaf_hash(LEAF_INPUTS[index]), index, size, proof, tree.root(size))


@pytest.mark.parametrize(("old_size", "size", "expected"), CONSISTENCY_PROOFS)
def test_consistency_proofs_of_the_reference_tree(old_size, size, expected):
    tree = reference_tree()
    proof = tree.consistency_proof(old_size, size)
    assert [node.hex() for node in proof] == expected
    merkle.verify_consistency(old_size, size, proof, tree.root(old_size), tree.root(size))


@pytest.mark.parametrize("probe", PROBES["inclusion"], ids=lambda probe: probe["file"])
def test_inclusion_probes(probe):
    args = (b64(probe["leafHash"]), probe["leafIdx"], probe["treeSize"], [b64(node) for node in probe["proof"] or []])
    assert rejected(merkle.verify_inclusion, *args, b64(probe["root"])) == probe["wantErr"]


@pytest.mark.parametrize("probe", PROBES["consistency"], ids=lambda probe: probe["file"])
def test_consistency_probes(probe):
    proof = [b64(node) for node in probe["proof"] or []]
    args = (probe["size1"], probe["size2"], proof, b64(probe["root1"]), b64(probe["root2"]))
    assert rejected(merkle.verify_consistency, *args) == (probe["wantErr"] or probe["file"] in STRICTER_THAN_GO)


def mth(leaves: list[bytes]) -> bytes:
    """RFC 6962 §2.1's MTH written from the text, slow and plain, to hold the tree to."""
    if not leaves:
        return EMPTY_ROOT
    if len(leaves) == 1:
        return leaves[0]
    split = 1 << ((len(leaves) - 1).bit_length() - 1)
    return node_hash(mth(leaves[:split]), mth(leaves[split:]))


def path(index: int, leaves: list[bytes]) -> list[bytes]:
    if len(leaves) == 1:
        return []
    split = 1 << ((len(leaves) - 1).bit_length() - 1)
    if index < split:
        return path(index, leaves[:split]) + [mth(leaves[split:])]
    return path(index - split, leaves[split:]) + [mth(leaves[:split])]


def subproof(old_size: int, leaves: list[bytes], whole: bool) -> list[bytes]:
    if old_size == len(leaves):
        return [] if whole else [mth(leaves)]
    split = 1 << ((len(leaves) - 1).bit_length() - 1)
    if old_size <= split:
        return subproof(old_size, leaves[:split], whole) + [mth(leaves[split:])]
    return subproof(old_size - split, leaves[split:], False) + [mth(leaves[:split])]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(1, 70).flatmap(lambda size: st.tuples(st.just(size), st.integers(1, size), st.integers(1, 70))))
def test_proofs_match_the_rfc_text_and_verify(sizes):
    size, old_size, grown = sizes
    leaves = [leaf_hash(i.to_bytes(2, "big")) for i in range(size + grown)]
    tree = MerkleTree(leaves)
    assert tree.root(size) == mth(leaves[:size])
    for index in range(size):
        proof = tree.inclusion_proof(index, size)
        assert proof == path(index, leaves[:size])
        merkle.verify_inclusion(leaves[index], index, size, proof, tree.root(size))
    proof = tree.consistency_proof(old_size, size)
    assert proof == subproof(old_size, leaves[:size], True)
    merkle.verify_consistency(old_size, size, proof, tree.root(old_size), tree.root(size))


def test_proving_every_entry_is_not_quadratic(monkeypatch):
    # The stored complete subtrees leave only the right edge to hash: O(log² n) a proof. Hashing
    # each sibling subtree from its leaves would cost about n a proof, 16 million here.
    leaves = [leaf_hash(i.to_bytes(2, "big")) for i in range(4095)]
    tree = MerkleTree(leaves)
    hashed = []
    monkeypatch.setattr(merkle, "node_hash", lambda left, right: hashed.append(1) or b"\0" * 32)
    for index in range(len(leaves)):
        tree.inclusion_proof(index)
    tree.consistency_proof(1000)
    assert len(hashed) < len(leaves) * 12 * 12


def test_out_of_range_requests():
    tree = reference_tree()
    for bad in [lambda: tree.inclusion_proof(3, 3), lambda: tree.root(9), lambda: tree.consistency_proof(0, 4)]:
        with pytest.raises(IndexError):
            bad()
    with pytest.raises(ValueError):
        tree.append(b"short")


def test_a_changed_proof_hash_or_leaf_is_rejected():
    tree = reference_tree()
    root = tree.root()
    for index in range(8):
        proof = tree.inclusion_proof(index)
        for position in range(len(proof)):
            changed = [*proof]
            changed[position] = hashlib.sha256(changed[position]).digest()
            assert rejected(merkle.verify_inclusion, leaf_hash(LEAF_INPUTS[index]), index, 8, changed, root)
        assert rejected(merkle.verify_inclusion, leaf_hash(b"other"), index, 8, proof, root)
        assert rejected(merkle.verify_inclusion, leaf_hash(LEAF_INPUTS[index]), index ^ 1, 8, proof, root)


# --- Signed notes (golang.org/x/mod sumdb/note/note_test.go, C2SP signed-note.md) --------------

PETER_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
PETER_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
NOTE_TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
PETER_SIGNATURE = "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM="
PETER_SIG = f"— PeterNeumann {PETER_SIGNATURE}\n"
ENOCH_SIG = "— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n"


def test_go_signer_key_signs_exactly_as_go():
    # Ed25519 is deterministic, so the same key and text give Go's signature byte for byte.
    signer = Signer.from_skey(PETER_SKEY)
    assert signer.verifier.vkey == PETER_VKEY
    assert signer.skey == PETER_SKEY
    assert signer.sign(NOTE_TEXT) == NOTE_TEXT + "\n" + PETER_SIG


def test_go_signed_note_opens_with_either_known_key_and_skips_unknown_ones():
    peter, enoch = Verifier.from_vkey(PETER_VKEY), Verifier.from_vkey(ENOCH_VKEY)
    message = NOTE_TEXT + "\n" + PETER_SIG + ENOCH_SIG
    assert open_note(message, [peter]) == NOTE_TEXT
    assert open_note(message, [enoch]) == NOTE_TEXT
    assert open_note(message, [peter, enoch]) == NOTE_TEXT
    assert rejected(open_note, message, [])
    assert rejected(open_note, NOTE_TEXT + "\n" + PETER_SIG, [enoch])


def test_c2sp_signed_note_example():
    verifier = Verifier.from_vkey("example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k")
    signature = "Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM="
    text = "This is an example message.\n"
    assert open_note(f"{text}\n— example.com/foo {signature}\n", [verifier]) == text


def test_malformed_notes_are_rejected():
    peter = Verifier.from_vkey(PETER_VKEY)
    # note_test.go's badMsgs, its corrupted signature, and Go's limit on signatures.
    bad_messages = [
        NOTE_TEXT,
        NOTE_TEXT + "\n",
        NOTE_TEXT + "\n" + PETER_SIG[:-1],
        "\x01" + NOTE_TEXT + "\n" + PETER_SIG,
        NOTE_TEXT + f"\n— Bad Name {PETER_SIGNATURE}",
        NOTE_TEXT + "\n" + PETER_SIG + "Unexpected line.\n",
        NOTE_TEXT + "\n" + PETER_SIG[:60] + "ABCD" + PETER_SIG[60:],
        NOTE_TEXT + "\n" + PETER_SIG * 101,
        # A known key's failing signature rejects the note even beside a good one.
        NOTE_TEXT + "\n" + PETER_SIG + PETER_SIG[:60] + "ABCD" + PETER_SIG[60:],
    ]
    for message in bad_messages:
        assert rejected(open_note, message, [peter]), message


def test_mangled_verifier_keys_are_rejected():
    # As note_test.go's TestNewVerifier: every proper substring and every byte moved by one.
    for start in range(len(PETER_VKEY) + 1):
        for end in range(start + 1, len(PETER_VKEY) + 1):
            if (start, end) != (0, len(PETER_VKEY)):
                assert rejected(Verifier.from_vkey, PETER_VKEY[start:end])
    for position, char in enumerate(PETER_VKEY):
        assert rejected(Verifier.from_vkey, PETER_VKEY[:position] + chr(ord(char) + 1) + PETER_VKEY[position + 1 :])
    assert rejected(Verifier.from_vkey, "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==")
    assert rejected(Verifier.from_vkey, "PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")


@pytest.mark.parametrize(
    ("vkey", "reason"),
    [
        ("PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10T", "the verifier key is not base64"),
        ("+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "is not <name>+<key id>+<key>"),
        ("PeterNeumann+c74f20a+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "is not <name>+<key id>+<key>"),
        ("PeterNeumann+C74F20A3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "is not <name>+<key id>+<key>"),
        ("PeterNeumann+c74f20a3+AhpjMqq/LDE4izWy10TW", "is not an Ed25519 key"),
        ("PeterNeumann+c74f20a3+AhpcMqq/LDE4izWy10TWZRpc2QcUPDhMQegwxbzhKqiB", "is not an Ed25519 key"),
        ("PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "ID does not match its name and key"),
    ],
)
def test_a_verifier_key_is_rejected_with_its_reason(vkey, reason):
    """A person whose receipt fails is told why: each check its own reason, not a later one's."""
    with pytest.raises(Rejected, match=re.escape(reason)):
        Verifier.from_vkey(vkey)


@pytest.mark.parametrize(
    ("skey", "reason"),
    [
        ("PRIVATE+KEY+PeterNeumann+c74f20a3", "a signer key is PRIVATE+KEY+<name>+<key id>+<key>"),
        ("PUBLIC+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz", "PRIVATE+KEY+<name>"),
        (
            "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDF",
            "the signer key is not base64",
        ),
        ("PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUv", "is not an Ed25519 key"),
        ("PRIVATE+KEY+PeterNeumann+c74f20a3+AoEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz", "is not an Ed25519 key"),
        ("PRIVATE+KEY+PeterNeumann+c74f20a4+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz", "ID does not match"),
        ("PRIVATE+KEY+Peter Neumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz", "a key name is not empty"),
    ],
)
def test_a_signer_key_is_rejected_with_its_reason(skey, reason):
    with pytest.raises(ValueError, match=re.escape(reason)):
        Signer.from_skey(skey)


def test_generated_keys_round_trip():
    signer = Signer.generate("deletions.example/log")
    assert Signer.from_skey(signer.skey).verifier == signer.verifier
    assert Verifier.from_vkey(signer.verifier.vkey) == signer.verifier
    assert open_note(signer.sign("one\n\ntwo\n"), [signer.verifier]) == "one\n\ntwo\n"
    for text in ["no newline", "two newlines\n\n", "a\ttab\n"]:
        with pytest.raises(ValueError):
            signer.sign(text)


# --- Checkpoints (C2SP tlog-checkpoint) -------------------------------------------------------

ORIGIN = "deletions.example/log"
LOG = Signer(ORIGIN, hashlib.sha256(b"the test log's seed").digest())  # fixed: the same bytes every run
OTHER_LOG = Signer(ORIGIN, hashlib.sha256(b"another log of the same name").digest())


def test_checkpoint_text_round_trip():
    checkpoint = Checkpoint(ORIGIN, 8, bytes.fromhex(ROOTS[8]), ("extension",))
    text = checkpoint.text()
    assert text == f"{ORIGIN}\n8\n{base64.b64encode(checkpoint.root).decode()}\nextension\n"
    assert Checkpoint.parse(text) == checkpoint
    assert open_checkpoint(checkpoint.sign(LOG), LOG.verifier) == checkpoint


def test_malformed_checkpoints_are_rejected():
    root = "XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg="
    spare_bits_moved = root[:-2] + "h="  # decodes to the same bytes
    bad_texts = [
        f"{ORIGIN}\n8\n",
        f"{ORIGIN}\n08\n{root}\n",
        f"{ORIGIN}\n+8\n{root}\n",
        f"{ORIGIN}\n8\n{root}",
        f"{ORIGIN}\n8\n{root[:-4]}\n",
        f"{ORIGIN}\n8\n{root}\n\nextension\n",
        f"{ORIGIN}\n8\n{spare_bits_moved}\n",
        f"\n8\n{root}\n",
    ]
    assert base64.b64decode(root) == base64.b64decode(spare_bits_moved) == bytes.fromhex(ROOTS[8])
    for text in bad_texts:
        assert rejected(Checkpoint.parse, text), text


def test_a_checkpoint_counts_only_if_its_log_signed_it():
    checkpoint = Checkpoint(ORIGIN, 8, bytes.fromhex(ROOTS[8]))
    assert rejected(open_checkpoint, checkpoint.sign(OTHER_LOG), LOG.verifier)
    renamed = Signer("elsewhere.example/log", hashlib.sha256(b"the test log's seed").digest())
    assert rejected(open_checkpoint, renamed.sign(checkpoint.text()), renamed.verifier)
    # A witness's cosignature beside the log's is skipped, not a reason to refuse.
    witness = Signer("witness.example", hashlib.sha256(b"a witness").digest())
    cosigned = checkpoint.sign(LOG) + witness.sign(checkpoint.text()).split("\n\n")[1]
    assert open_checkpoint(cosigned, LOG.verifier) == checkpoint


# --- Entries ---------------------------------------------------------------------------------

SESSION_IDS = [f"4f5e6d7c-0000-4000-8000-00000000000{n}" for n in range(7)]
TOKENS = [f"fictional-token-{n}" for n in range(7)]
SESSION_KEYS = [f"{session_id}.{token}" for session_id, token in zip(SESSION_IDS, TOKENS, strict=True)]
LOOKUPS = [
    receipt_lookup(owner_id_for(token), session_id) for session_id, token in zip(SESSION_IDS, TOKENS, strict=True)
]
ERASURE = {
    "erased_at": datetime(2026, 5, 2, 11, 14, 7, 900000, tzinfo=timezone(timedelta(hours=2))),
    "trigger": "owner_delete",
    "events": 12,
    "bytes_erased": 48213,
    "sqlite_secure_delete": True,
    "sealed_with_unstored_key": True,
}
LEAF = (
    b'{"erased":{"bytes_at_most":65536,"events_at_most":16},"erased_hour":"2026-05-02T09:00:00Z",'
    b'"how":{"sealed_with_unstored_key":true,"sqlite_secure_delete":true},'
    b'"session":"SESSION","trigger":"owner","v":2}'
)
# Format 1, as entries were written before issue 39: they stay in logs and keep verifying.
V1_FIELDS = {
    "created": datetime(2026, 5, 1, 13, 42, 5, 123456, tzinfo=UTC),
    "erased_at": datetime(2026, 5, 2, 11, 14, 7, 900000, tzinfo=timezone(timedelta(hours=2))),
    "trigger": "owner_delete",
    "events": 12,
    "plan_versions": 3,
    "bytes_erased": 48213,
    "rows_deleted": 17,
    "sqlite_secure_delete": True,
    "sealed_with_unstored_key": True,
    "model_provider": "gemini",
}
LEAF_V1 = (
    b'{"created":"2026-05-01T13:00:00Z","erased":{"bytes":48213,"events":12,"plan_versions":3},'
    b'"erased_at":"2026-05-02T09:14:07Z","how":{"model_provider":"gemini","rows_deleted":17,'
    b'"sealed_with_unstored_key":true,"sqlite_secure_delete":true},'
    b'"session":"SESSION","trigger":"owner_delete","v":1}'
)


def entry_for(number: int, **changes) -> DeletionEntry:
    return DeletionEntry.for_erasure(LOOKUPS[number], **{**ERASURE, **changes})


def v1_entry_for(session_id: str, **changes) -> DeletionEntryV1:
    return DeletionEntryV1.for_session(session_id, **{**V1_FIELDS, **changes})


def test_the_receipt_lookup_is_the_documented_hmac():
    """A known answer (also computed with `openssl dgst -sha256 -hmac`): the page's script and the
    offline verifier compute the same value (tests/page/test_page_browser.py checks the script)."""
    owner_id = "anon-0123456789abcdef0123456789abcdef"
    expected = "babb7b81d91600d5b40f07bba3df9703a06fa11c7b14249656f1cf2a2a3b7ad8"
    assert receipt_lookup(owner_id, SESSION_IDS[0]) == expected
    assert owner_id_for(TOKENS[0]) == "anon-" + hashlib.sha256(TOKENS[0].encode()).hexdigest()[:32]
    assert receipt_lookup_for_key(SESSION_KEYS[0]) == LOOKUPS[0]
    # The id alone gives nothing: neither its SHA-256 nor an HMAC under another owner's id.
    assert LOOKUPS[0] not in {session_digest(SESSION_IDS[0]), receipt_lookup(owner_id_for(TOKENS[1]), SESSION_IDS[0])}
    for not_a_key in ("", SESSION_IDS[0], f"{SESSION_IDS[0]}.", f".{TOKENS[0]}"):
        with pytest.raises(ValueError):
            receipt_lookup_for_key(not_a_key)


def test_the_leaf_bytes_are_the_documented_canonical_json():
    entry = entry_for(0)
    assert entry.session == LOOKUPS[0]
    assert entry.leaf_bytes() == LEAF.replace(b"SESSION", LOOKUPS[0].encode())
    assert DeletionEntry.from_leaf_bytes(entry.leaf_bytes()) == entry == read_entry(entry.leaf_bytes())


# Every field an entry may hold, with the finest grain it may have (issue 39): nothing else, and
# nothing finer. An erasure in the same hour, of the same kind, in the same size buckets must
# give the same leaf whatever its second, its exact trigger or its exact counts.
ALLOWED_FIELDS = {
    "v": lambda value: value == 2,
    "session": lambda value: re.fullmatch(r"[0-9a-f]{64}", value) is not None,  # the lookup, not the id
    "erased_hour": lambda value: re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:00:00Z", value) is not None,
    "trigger": lambda value: value in {"owner", "retention", "operator"},
    "erased.events_at_most": lambda value: type(value) is int and value >= 1 and value & (value - 1) == 0,
    "erased.bytes_at_most": lambda value: type(value) is int and value >= 1024 and value & (value - 1) == 0,
    "how.sqlite_secure_delete": lambda value: type(value) is bool,
    "how.sealed_with_unstored_key": lambda value: type(value) is bool,
}


def leaf_fields(leaf: bytes) -> dict:
    """The leaf's JSON flattened to dotted paths."""
    flat = {}
    for name, value in json.loads(leaf).items():
        if isinstance(value, dict):
            flat.update({f"{name}.{inner}": inner_value for inner, inner_value in value.items()})
        else:
            flat[name] = value
    return flat


def assert_only_allowed_fields(leaf: bytes) -> None:
    fields = leaf_fields(leaf)
    assert set(fields) == set(ALLOWED_FIELDS), set(fields) ^ set(ALLOWED_FIELDS)
    for name, value in fields.items():
        assert ALLOWED_FIELDS[name](value), (name, value)


def same_bucket(bucket: int, floor: int) -> st.SearchStrategy[int]:
    """Any count that rounds up to `bucket` (a power of two, at least `floor`)."""
    return st.integers(0 if bucket == floor else bucket // 2 + 1, bucket)


@settings(max_examples=200, deadline=None)
@given(
    seconds=st.tuples(st.integers(0, 3599), st.integers(0, 3599)),
    trigger=st.sampled_from(TRIGGERS),
    events=st.integers(0, 300),
    bytes_erased=st.integers(0, 6 * 1024 * 1024),
    data=st.data(),
)
def test_an_entry_holds_no_field_finer_than_allowed(seconds, trigger, events, bytes_erased, data):
    hour = datetime(2026, 5, 2, 9, tzinfo=UTC)
    first = entry_for(
        0, erased_at=hour + timedelta(seconds=seconds[0]), trigger=trigger, events=events, bytes_erased=bytes_erased
    )
    assert_only_allowed_fields(first.leaf_bytes())
    assert first.events_at_most >= events and first.bytes_at_most >= bytes_erased
    other = entry_for(
        0,
        erased_at=hour + timedelta(seconds=seconds[1]),
        trigger=data.draw(
            st.sampled_from([name for name in TRIGGERS if TRIGGER_KINDS[name] == TRIGGER_KINDS[trigger]])
        ),
        events=data.draw(same_bucket(first.events_at_most, 1)),
        bytes_erased=data.draw(same_bucket(first.bytes_at_most, 1024)),
    )
    assert other.leaf_bytes() == first.leaf_bytes()


def test_the_counts_are_rounded_up_to_powers_of_two_and_the_time_down_to_the_hour():
    assert [at_most(count, 1) for count in (0, 1, 2, 3, 4, 5, 12, 16, 17)] == [1, 1, 2, 4, 4, 8, 16, 16, 32]
    assert [at_most(count, 1024) for count in (0, 29, 1024, 1025, 48213)] == [1024, 1024, 1024, 2048, 65536]
    entry = entry_for(0, erased_at=datetime(2026, 5, 2, 23, 59, 59, 999999, tzinfo=UTC))
    assert entry.erased_hour == datetime(2026, 5, 2, 23, tzinfo=UTC)


def test_every_trigger_is_logged_as_its_kind():
    kinds = {
        trigger: DeletionEntry.from_leaf_bytes(entry_for(0, trigger=trigger).leaf_bytes()).trigger
        for trigger in TRIGGERS
    }
    assert kinds == {
        "owner_delete": "owner",
        "adk_delete_session": "owner",
        "ttl_purge": "retention",
        "max_age": "retention",
        "startup_purge": "retention",
        "admin": "operator",
        "erase_all": "operator",
    }


def test_leaf_bytes_with_another_spelling_are_rejected():
    leaf = entry_for(0).leaf_bytes()
    document = json.loads(leaf)
    respelled = [
        json.dumps(document).encode(),  # spaces
        json.dumps(document, separators=(",", ":")).encode()[::-1],
        leaf.replace(b'"events_at_most":16', b'"events_at_most":16.0'),
        leaf.replace(b'"events_at_most":16', b'"events_at_most":true'),
        leaf.replace(b'"events_at_most":16', b'"events_at_most":12'),  # not a bucket
        leaf.replace(b'"bytes_at_most":65536', b'"bytes_at_most":48213'),  # an exact size
        leaf.replace(b'"bytes_at_most":65536', b'"bytes_at_most":512'),  # under the smallest bucket
        leaf.replace(b'"owner"', b'"owner_delete"'),  # an exact trigger
        leaf.replace(b"09:00:00Z", b"09:14:07Z"),  # a second
        leaf.replace(b"09:00:00Z", b"09:00:00+00:00"),
        leaf.replace(b'"v":2', b'"v":3'),
        leaf.replace(b'"v":2', b'"v":2,"created":"2026-05-01T13:00:00Z"'),
        leaf.replace(b'"v":2', b'"v":2,"v":2'),
        leaf.replace(b'"how":{', b'"how":{"model_provider":"gemini",'),
        leaf.replace(document["session"].encode(), document["session"].upper().encode()),
        leaf.replace(b',"trigger":"owner"', b""),
        leaf + b"\n",
        b"[]",
        b"\xff",
    ]
    for data in respelled:
        assert rejected(DeletionEntry.from_leaf_bytes, data), data
        assert rejected(read_entry, data), data


def test_entries_refuse_values_outside_their_grain():
    for change in [{"events": -1}, {"bytes_erased": -1}, {"trigger": "purge"}, {"sqlite_secure_delete": 1}]:
        with pytest.raises((ValueError, KeyError)):
            entry_for(0, **change)
    with pytest.raises(ValueError):
        entry_for(0, erased_at=datetime(2026, 5, 1, 13))  # no time zone
    for change in [
        {"erased_hour": datetime(2026, 5, 1, 13, 5, tzinfo=UTC)},
        {"events_at_most": 12},
        {"bytes_at_most": 512},
        {"trigger": "owner_delete"},
        {"session": session_digest(SESSION_IDS[0]).upper()},
    ]:
        with pytest.raises(ValueError):
            dataclasses.replace(entry_for(0), **change)


def test_format_1_entries_are_still_read_in_their_own_spelling():
    entry = v1_entry_for(SESSION_IDS[0])
    digest = hashlib.sha256(SESSION_IDS[0].encode()).hexdigest()
    assert entry.session == session_digest(SESSION_IDS[0]) == digest
    assert entry.leaf_bytes() == LEAF_V1.replace(b"SESSION", digest.encode())
    assert DeletionEntryV1.from_leaf_bytes(entry.leaf_bytes()) == entry == read_entry(entry.leaf_bytes())
    leaf = entry.leaf_bytes()
    for data in [
        leaf.replace(b'"events":12', b'"events":12.0'),
        leaf.replace(b"owner_delete", b"bulk_delete"),
        leaf.replace(b"13:00:00Z", b"13:30:00Z"),
        leaf.replace(b'"gemini"', b'"Gemini, said: my resume"'),
        leaf.replace(b'"v":1', b'"v":1,"owner":"anon-0123"'),
        leaf + b"\n",
    ]:
        assert rejected(read_entry, data), data


# --- Receipts and the offline verifier -------------------------------------------------------

LEAVES = [entry_for(n, events=n).leaf_bytes() for n in range(len(SESSION_IDS))]
# A log that ran before issue 39 and after it: three format-1 entries, then four of format 2.
MIXED_LEAVES = [v1_entry_for(SESSION_IDS[n], events=n).leaf_bytes() for n in range(3)] + LEAVES[3:]


def signed_checkpoint(tree: MerkleTree, size: int | None = None, signer: Signer = LOG) -> str:
    size = len(tree) if size is None else size
    return Checkpoint(ORIGIN, size, tree.root(size)).sign(signer)


def receipt_for(index: int, size: int = len(LEAVES), leaves: list[bytes] = LEAVES) -> bytes:
    tree = MerkleTree(map(leaf_hash, leaves))
    proof = tuple(tree.inclusion_proof(index, size))
    return Receipt(leaves[index], index, proof, signed_checkpoint(tree, size)).text().encode()


def whose(number: int) -> WhoseSession:
    return WhoseSession.from_session_key(SESSION_KEYS[number])


def test_every_receipt_of_a_log_verifies_and_names_its_session():
    for size in range(1, len(LEAVES) + 1):
        for index in range(size):
            verified = verify_receipt(receipt_for(index, size), LOG.verifier, whose=whose(index))
            assert (verified.index, verified.checkpoint.size) == (index, size)
            assert verified.entry.events_at_most == at_most(index, 1)
            assert verify_receipt(receipt_for(index, size), LOG.verifier, whose=WhoseSession(lookup=LOOKUPS[index]))
            assert Receipt.parse(receipt_for(index, size).decode()).text().encode() == receipt_for(index, size)


def test_a_receipt_for_another_session_or_from_another_log_is_rejected():
    receipt = receipt_for(2)
    assert rejected(verify_receipt, receipt, LOG.verifier, whose=whose(3))
    assert rejected(verify_receipt, receipt, LOG.verifier, whose=WhoseSession(lookup=LOOKUPS[3]))
    assert rejected(verify_receipt, receipt, OTHER_LOG.verifier, whose=whose(2))
    # The session id alone cannot name a format-2 entry: the check refuses rather than passes.
    assert rejected(verify_receipt, receipt, LOG.verifier, SESSION_IDS[2])
    # The session key of another session of the same token names another session.
    same_owner = WhoseSession.from_session_key(f"{SESSION_IDS[3]}.{TOKENS[2]}")
    assert rejected(verify_receipt, receipt, LOG.verifier, whose=same_owner)


def test_a_log_across_the_format_change_verifies_both_formats_and_only_grew():
    """Entries of format 1 stay where they are; the tree just continues with format 2."""
    for index in range(len(MIXED_LEAVES)):
        receipt = receipt_for(index, leaves=MIXED_LEAVES)
        verified = verify_receipt(receipt, LOG.verifier, whose=whose(index))
        assert type(verified.entry) is (DeletionEntryV1 if index < 3 else DeletionEntry)
        if index < 3:  # format 1 still checks with the id, as it did
            assert verify_receipt(receipt, LOG.verifier, SESSION_IDS[index])
            assert rejected(verify_receipt, receipt, LOG.verifier, SESSION_IDS[index + 1])
            assert rejected(verify_receipt, receipt, LOG.verifier, whose=WhoseSession(lookup=LOOKUPS[index]))
    before, after = MerkleTree(map(leaf_hash, MIXED_LEAVES[:3])), MerkleTree(map(leaf_hash, MIXED_LEAVES))
    proof = hashes_text(after.consistency_proof(3)).encode()
    grew = verify_log_grew(signed_checkpoint(before).encode(), signed_checkpoint(after).encode(), proof, LOG.verifier)
    assert (grew[0].size, grew[1].size) == (3, len(MIXED_LEAVES))


def test_the_receipt_is_a_tlog_proof():
    lines = receipt_for(2, 5).decode().split("\n")
    assert lines[0] == "c2sp.org/tlog-proof@v1"
    assert base64.b64decode(lines[1].removeprefix("extra ")) == LEAVES[2]
    assert lines[2] == "index 2"
    assert [len(base64.b64decode(line)) for line in lines[3:6]] == [32, 32, 32]
    assert lines[6:10] == ["", ORIGIN, "5", base64.b64encode(MerkleTree(map(leaf_hash, LEAVES)).root(5)).decode()]
    assert lines[10] == "" and lines[11].startswith("— " + ORIGIN + " ") and lines[12:] == [""]


BIT_FLIPS = [1 << bit for bit in range(8)] + [0xFF]


def surviving_flips(document: bytes, accepts) -> list[tuple[int, int]]:
    """Each (position, mask) whose XOR into `document` the check still accepts."""
    survivors = []
    for position in range(len(document)):
        for mask in BIT_FLIPS:
            changed = bytearray(document)
            changed[position] ^= mask
            if not rejected(accepts, bytes(changed)):
                survivors.append((position, mask))
    return survivors


def test_flipping_any_byte_of_a_receipt_is_rejected():
    # The receipt holds the entry, its index, the proof hashes and the signed checkpoint.
    receipt = receipt_for(2, 5)
    assert surviving_flips(receipt, lambda changed: verify_receipt(changed, LOG.verifier)) == []


def consistency_documents(leaves: list[bytes], old_size: int, proof_from: MerkleTree | None = None):
    """The older checkpoint (over the honest first `old_size` leaves), the newer one over `leaves`
    and the consistency proof between them, taken from `proof_from` or the newer tree."""
    honest, newer = MerkleTree(map(leaf_hash, LEAVES[:old_size])), MerkleTree(map(leaf_hash, leaves))
    proof = (proof_from or newer).consistency_proof(old_size)
    return signed_checkpoint(honest).encode(), signed_checkpoint(newer).encode(), hashes_text(proof).encode()


def test_flipping_any_byte_of_two_checkpoints_or_their_consistency_proof_is_rejected():
    older, newer, proof = consistency_documents(LEAVES, 3)
    before, after = verify_log_grew(older, newer, proof, LOG.verifier)
    assert (before.size, after.size) == (3, 7)
    assert surviving_flips(older, lambda changed: verify_log_grew(changed, newer, proof, LOG.verifier)) == []
    assert surviving_flips(newer, lambda changed: verify_log_grew(older, changed, proof, LOG.verifier)) == []
    assert surviving_flips(proof, lambda changed: verify_log_grew(older, newer, changed, LOG.verifier)) == []


def test_a_log_with_an_entry_removed_or_reordered_fails_the_consistency_check():
    old_size = 4
    for appended in range(old_size, len(LEAVES) + 1):
        assert verify_log_grew(*consistency_documents(LEAVES[:appended], old_size), LOG.verifier)
    rewritten = []
    for index in range(old_size):
        rewritten.append(LEAVES[:index] + LEAVES[index + 1 :])  # removed
        for other in range(index + 1, len(LEAVES)):
            swapped = [*LEAVES]
            swapped[index], swapped[other] = swapped[other], swapped[index]
            rewritten.append(swapped)  # reordered
    honest = MerkleTree(map(leaf_hash, LEAVES))
    for leaves in rewritten:
        # Neither the proof from the rewritten log nor the honest log's proof gets it through.
        assert rejected(verify_log_grew, *consistency_documents(leaves, old_size), LOG.verifier)
        assert rejected(verify_log_grew, *consistency_documents(leaves, old_size, honest), LOG.verifier)


def test_the_verifier_takes_a_receipt_as_the_older_checkpoint():
    _, newer, proof = consistency_documents(LEAVES, 5)
    assert verify_log_grew(receipt_for(1, 5), newer, proof, LOG.verifier)[0].size == 5
    assert rejected(verify_log_grew, receipt_for(1, 6), newer, proof, LOG.verifier)


def test_command_line(tmp_path, capsys):
    files = {"receipt": receipt_for(4), "bad": receipt_for(4).replace(b"index 4", b"index 3")}
    files.update(zip(["older", "newer", "proof"], consistency_documents(LEAVES, 2), strict=True))
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    key = ["--key", LOG.verifier.vkey]

    (tmp_path / "key").write_text(SESSION_KEYS[4] + "\n")
    (tmp_path / "other key").write_text(SESSION_KEYS[3])
    (tmp_path / "no dot").write_text(SESSION_IDS[4])

    assert main([*key, "--session-key-file", str(tmp_path / "key"), str(tmp_path / "receipt")]) == 0
    assert capsys.readouterr().out == (
        "Verified: the session given was erased in the hour from 2026-05-02 09:00 UTC (owner: at most 4 events, "
        f"at most 65536 sealed bytes); entry 4 of the 7 that log {ORIGIN} signed.\n"
    )
    assert main([*key, "--lookup", LOOKUPS[4], str(tmp_path / "receipt")]) == 0
    assert capsys.readouterr().out.startswith("Verified: the session given was erased in the hour from")
    assert main([*key, str(tmp_path / "receipt")]) == 0
    assert f"the session filed under {LOOKUPS[4][:16]}..." in capsys.readouterr().out
    assert main([*key, "--session-key-file", str(tmp_path / "other key"), str(tmp_path / "receipt")]) == 1
    assert capsys.readouterr().err == "Rejected: the entry names another session.\n"
    assert main([*key, "--session-id", SESSION_IDS[4], str(tmp_path / "receipt")]) == 1
    assert "only the token gives: give the session key" in capsys.readouterr().err
    assert main([*key, str(tmp_path / "bad")]) == 1
    assert capsys.readouterr().err.startswith("Rejected: the inclusion proof")
    assert main([*key, "--consistency", *(str(tmp_path / name) for name in ["older", "newer", "proof"])]) == 0
    assert capsys.readouterr().out == f"Verified: log {ORIGIN} only grew, from 2 to 7 entries.\n"
    assert main([*key, "--consistency", *(str(tmp_path / name) for name in ["newer", "older", "proof"])]) == 1
    for misuse in [
        ["--key", "not a key", str(tmp_path / "receipt")],
        [*key, str(tmp_path / "missing")],
        [*key],
        [*key, "--session-key-file", str(tmp_path / "missing"), str(tmp_path / "receipt")],
        [*key, "--session-key-file", str(tmp_path / "no dot"), str(tmp_path / "receipt")],  # not a session key
        [*key, "--lookup", LOOKUPS[4], "--session-id", SESSION_IDS[4], str(tmp_path / "receipt")],
    ]:
        with pytest.raises(SystemExit) as exit_status:
            main(misuse)
        assert exit_status.value.code == 2


def test_command_line_across_a_key_rotation(tmp_path, capsys):
    """The log signed its first 2 entries with LOG's key, then rotated to OTHER_LOG's (same name):
    given both keys, the older receipt and the consistency across the rotation verify, each
    checkpoint with the key that signed it; given one key, what the other signed does not."""
    tree = MerkleTree(map(leaf_hash, LEAVES))
    files = {
        "receipt": receipt_for(1, 2),  # signed before the rotation
        "older": signed_checkpoint(tree, 2).encode(),
        "newer": signed_checkpoint(tree, signer=OTHER_LOG).encode(),
        "proof": hashes_text(tree.consistency_proof(2)).encode(),
    }
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    grew = ["--consistency", *(str(tmp_path / name) for name in ["older", "newer", "proof"])]
    new, old = ["--key", OTHER_LOG.verifier.vkey], ["--key", LOG.verifier.vkey]

    assert main([*new, *old, *grew]) == 0
    assert capsys.readouterr().out == f"Verified: log {ORIGIN} only grew, from 2 to 7 entries.\n"
    assert main([*new, *old, "--lookup", LOOKUPS[1], str(tmp_path / "receipt")]) == 0
    assert main([*new, *grew]) == 1 and main([*old, *grew]) == 1
    assert capsys.readouterr().err.count("Rejected: the note is not signed by the given key.") == 2
    assert main([*new, str(tmp_path / "receipt")]) == 1
    with pytest.raises(SystemExit) as exit_status:  # two logs' keys: a misuse, not a rotation
        main([*new, "--key", Signer.generate("elsewhere.example/log").verifier.vkey, *grew])
    assert exit_status.value.code == 2


def test_the_verifier_runs_as_a_module_without_django(tmp_path):
    receipt = tmp_path / "receipt.tlog-proof"
    receipt.write_bytes(receipt_for(1))
    environment = {name: value for name, value in os.environ.items() if name != "DJANGO_SETTINGS_MODULE"}
    command = [sys.executable, "-X", "importtime", "-m", "sessions_app.deletion_log.formats.verify"]
    command += ["--key", LOG.verifier.vkey, "--session-key-file", "-", str(receipt)]
    result = subprocess.run(
        command, cwd=ROOT_DIR, env=environment, input=SESSION_KEYS[1], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Verified: the session given was erased")
    # -X importtime lists every module the run imported, one a line: "import time: ... | name".
    imported = {
        line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")
    }
    project = {name for name in imported if name.split(".")[0] in {"sessions_app", "agent", "config"}}
    assert {name for name in imported if name.split(".")[0] in {"django", "rest_framework", "google"}} == set()
    assert all(
        name in {"sessions_app", "sessions_app.deletion_log", "sessions_app.deletion_log.formats"}
        or name.startswith("sessions_app.deletion_log.formats.")
        for name in project
    )


def test_format_1_plan_versions_may_be_not_counted_but_never_a_wrong_type():
    entry = v1_entry_for(SESSION_IDS[0], plan_versions=None)
    assert b'"plan_versions":null' in entry.leaf_bytes()
    assert read_entry(entry.leaf_bytes()).plan_versions is None
    for wrong in (-1, 1.0, "3", True):
        with pytest.raises(ValueError):
            v1_entry_for(SESSION_IDS[0], plan_versions=wrong)


def test_command_line_help_and_misuse_say_what_to_give(tmp_path, capsys):
    """`--help` names the command, what it checks and each option; misuse exits 2 saying why."""
    with pytest.raises(SystemExit) as help_exit:
        main(["--help"])
    shown = capsys.readouterr().out
    assert help_exit.value.code == 0
    for text in (
        "python -m sessions_app.deletion_log.formats.verify",
        "Check a deletion receipt offline, with the log's public key alone",
        "the log's verifier key, <name>+<key id>+<key>; once for each key it had",
        "a file holding the session key you saved",
        "the receipt lookup the page showed",
        "the session's id (receipts written before issue 39 only)",
        "check OLDER NEWER PROOF instead of a receipt",
        "FILE",
    ):
        assert text in " ".join(shown.split()), text
    receipt = tmp_path / "receipt"
    receipt.write_bytes(b"\xff\xfe not UTF-8")
    misuse = [
        ([str(receipt)], "the following arguments are required: --key"),
        (["--key", PETER_VKEY, str(receipt), str(receipt)], "give one receipt, or with --consistency an older"),
        (["--key", PETER_VKEY, "--consistency", str(receipt)], "give one receipt, or with --consistency an older"),
    ]
    for argv, said in misuse:
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2 and said in capsys.readouterr().err
    for argv, said in [
        (["--key", PETER_VKEY, str(receipt)], "the receipt is not UTF-8 text"),
        (["--key", PETER_VKEY, "--consistency", *[str(receipt)] * 3], "the older checkpoint is not UTF-8 text"),
    ]:
        assert main(argv) == 1 and said in capsys.readouterr().err


def _malformed_documents() -> list[tuple[str, object, str]]:
    """(what is parsed, the text or bytes, the reason it is refused with)."""
    leaf = entry_for(0).leaf_bytes()
    leaf_v1 = v1_entry_for("3b9f0c2e-5a1d-4c8e-9f6a-2d7b8e1c4a90").leaf_bytes()
    extra, checkpoint = f"extra {base64.b64encode(leaf).decode()}", "origin\n1\nroot\n\n— sig\n"
    head = "c2sp.org/tlog-proof@v1"
    return [
        ("receipt", f"{head}\n{extra}\nindex 0\n", "is not a c2sp.org/tlog-proof@v1 document"),
        ("receipt", f"c2sp.org/tlog-proof@v2\n{extra}\nindex 0\n\n{checkpoint}", "is not a c2sp.org/tlog-proof@v1"),
        ("receipt", f"{head}\n{extra}\n\n{checkpoint}", "has no `extra` line with the entry and `index` line"),
        ("receipt", f"{head}\nindex 0\n{extra}\n\n{checkpoint}", "has no `extra` line with the entry and `index` line"),
        ("receipt", f"{head}\n{extra}\nnumber 0\n\n{checkpoint}", "has no `extra` line with the entry"),
        ("receipt", f"{head}\nextra not=base64\nindex 0\n\n{checkpoint}", "the receipt's entry is not base64"),
        ("receipt", f"{head}\n{extra}\nindex 01\n\n{checkpoint}", "the receipt's index"),
        ("receipt", f"{head}\n{extra}\nindex 0\nnot=base64\n\n{checkpoint}", "an inclusion proof hash is not"),
        ("proof", "AAAA", "the consistency proof does not end in a newline"),
        ("proof", "AAAA\nnot=base64\n", "a consistency proof hash is not base64"),
        ("entry", leaf.replace(b'"v":2', b'"v":3'), "the entry is in format 3, not 2"),
        ("entry", leaf.replace(b'"trigger"', b'"trigga"'), "the entry is not a deletion-log entry ('trigger')"),
        ("entry", leaf.replace(b'"v":2', b'"v":2 '), "the entry is not in its canonical encoding"),
        ("entry", b"[]", "the entry is not a deletion-log entry"),
        ("entry v1", leaf_v1.replace(b'"v":1', b'"v":2'), "the entry is in format 2, not 1"),
        ("entry v1", leaf_v1.replace(b'"trigger"', b'"trigga"'), "the entry is not a deletion-log entry ('trigger')"),
        ("entry", leaf_v1.replace(b'"v":1', b'"v":1 '), "the entry is not in its canonical encoding"),
    ]


@pytest.mark.parametrize(("kind", "document", "reason"), _malformed_documents())
def test_a_malformed_receipt_proof_or_entry_is_refused_with_its_reason(kind, document, reason):
    """What a person is told when the file they hold is not a receipt (mutmut: each check's reason)."""
    parse = {
        "receipt": Receipt.parse,
        "proof": parse_hashes,
        "entry": read_entry,
        "entry v1": DeletionEntryV1.from_leaf_bytes,
    }[kind]
    with pytest.raises(Rejected, match=re.escape(reason)):
        parse(document)


def _tree(size: int) -> MerkleTree:
    tree = MerkleTree()
    for number in range(size):
        tree.append(leaf_hash(f"entry {number}".encode()))
    return tree


def test_a_proof_that_fails_says_how():
    """Each way an inclusion or consistency proof can fail has its own reason (mutmut: the reasons)."""
    tree, leaf = _tree(7), leaf_hash(b"entry 2")
    proof, root = tree.inclusion_proof(2, 7), tree.root(7)
    inclusion = [
        (proof + [proof[0]], root, "the inclusion proof has too many hashes"),
        (proof[:-1], root, "the inclusion proof has too few hashes"),
        (proof, tree.root(6), "the inclusion proof does not lead to the checkpoint's root"),
        ([*proof[:-1], b"short"], root, "the inclusion proof holds a hash that is not 32 bytes"),
    ]
    for hashes, against, reason in inclusion:
        with pytest.raises(Rejected, match=re.escape(reason)):
            merkle.verify_inclusion(leaf, 2, 7, hashes, against)
    grew = tree.consistency_proof(3, 7)
    old, new = tree.root(3), tree.root(7)
    consistency = [
        (3, 7, grew + [grew[0]], old, new, "the consistency proof has too many hashes"),
        (3, 7, grew[:-1], old, new, "the consistency proof has too few hashes"),
        (3, 7, [], old, new, "the consistency proof is empty"),
        (0, 7, grew, old, new, "an empty log proves nothing to be consistent with"),
        (7, 3, grew, new, old, "the log shrank from 7 to 3 entries"),
        (7, 7, [], old, new, "two different logs of 7 entries"),
        (3, 7, grew, tree.root(2), new, "does not lead to the older checkpoint's root"),
        (3, 7, grew, old, tree.root(6), "does not lead to the newer checkpoint's root"),
        (3, 7, [b"short", *grew[1:]], old, new, "the consistency proof holds a hash that is not 32 bytes"),
    ]
    for old_size, size, hashes, old_root, new_root, reason in consistency:
        with pytest.raises(Rejected, match=re.escape(reason)):
            merkle.verify_consistency(old_size, size, hashes, old_root, new_root)


def test_a_signed_note_or_checkpoint_that_fails_says_how():
    """Each way a signed note or its checkpoint can fail has its own reason (mutmut: the reasons)."""
    peter, sig = Verifier.from_vkey(PETER_VKEY), PETER_SIG
    notes = [
        (NOTE_TEXT + "\n" + sig.replace("\n", "\x07\n"), "the signed note holds a control character"),
        (NOTE_TEXT + sig, "the signed note has no blank line before its signatures"),
        (NOTE_TEXT + "\n" + sig[:-1], "the signed note's signatures do not end in a newline"),
        (NOTE_TEXT + "\n" + sig * 101, "the signed note has too many signatures"),
        (NOTE_TEXT + "\n" + ENOCH_SIG, "the note is not signed by the given key"),
        (NOTE_TEXT + "\n" + sig.replace("— ", "- "), "a signature line does not start with an em dash and a space"),
        (NOTE_TEXT + "\n" + sig.replace("PeterNeumann", "Peter+Neumann"), "a signature line's key name is not valid"),
        (NOTE_TEXT + "\n— PeterNeumann AAAA\n", "a signature is too short"),
        (NOTE_TEXT + "\n— PeterNeumann not=base64\n", "a signature is not base64"),
        (NOTE_TEXT + "\n" + sig[:60] + "ABCD" + sig[64:], "the signature by PeterNeumann does not verify"),
    ]
    for note, reason in notes:
        with pytest.raises(Rejected, match=re.escape(reason)):
            open_note(note, [peter])
    root = base64.b64encode(bytes(32)).decode()
    checkpoints = [
        (f"log\n1\n{root}", "the checkpoint text does not end in a newline"),
        ("log\n1\n", "the checkpoint text is not an origin, a size and a root on non-empty lines"),
        (f"log\n\n{root}\n", "the checkpoint text is not an origin, a size and a root on non-empty lines"),
        ("log\n1\nnot=base64\n", "the checkpoint's root is not base64"),
        ("log\n1\nAAAA\n", "the checkpoint's root is not 32 bytes"),
        (f"log\n-1\n{root}\n", "the checkpoint's size"),
    ]
    for text, reason in checkpoints:
        with pytest.raises(Rejected, match=re.escape(reason)):
            Checkpoint.parse(text)
    signer = Signer.generate("deletions.example/log")
    other = Signer(signer.name.replace("log", "other"), bytes(32))
    signed = signer.sign(f"deletions.example/other\n1\n{root}\n")
    with pytest.raises(Rejected, match=re.escape("the checkpoint is for log 'deletions.example/other', not")):
        open_checkpoint(signed, signer.verifier)
    with pytest.raises(ValueError, match="the earlier keys of a log are named after it too"):
        open_checkpoint(signed, signer.verifier, other.verifier)


def test_the_log_grew_before_a_rotation_verifies_with_the_earlier_key_alone_given_too():
    """Both checkpoints signed before the rotation (LOG's key); the current key is OTHER_LOG's:
    each is opened with the earlier keys too, the newer one as well as the older (mutmut)."""
    tree = MerkleTree(map(leaf_hash, LEAVES))
    older, newer = signed_checkpoint(tree, 2).encode(), signed_checkpoint(tree).encode()
    proof = hashes_text(tree.consistency_proof(2)).encode()
    before, after = verify_log_grew(older, newer, proof, OTHER_LOG.verifier, [LOG.verifier])
    assert (before.size, after.size) == (2, len(LEAVES))
    with pytest.raises(Rejected, match="not signed by the given key"):
        verify_log_grew(older, newer, proof, OTHER_LOG.verifier)


def test_the_lookup_command_reads_the_session_key_from_standard_input(monkeypatch, capsys):
    import io

    from sessions_app.deletion_log.formats import lookup

    monkeypatch.setattr(sys, "stdin", io.StringIO(SESSION_KEYS[2] + "\n"))
    assert lookup.main() == 0 and capsys.readouterr().out == LOOKUPS[2] + "\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(SESSION_IDS[2]))  # the id alone is no key
    assert lookup.main() == 1 and "session id and its token joined by a dot" in capsys.readouterr().err
