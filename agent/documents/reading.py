"""Which reader a file needs, told by its first bytes; a name only says a file is text (.txt, .md,
or no suffix: then it must be UTF-8)."""

from __future__ import annotations

from agent.documents.lines import Document, DocumentRefused
from agent.documents.pdf import read_pdf
from agent.documents.plain import read_text
from agent.documents.word import read_docx

MAX_PAGES = 30
TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".text")


def read(data: bytes, file_name: str, max_pages: int = MAX_PAGES) -> Document:
    if data.startswith(b"%PDF-") or b"%PDF-" in data[:1024]:
        document = read_pdf(data, max_pages)
    elif data.startswith(b"PK\x03\x04"):
        document = read_docx(data, max_pages)
    elif file_name.lower().endswith(TEXT_SUFFIXES) or "." not in file_name:
        document = read_text(data)
    else:
        raise DocumentRefused("unsupported")
    if not document.lines:
        raise DocumentRefused("empty")
    return document
