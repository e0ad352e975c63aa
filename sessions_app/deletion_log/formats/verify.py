"""Check a deletion receipt offline, with the log's public key alone: no Django, no network.

    python -m sessions_app.deletion_log.formats.verify --key KEY [--session-key-file FILE | --lookup VALUE] RECEIPT
    python -m sessions_app.deletion_log.formats.verify --key KEY --consistency OLDER NEWER PROOF

The first checks the checkpoint's signature, the entry's inclusion proof under the signed root,
and that the entry names the person's session: given the session key they saved
("<session id>.<token>", read from FILE, or from standard input if FILE is -, never from the
command line, where other users of the machine can see it) or the receipt lookup the page showed.
An entry written before issue 39 (format 1) names the session by the SHA-256 of its id: check it
with --session-id ID (or the session key). The second checks that the log
signed by NEWER only grew from the one signed by OLDER (a checkpoint, or a receipt whose checkpoint
is taken), PROOF holding the consistency proof's hashes. KEY is the log's verifier key,
`<name>+<key id>+<key>`; after the log rotated its key, give --key once for each (a checkpoint then
verifies with the key that signed it). Exit status: 0 verified, 1 rejected (the reason on
stderr), 2 misused.
"""

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from sessions_app.deletion_log.formats.checkpoint import Checkpoint, open_checkpoint
from sessions_app.deletion_log.formats.entry import DeletionEntry, DeletionEntryV1, read_entry, session_digest
from sessions_app.deletion_log.formats.lookup import receipt_lookup_for_key
from sessions_app.deletion_log.formats.merkle import leaf_hash, verify_consistency, verify_inclusion
from sessions_app.deletion_log.formats.note import Verifier
from sessions_app.deletion_log.formats.receipt import HEADER, Receipt, parse_hashes
from sessions_app.deletion_log.formats.strict import Rejected


@dataclass(frozen=True)
class VerifiedReceipt:
    entry: DeletionEntry | DeletionEntryV1
    index: int
    checkpoint: Checkpoint


@dataclass(frozen=True)
class WhoseSession:
    """What the person gives to check that an entry names their session: their session key (it
    gives both), the receipt lookup (format 2), or the session id (format 1 only)."""

    session_id: str | None = None
    lookup: str | None = None

    @classmethod
    def from_session_key(cls, session_key: str) -> "WhoseSession":
        try:
            lookup = receipt_lookup_for_key(session_key)
        except ValueError as error:
            raise Rejected(str(error)) from None
        return cls(session_key.strip().partition(".")[0], lookup)

    def given(self) -> bool:
        return self.session_id is not None or self.lookup is not None

    def check(self, entry: DeletionEntry | DeletionEntryV1) -> None:
        if isinstance(entry, DeletionEntryV1):
            if self.session_id is None:
                raise Rejected("the entry (format 1) names its session by the id's SHA-256: give the session id or key")
            expected = session_digest(self.session_id)
        else:
            if self.lookup is None:
                raise Rejected("the entry names its session by a value only the token gives: give the session key")
            expected = self.lookup
        if entry.session != expected:
            raise Rejected("the entry names another session")


def verify_receipt(
    document: bytes,
    verifier: Verifier,
    session_id: str | None = None,
    earlier: Sequence[Verifier] = (),
    *,
    whose: WhoseSession | None = None,
) -> VerifiedReceipt:
    """`earlier`: the keys the log signed with before a rotation (the receipt may be older).
    `whose` (or, for an entry of format 1, `session_id`): checked to be the session named."""
    receipt = Receipt.parse(_text(document, "the receipt"))
    checkpoint = open_checkpoint(receipt.checkpoint, verifier, *earlier)
    verify_inclusion(leaf_hash(receipt.entry), receipt.index, checkpoint.size, receipt.proof, checkpoint.root)
    entry = read_entry(receipt.entry)
    whose = whose or WhoseSession(session_id=session_id)
    if whose.given():
        whose.check(entry)
    return VerifiedReceipt(entry, receipt.index, checkpoint)


def verify_log_grew(
    older: bytes, newer: bytes, proof: bytes, verifier: Verifier, earlier: Sequence[Verifier] = ()
) -> tuple[Checkpoint, Checkpoint]:
    """The two checkpoints, if `proof` shows the log at `newer` extends the log at `older`; each
    checkpoint verified by `verifier` or one of the `earlier` keys (across a rotation)."""
    older_text = _text(older, "the older checkpoint")
    if older_text.startswith(HEADER + "\n"):
        older_text = Receipt.parse(older_text).checkpoint
    before = open_checkpoint(older_text, verifier, *earlier)
    after = open_checkpoint(_text(newer, "the newer checkpoint"), verifier, *earlier)
    hashes = parse_hashes(_text(proof, "the consistency proof"))
    verify_consistency(before.size, after.size, hashes, before.root, after.root)
    return before, after


def _text(document: bytes, what: str) -> str:
    try:
        return document.decode("utf-8")
    except UnicodeDecodeError:
        raise Rejected(f"{what} is not UTF-8 text") from None


def describe(verified: VerifiedReceipt, session_checked: bool) -> str:
    entry, checkpoint = verified.entry, verified.checkpoint
    where = f"entry {verified.index} of the {checkpoint.size} that log {checkpoint.origin} signed."
    if isinstance(entry, DeletionEntryV1):
        whose = "the session given" if session_checked else f"session sha256:{entry.session[:16]}..."
        return (
            f"Verified: {whose} was erased at {entry.erased_at:%Y-%m-%d %H:%M:%S} UTC ({entry.trigger}: "
            f"{entry.events} events, {_plan_versions(entry)}, {entry.bytes_erased} bytes); {where}"
        )
    whose = "the session given" if session_checked else f"the session filed under {entry.session[:16]}..."
    return (
        f"Verified: {whose} was erased in the hour from {entry.erased_hour:%Y-%m-%d %H:%M} UTC "
        f"({entry.trigger}: at most {entry.events_at_most} events, at most {entry.bytes_at_most} sealed bytes); "
        f"{where}"
    )


def _plan_versions(entry: DeletionEntryV1) -> str:
    return "plan versions not counted" if entry.plan_versions is None else f"{entry.plan_versions} plan versions"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sessions_app.deletion_log.formats.verify", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--key",
        required=True,
        action="append",
        help="the log's verifier key, <name>+<key id>+<key>; once for each key it had (a rotation)",
    )
    named = parser.add_mutually_exclusive_group()
    named.add_argument(
        "--session-key-file",
        metavar="FILE",
        help='a file holding the session key you saved, "<session id>.<token>" (- reads it from standard input)',
    )
    named.add_argument("--lookup", help="the receipt lookup the page showed (64 hex digits)")
    named.add_argument("--session-id", help="the session's id (receipts written before issue 39 only)")
    parser.add_argument("--consistency", action="store_true", help="check OLDER NEWER PROOF instead of a receipt")
    parser.add_argument("files", nargs="+", metavar="FILE")
    arguments = parser.parse_args(argv)
    if len(arguments.files) != (3 if arguments.consistency else 1):
        parser.error("give one receipt, or with --consistency an older checkpoint, a newer one and a proof")
    try:
        verifier, *earlier = [Verifier.from_vkey(key) for key in arguments.key]
        contents = [_read(path) for path in arguments.files]
        whose = _whose(arguments)
    except (Rejected, OSError) as error:
        parser.error(str(error))
    if any(key.name != verifier.name for key in earlier):
        parser.error("the keys name different logs: give the keys of one log")
    try:
        if arguments.consistency:
            before, after = verify_log_grew(*contents, verifier, earlier)
            print(f"Verified: log {after.origin} only grew, from {before.size} to {after.size} entries.")
        else:
            verified = verify_receipt(contents[0], verifier, earlier=earlier, whose=whose)
            print(describe(verified, whose.given()))
    except Rejected as error:
        print(f"Rejected: {error}.", file=sys.stderr)
        return 1
    return 0


def _whose(arguments: argparse.Namespace) -> WhoseSession:
    if arguments.session_key_file is not None:
        if arguments.session_key_file == "-":
            return WhoseSession.from_session_key(sys.stdin.readline())
        return WhoseSession.from_session_key(_text(_read(arguments.session_key_file), "the session key file"))
    return WhoseSession(session_id=arguments.session_id, lookup=arguments.lookup)


def _read(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


if __name__ == "__main__":
    sys.exit(main())
