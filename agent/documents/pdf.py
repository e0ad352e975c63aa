"""PDF pages read with PDFium (pypdfium2): each character's text, size, colour, render mode,
place and the images painted after it give the lines and what hides them.

PDFium's own text order is the page's reading order (its line breaks are generated characters).
A page's images are few; at most MAX_COVERING_IMAGES of the largest are checked against each
character, so a page is read in time linear in its characters.
"""

from __future__ import annotations

import ctypes
import math

import pypdfium2 as pdfium
import pypdfium2.raw as raw

from agent.documents.lines import (
    BREAK,
    COLOUR,
    INVISIBLE,
    MIN_VISIBLE_POINTS,
    OFF_PAGE,
    PDF,
    TINY,
    UNDER_IMAGE,
    Document,
    DocumentRefused,
    Line,
    assemble,
)

NEAR_WHITE = 240  # each of R, G, B at least this (of 255): unreadable on a white page
MAX_COVERING_IMAGES = 16
# Render modes that paint no glyph: 3 invisible, 7 clipping path only.
PAINTLESS_MODES = {raw.FPDF_TEXTRENDERMODE_INVISIBLE, raw.FPDF_TEXTRENDERMODE_CLIP}


def read_pdf(data: bytes, max_pages: int) -> Document:
    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as error:
        encrypted = raw.FPDF_GetLastError() == raw.FPDF_ERR_PASSWORD or "password" in str(error).lower()
        raise DocumentRefused("encrypted" if encrypted else "damaged") from None
    try:
        count = len(document)
        if count > max_pages:
            raise DocumentRefused("too_many_pages")
        lines: list[Line] = []
        for index in range(count):
            lines += _page_lines(document[index], index + 1)
        return Document(PDF, count, lines)
    except pdfium.PdfiumError:
        raise DocumentRefused("damaged") from None
    finally:
        document.close()


def _address(pointer) -> int:
    return ctypes.cast(pointer, ctypes.c_void_p).value or 0


def _images_painted(page) -> tuple[dict[int, int], list[tuple[int, tuple[float, float, float, float]]]]:
    """The page's top-level objects' paint order (by address), and its largest images' boxes with
    their place in that order."""
    order, images = {}, []
    for position in range(raw.FPDFPage_CountObjects(page)):
        item = raw.FPDFPage_GetObject(page, position)
        order[_address(item)] = position
        if raw.FPDFPageObj_GetType(item) == raw.FPDF_PAGEOBJ_IMAGE:
            box = [ctypes.c_float() for _ in range(4)]
            if raw.FPDFPageObj_GetBounds(item, *box):
                left, bottom, right, top = (value.value for value in box)
                images.append((position, (left, bottom, right, top)))
    images.sort(key=lambda image: (image[1][2] - image[1][0]) * (image[1][3] - image[1][1]), reverse=True)
    return order, images[:MAX_COVERING_IMAGES]


def _page_lines(page, number: int) -> list[Line]:
    width, height = page.get_size()
    text_page = page.get_textpage()
    handle = text_page.raw
    order, images = _images_painted(page)
    colour = [ctypes.c_uint() for _ in range(4)]
    box = [ctypes.c_double() for _ in range(4)]
    bounds = [ctypes.c_float() for _ in range(4)]
    matrix = raw.FS_MATRIX()
    # PDFium splits text into objects where the graphics state changes: colour, size and render mode
    # are one text object's, so they are read once per object (a page has a few hundred).
    objects: dict[int, tuple[str | None, int, bool]] = {}

    def object_reason(index: int, text_object) -> tuple[str | None, int, bool]:
        """The object's hidden reason, its place in the paint order, and whether its characters'
        boxes must be checked one by one (it reaches outside the page or under an image)."""
        painted_at = order.get(_address(text_object), -1) if text_object else -1
        if text_object and raw.FPDFTextObj_GetTextRenderMode(text_object) in PAINTLESS_MODES:
            return INVISIBLE, painted_at, False
        if raw.FPDFText_GetFillColor(handle, index, *colour):
            red, green, blue, alpha = (value.value for value in colour)
            if alpha == 0 or min(red, green, blue) >= NEAR_WHITE:
                return COLOUR, painted_at, False
        size = raw.FPDFText_GetFontSize(handle, index)
        if raw.FPDFText_GetMatrix(handle, index, matrix):
            size *= math.sqrt(abs(matrix.a * matrix.d - matrix.b * matrix.c))
        if size < MIN_VISIBLE_POINTS:
            return TINY, painted_at, False
        if not text_object or not raw.FPDFPageObj_GetBounds(text_object, *bounds):
            return None, painted_at, True
        left, bottom, right, top = (value.value for value in bounds)
        inside = left >= 0 and bottom >= 0 and right <= width and top <= height
        covered = any(
            at > painted_at and i_left < right and left < i_right and i_bottom < top and bottom < i_top
            for at, (i_left, i_bottom, i_right, i_top) in images
        )
        return None, painted_at, not inside or covered

    def hidden(index: int) -> str | None:
        text_object = raw.FPDFText_GetTextObject(handle, index)
        key = _address(text_object) if text_object else None
        known = objects.get(key) if key is not None else None
        if known is None:
            known = object_reason(index, text_object)
            if key is not None:
                objects[key] = known
        reason, painted_at, one_by_one = known
        if reason is not None or not one_by_one or not raw.FPDFText_GetCharBox(handle, index, *box):
            return reason
        left, right, bottom, top = (value.value for value in box)
        if right < 0 or left > width or top < 0 or bottom > height:
            return OFF_PAGE
        x, y = (left + right) / 2, (bottom + top) / 2
        for position, (i_left, i_bottom, i_right, i_top) in images:
            if position > painted_at >= 0 and i_left <= x <= i_right and i_bottom <= y <= i_top:
                return UNDER_IMAGE
        return None

    def characters():
        for index in range(raw.FPDFText_CountChars(handle)):
            code = raw.FPDFText_GetUnicode(handle, index)
            if code in (0x0A, 0x0D):
                yield BREAK
                continue
            # Control characters and lone UTF-16 halves are nobody's text.
            character = chr(code) if 0x20 <= code < 0xD800 or 0xE000 <= code < 0x110000 else " "
            if raw.FPDFText_IsGenerated(handle, index) or character.isspace():
                yield (" ", None)
            else:
                yield (character, hidden(index))

    try:
        return assemble(characters(), number)
    finally:
        text_page.close()
        page.close()
