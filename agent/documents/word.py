"""DOCX files read with python-docx: the body's paragraphs and tables in order, then the headers'
and footers', each paragraph a line (a heading as it stands, a list item with a "- "), its runs
marked hidden when Word would not show them (w:vanish, white, under MIN_VISIBLE_POINTS).

A DOCX is a zip: its declared sizes are checked before anything is inflated (a zip bomb is
refused unread), and the worker's address-space limit stops one whose sizes lie.
"""

from __future__ import annotations

import io
import zipfile

from agent.documents.lines import (
    BREAK,
    COLOUR,
    DOCX,
    HIDDEN_RUN,
    MIN_VISIBLE_POINTS,
    TINY,
    Document,
    DocumentRefused,
    assemble,
)

MAX_UNCOMPRESSED_BYTES = 40 * 1024 * 1024
MAX_ZIP_ENTRIES = 2000
MAX_COMPRESSION_RATIO = 200  # a part that inflates more than this is a bomb, not a document
NEAR_WHITE = 0xF0


def check_zip(data: bytes) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, ValueError, EOFError):
        raise DocumentRefused("damaged") from None
    if len(entries) > MAX_ZIP_ENTRIES or sum(entry.file_size for entry in entries) > MAX_UNCOMPRESSED_BYTES:
        raise DocumentRefused("too_complex")
    for entry in entries:
        if entry.file_size > 1024 * 1024 and entry.file_size > MAX_COMPRESSION_RATIO * max(entry.compress_size, 1):
            raise DocumentRefused("too_complex")
    if "word/document.xml" not in {entry.filename for entry in entries}:
        raise DocumentRefused("unsupported")


def read_docx(data: bytes, max_pages: int) -> Document:
    check_zip(data)
    import docx  # python-docx (lxml): imported in the worker only
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = docx.Document(io.BytesIO(data))
    except (PackageNotFoundError, KeyError, ValueError, zipfile.BadZipFile, SyntaxError):
        raise DocumentRefused("damaged") from None
    page, lines = 1, []
    for paragraph in _paragraphs(document):
        lines += assemble(_characters(paragraph), page)
        page += len(paragraph.rendered_page_breaks)  # where Word last laid out a new page
        if page > max_pages:
            raise DocumentRefused("too_many_pages")
    for section in document.sections:
        for part in (section.header, section.footer):
            if not part.is_linked_to_previous or section is document.sections[0]:
                for paragraph in part.paragraphs:
                    lines += assemble(_characters(paragraph), page)
    return Document(DOCX, page, lines)


def _paragraphs(document):
    """The body's paragraphs in order, a table's cells row by row."""
    for block in document.iter_inner_content():
        if hasattr(block, "rows"):
            for row in block.rows:
                for cell in row.cells:
                    yield from cell.paragraphs
        else:
            yield block


def _characters(paragraph):
    style = paragraph.style  # resolved once a paragraph: python-docx looks it up among all the styles
    if style is not None and (style.name or "").startswith("List"):
        yield ("-", None)
        yield (" ", None)
    style_font = style.font if style is not None else None
    for item in paragraph.iter_inner_content():
        for run in item.runs if hasattr(item, "runs") else [item]:
            why = _hidden(run.font, style_font)
            for character in run.text:
                yield BREAK if character in "\n\r" else (character, why if not character.isspace() else None)
    yield BREAK


def _hidden(font, style_font) -> str | None:
    if font.hidden or (font.hidden is None and style_font is not None and style_font.hidden):
        return HIDDEN_RUN
    rgb = font.color.rgb if font.color is not None and font.color.type is not None else None
    if rgb is not None and min(rgb[0], rgb[1], rgb[2]) >= NEAR_WHITE:
        return COLOUR
    size = font.size or (style_font.size if style_font is not None else None)
    if size is not None and size.pt < MIN_VISIBLE_POINTS:
        return TINY
    return None
