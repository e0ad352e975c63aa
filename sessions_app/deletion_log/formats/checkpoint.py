"""C2SP checkpoints (c2sp.org/tlog-checkpoint): a signed note whose text is the log's origin, its
size and its RFC 6962 root, one a line, then optional extension lines:

    <origin>
    <size, decimal>
    <base64 root hash>
"""

from dataclasses import dataclass

from sessions_app.deletion_log.formats.merkle import HASH_SIZE
from sessions_app.deletion_log.formats.note import Signer, Verifier, open_note
from sessions_app.deletion_log.formats.strict import Rejected, b64decode, b64encode, decimal


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def text(self) -> str:
        return "".join(f"{line}\n" for line in (self.origin, self.size, b64encode(self.root), *self.extensions))

    def sign(self, signer: Signer) -> str:
        # The spec asks that the log's key name match the origin; open_checkpoint insists on it.
        if signer.name != self.origin:
            raise ValueError("a log signs its checkpoints with a key named after its origin")
        return signer.sign(self.text())

    @classmethod
    def parse(cls, text: str) -> "Checkpoint":
        if not text.endswith("\n"):
            raise Rejected("the checkpoint text does not end in a newline")
        lines = text[:-1].split("\n")
        if len(lines) < 3 or not all(lines):
            raise Rejected("the checkpoint text is not an origin, a size and a root on non-empty lines")
        origin, size, root, *extensions = lines
        root_hash = b64decode(root, "the checkpoint's root")
        if len(root_hash) != HASH_SIZE:
            raise Rejected("the checkpoint's root is not 32 bytes")
        return cls(origin, decimal(size, "the checkpoint's size"), root_hash, tuple(extensions))


def open_checkpoint(signed: str, verifier: Verifier, *earlier: Verifier) -> Checkpoint:
    """The checkpoint `verifier`'s log signed; Rejected if it is not, or names another log.
    `earlier`: keys the same log signed with before a rotation, whose signatures count too."""
    if any(key.name != verifier.name for key in earlier):
        raise ValueError("the earlier keys of a log are named after it too")
    checkpoint = Checkpoint.parse(open_note(signed, [verifier, *earlier]))
    if checkpoint.origin != verifier.name:
        raise Rejected(f"the checkpoint is for log {checkpoint.origin!r}, not {verifier.name!r}")
    return checkpoint
