"""The receipt: a C2SP tlog-proof (c2sp.org/tlog-proof@v1) whose `extra` line carries the entry.

    c2sp.org/tlog-proof@v1
    extra <base64 of the entry's leaf bytes>
    index <the entry's position in the log, from 0>
    <base64 inclusion proof hash, the leaf's sibling first>
    ...

    <the signed checkpoint, verbatim>

tlog-proof leaves the leaf to the application and offers `extra` for what rebuilds it: here the
leaf is the entry itself, so the receipt alone names the session, and its inclusion under the
signed root is what makes the unauthenticated `extra` trustworthy.

A consistency proof travels as its hashes alone, one base64 hash a line; the two checkpoints it
links give the sizes.
"""

from dataclasses import dataclass

from sessions_app.deletion_log.formats.strict import Rejected, b64decode, b64encode, decimal

HEADER = "c2sp.org/tlog-proof@v1"


@dataclass(frozen=True)
class Receipt:
    entry: bytes  # the leaf bytes (DeletionEntry.leaf_bytes)
    index: int
    proof: tuple[bytes, ...]
    checkpoint: str  # signed

    def text(self) -> str:
        lines = [HEADER, f"extra {b64encode(self.entry)}", f"index {self.index}", *map(b64encode, self.proof)]
        return "\n".join(lines) + "\n\n" + self.checkpoint

    @classmethod
    def parse(cls, text: str) -> "Receipt":
        head, blank_line, checkpoint = text.partition("\n\n")
        lines = head.split("\n")
        if not blank_line or lines[0] != HEADER:
            raise Rejected(f"the receipt is not a {HEADER} document")
        if len(lines) < 3 or not lines[1].startswith("extra ") or not lines[2].startswith("index "):
            raise Rejected("the receipt has no `extra` line with the entry and `index` line after its header")
        entry = b64decode(lines[1].removeprefix("extra "), "the receipt's entry")
        index = decimal(lines[2].removeprefix("index "), "the receipt's index")
        proof = tuple(b64decode(line, "an inclusion proof hash") for line in lines[3:])
        return cls(entry, index, proof, checkpoint)


def hashes_text(hashes: list[bytes]) -> str:
    return "".join(f"{b64encode(value)}\n" for value in hashes)


def parse_hashes(text: str) -> list[bytes]:
    if text and not text.endswith("\n"):
        raise Rejected("the consistency proof does not end in a newline")
    return [b64decode(line, "a consistency proof hash") for line in text.split("\n")[:-1]]
