"""The strict text rules shared by notes, checkpoints, entries and receipts.

Every value has exactly one accepted spelling, so a changed byte never reads as the same value:
base64 must be canonical (Python's decoder ignores the spare bits of the last character) and
decimals have no sign, no spaces and no leading zeros.
"""

import base64
import binascii


class Rejected(ValueError):
    """A receipt, checkpoint, note or proof that does not verify; the message says why in English."""


def b64decode(text: str, what: str) -> bytes:
    try:
        value = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise Rejected(f"{what} is not base64") from None
    if base64.b64encode(value).decode("ascii") != text:
        raise Rejected(f"{what} is not canonical base64")
    return value


def b64encode(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def decimal(text: str, what: str) -> int:
    """A tree size or an index: at most 20 digits, the width of a 64-bit count."""
    if not text.isascii() or not text.isdigit() or len(text) > 20 or (len(text) > 1 and text[0] == "0"):
        raise Rejected(f"{what} is not a decimal number without leading zeros")
    return int(text)
