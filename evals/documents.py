"""Resume files made from text, for the tests and the injection eval (evals/files.py): minimal PDFs
written byte by byte (so every hidden-text trick is under the caller's control; Helvetica, so text
in Windows-1252 only) and DOCX files made with python-docx. All text is fictional."""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass

# A 2x2 grey image, for "text under an image".
_IMAGE = (
    b"<< /Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray /BitsPerComponent 8 /Length 4 >>"
)


@dataclass(frozen=True)
class Text:
    """One line of text drawn on a page: where, how large, in which colour and render mode."""

    text: str
    x: float = 72
    y: float = 720
    size: float = 11
    rgb: tuple[float, float, float] = (0, 0, 0)
    render_mode: int = 0

    def operators(self) -> str:
        escaped = self.text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        r, g, b = self.rgb
        return (
            f"BT /F1 {self.size:g} Tf {r:g} {g:g} {b:g} rg {self.render_mode} Tr"
            f" 1 0 0 1 {self.x:g} {self.y:g} Tm ({escaped}) Tj ET\n"
        )


def lines_at(texts: list[str], *, top: float = 720, leading: float = 16, **style) -> list[Text]:
    """Visible lines down a page, one under the other."""
    return [Text(text, y=top - leading * i, **style) for i, text in enumerate(texts)]


def image_over(x: float, y: float, width: float, height: float) -> str:
    """Operators that paint the page's image over a rectangle (drawn after the text it hides)."""
    return f"q {width:g} 0 0 {height:g} {x:g} {y:g} cm /Im1 Do Q\n"


def content(items: list[Text | str]) -> str:
    return "".join(item if isinstance(item, str) else item.operators() for item in items)


def pdf(pages: list[str], *, media_box: tuple[float, float] = (612, 792), compress: bool = False) -> bytes:
    # (pages: content streams in Windows-1252, Helvetica's encoding here)
    """A PDF of `pages` (content streams), Helvetica as /F1 and a small image as /Im1 on every page."""
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",  # the page tree, once the pages' numbers are known
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        _IMAGE + b"\nstream\n\x40\x80\xc0\xff\nendstream",
    ]
    kids = []
    for stream in pages:
        data = stream.encode("cp1252")
        header = f"<< /Length {len(zlib.compress(data)) if compress else len(data)}"
        if compress:
            data, header = zlib.compress(data), header + " /Filter /FlateDecode"
        objects.append(f"{header} >>\nstream\n".encode() + data + b"\nendstream")
        content_number = len(objects)
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {media_box[0]:g} {media_box[1]:g}]"
            f" /Resources << /Font << /F1 3 0 R >> /XObject << /Im1 4 0 R >> >>"
            f" /Contents {content_number} 0 R >>".encode()
        )
        kids.append(f"{len(objects)} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>".encode()
    return assemble(objects)


def assemble(objects: list[bytes], *, trailer_extra: str = "") -> bytes:
    """A PDF file of numbered objects (1 = the catalogue), with a correct cross-reference table."""
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    out.write(
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R {trailer_extra}>>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return out.getvalue()


def text_pdf(texts: list[str], **style) -> bytes:
    """A one-page PDF of visible lines."""
    return pdf([content(lines_at(texts, **style))])


def docx(paragraphs: list[tuple[str, dict]]) -> bytes:
    """A DOCX of paragraphs, each (text, how): how may say style ("Heading 1", "List Bullet"),
    hidden (a vanished run), rgb ("FFFFFF"), size_pt, or footer (the text goes in the footer)."""
    import docx as python_docx
    from docx.shared import Pt, RGBColor

    document = python_docx.Document()
    for text, how in paragraphs:
        if how.get("footer"):
            document.sections[0].footer.paragraphs[0].text = text
            continue
        paragraph = document.add_paragraph(style=how.get("style"))
        run = paragraph.add_run(text)
        if how.get("hidden"):
            run.font.hidden = True
        if how.get("rgb"):
            run.font.color.rgb = RGBColor.from_string(how["rgb"])
        if how.get("size_pt"):
            run.font.size = Pt(how["size_pt"])
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
