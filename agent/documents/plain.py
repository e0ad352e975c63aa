"""Plain text and Markdown: UTF-8 (a BOM allowed), one line per line, all of it visible."""

from __future__ import annotations

from agent.documents.lines import BREAK, TEXT, Document, DocumentRefused, assemble


def read_text(data: bytes) -> Document:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DocumentRefused("unsupported") from None
    return Document(TEXT, 1, assemble(_characters(text), 1))


def _characters(text: str):
    for character in text:
        if character in "\n\r":
            yield BREAK
        elif character == "\x00":
            raise DocumentRefused("unsupported")
        else:
            yield (character, None)
