"""Resume files made by the tests: the builders (evals/documents.py, shared with the injection
eval) and the hostile files each reader must refuse within its bounds. All text is fictional."""

from __future__ import annotations

import io
import zipfile
import zlib

from evals.documents import Text, assemble, content, docx, image_over, lines_at, pdf, text_pdf

__all__ = ["HOSTILE", "Text", "assemble", "content", "docx", "image_over", "lines_at", "pdf", "text_pdf"]


# --- hostile files: each must be refused within the reader's bounds ------------------------------


def _deflated(chunk: bytes, times: int, level: int = 9) -> bytes:
    packer = zlib.compressobj(level)
    return b"".join(packer.compress(chunk) for _ in range(times)) + packer.flush()


def flate_bomb() -> bytes:
    """A page whose content stream inflates (twice deflated) to 300 MB of drawing operators."""
    inner = _deflated(b"BT /F1 1 Tf (aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa) Tj ET\n" * 1000, 5_000, level=1)
    outer = zlib.compress(inner, 9)
    stream = f"<< /Length {len(outer)} /Filter [/FlateDecode /FlateDecode] >>\nstream\n".encode()
    return _one_page(stream + outer + b"\nendstream")


def _one_page(content_object: bytes, page_extra: str = "") -> bytes:
    return assemble(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >>"
            f" /Contents 4 0 R {page_extra}>>".encode(),
            content_object,
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
    )


def deeply_nested() -> bytes:
    """A page whose resources hold arrays nested 200,000 deep."""
    depth = 200_000
    return _one_page(b"<< /Length 0 >>\nstream\n\nendstream", f"/Annots {'[' * depth}{']' * depth}")


def many_pages(count: int = 3000) -> bytes:
    return pdf(["BT /F1 11 Tf 72 720 Td (Page) Tj ET\n"] * count)


def broken_xref() -> bytes:
    """A file cut short, its cross-reference table overwritten with noise."""
    whole = text_pdf(["Chen Mei-Ling", "Data Analyst"])
    return (
        whole[: len(whole) // 3]
        + b"\nxref\n0 9\nzzzz garbage 0000 n\ntrailer\n<< /Size 9 /Root 77 0 R >>\nstartxref\n5\n%%EOF\n"
    )


def encrypted_pdf() -> bytes:
    """A PDF under the standard security handler, its user password unknown."""
    whole = text_pdf(["Chen Mei-Ling", "Data Analyst"])
    head, _, _ = whole.rpartition(b"trailer")
    xref_at = int(whole.rsplit(b"startxref\n", 1)[1].split(b"\n")[0])
    size = whole[whole.index(b"/Size ") + 6 :].split(b" ")[0].decode()
    encrypt = "/Encrypt << /Filter /Standard /V 1 /R 2 /Length 40 /P -4" + f" /O <{'ab' * 32}> /U <{'cd' * 32}> >>"
    ids = f"/ID [<{'01' * 16}> <{'01' * 16}>]"
    return head + f"trailer\n<< /Size {size} /Root 1 0 R {encrypt} {ids} >>\nstartxref\n{xref_at}\n%%EOF\n".encode()


def docx_zip_bomb() -> bytes:
    """A DOCX whose document part inflates to 80 MB (twice the reader's bound)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as part:
            block = b"<w:t>a</w:t>" * 100_000
            for _ in range(80_000_000 // len(block)):
                part.write(block)
    return out.getvalue()


HOSTILE = {
    "flate_bomb": flate_bomb,
    "deeply_nested": deeply_nested,
    "many_pages": many_pages,
    "broken_xref": broken_xref,
    "encrypted": encrypted_pdf,
    "docx_zip_bomb": docx_zip_bomb,
}
