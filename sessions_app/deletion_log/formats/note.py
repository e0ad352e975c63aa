"""C2SP signed notes (c2sp.org/signed-note) with Ed25519 keys, as golang.org/x/mod/sumdb/note.

A note is a text ending in a newline, a blank line, then lines `— <key name> base64(key ID ||
signature)`. The key ID is SHA-256(name || 0x0A || 0x01 || public key)[:4]. A verifier key reads
`<name>+<hex key ID>+base64(0x01 || public key)`; a signer key, Go's `PRIVATE+KEY+<name>+<hex key
ID>+base64(0x01 || 32-byte seed)`, so a key made by Go's note.GenerateKey works here too.
"""

import hashlib
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from sessions_app.deletion_log.formats.strict import Rejected, b64decode, b64encode

ED25519 = b"\x01"  # the signature type byte
SIGNATURE_PREFIX = "\N{EM DASH} "
MAX_SIGNATURES = 100  # the spec asks for at least 16; Go's reader stops at 100


def is_valid_key_name(name: str) -> bool:
    return bool(name) and "+" not in name and not any(char.isspace() for char in name)


def key_id(name: str, public_key: bytes) -> bytes:
    return hashlib.sha256(name.encode() + b"\n" + ED25519 + public_key).digest()[:4]


@dataclass(frozen=True)
class Verifier:
    name: str
    public_key: bytes  # 32 bytes, RFC 8032

    @property
    def key_id(self) -> bytes:
        return key_id(self.name, self.public_key)

    @property
    def vkey(self) -> str:
        return f"{self.name}+{self.key_id.hex()}+{b64encode(ED25519 + self.public_key)}"

    @classmethod
    def from_vkey(cls, vkey: str) -> "Verifier":
        name, _, rest = vkey.partition("+")
        id_hex, _, key_text = rest.partition("+")
        key = b64decode(key_text, "the verifier key")
        if not is_valid_key_name(name) or len(id_hex) != 8 or id_hex != id_hex.lower():
            raise Rejected("the verifier key is not <name>+<key id>+<key>")
        if key[:1] != ED25519 or len(key) != 33:
            raise Rejected("the verifier key is not an Ed25519 key")
        verifier = cls(name, key[1:])
        if verifier.key_id.hex() != id_hex:
            raise Rejected("the verifier key's ID does not match its name and key")
        return verifier

    def verifies(self, text: bytes, signature: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(signature, text)
        except InvalidSignature:
            return False
        return True


class Signer:
    def __init__(self, name: str, seed: bytes):
        if not is_valid_key_name(name):
            raise ValueError("a key name is not empty and has no spaces or '+'")
        self.name = name
        self._seed = seed
        self._private_key = Ed25519PrivateKey.from_private_bytes(seed)
        public_key = self._private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.verifier = Verifier(name, public_key)

    @classmethod
    def generate(cls, name: str) -> "Signer":
        return cls(name, Ed25519PrivateKey.generate().private_bytes_raw())

    @classmethod
    def from_skey(cls, skey: str) -> "Signer":
        parts = skey.split("+", 4)  # the base64 key may hold "+" too
        if len(parts) != 5 or parts[:2] != ["PRIVATE", "KEY"]:
            raise ValueError("a signer key is PRIVATE+KEY+<name>+<key id>+<key>")
        _, _, name, id_hex, key_text = parts
        key = b64decode(key_text, "the signer key")
        if key[:1] != ED25519 or len(key) != 33:
            raise ValueError("the signer key is not an Ed25519 key")
        signer = cls(name, key[1:])
        if signer.verifier.key_id.hex() != id_hex:
            raise ValueError("the signer key's ID does not match its name and key")
        return signer

    @property
    def skey(self) -> str:
        return f"PRIVATE+KEY+{self.name}+{self.verifier.key_id.hex()}+{b64encode(ED25519 + self._seed)}"

    def sign(self, text: str) -> str:
        """The signed note: `text` (lines ending in newlines), a blank line, this key's signature."""
        if not text.endswith("\n") or text.endswith("\n\n") or _has_control_characters(text):
            raise ValueError("a note text ends in one newline and holds no control characters")
        signature = b64encode(self.verifier.key_id + self._private_key.sign(text.encode()))
        return f"{text}\n{SIGNATURE_PREFIX}{self.name} {signature}\n"


def _has_control_characters(text: str) -> bool:
    return any(char < " " and char != "\n" for char in text)


def open_note(message: str, verifiers: list[Verifier]) -> str:
    """The text of a signed note that one of `verifiers` signed; Rejected otherwise. Signatures by
    other keys are skipped (witnesses, a rotated key); a known key whose signature fails rejects
    the note."""
    if _has_control_characters(message):
        raise Rejected("the signed note holds a control character")
    split = message.rfind("\n\n")
    if split < 0:
        raise Rejected("the signed note has no blank line before its signatures")
    text, signature_lines = message[: split + 1], message[split + 2 :]
    if not signature_lines.endswith("\n"):
        raise Rejected("the signed note's signatures do not end in a newline")
    lines = signature_lines[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise Rejected("the signed note has too many signatures")
    known = {(verifier.name, verifier.key_id): verifier for verifier in verifiers}
    verified = False
    for line in lines:
        name, signature = _parse_signature_line(line)
        verifier = known.get((name, signature[:4]))
        if verifier is None:
            continue
        if not verifier.verifies(text.encode(), signature[4:]):
            raise Rejected(f"the signature by {name} does not verify")
        verified = True
    if not verified:
        raise Rejected("the note is not signed by the given key")
    return text


def _parse_signature_line(line: str) -> tuple[str, bytes]:
    if not line.startswith(SIGNATURE_PREFIX):
        raise Rejected("a signature line does not start with an em dash and a space")
    name, _, signature_text = line[len(SIGNATURE_PREFIX) :].partition(" ")
    if not is_valid_key_name(name):
        raise Rejected("a signature line's key name is not valid")
    signature = b64decode(signature_text, "a signature")
    if len(signature) < 5:
        raise Rejected("a signature is too short")
    return name, signature
