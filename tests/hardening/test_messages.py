"""Messages that say what actually happened (issue 41 item 11).

Before the fix a blank PDF read under the default ``ocr='auto'`` was told to "ingest with
ocr='auto'", and ``--store A=SPEC`` beside another ``--store`` was refused as "given several
times" when the name's capital letter was the reason.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from toolish_rag.cli import main
from toolish_rag.ingest import ReadError, parse_path
from toolish_rag.ingest._readers._ocr import OcrOptions


def _blank_pdf(path: Path) -> Path:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument.new()
    pdf.new_page(612, 792)
    buffer = io.BytesIO()
    pdf.save(buffer)
    pdf.close()
    path.write_bytes(buffer.getvalue())
    return path


def test_a_blank_pdf_under_auto_is_not_told_to_use_auto(tmp_path: Path) -> None:
    path = _blank_pdf(tmp_path / 'blank.pdf')
    with pytest.raises(ReadError) as auto:
        parse_path(path)  # the default: ocr='auto'
    assert "ingest with ocr='auto'" not in str(auto.value)
    assert "ocr='always' OCRs every page" in str(auto.value)
    with pytest.raises(ReadError, match="ingest with ocr='auto' to OCR it"):
        parse_path(path, ocr=OcrOptions('never'))


@pytest.mark.parametrize('name', ['A', 'Docs', '1st', 'a.b', 'x' * 33])
def test_a_store_member_name_is_refused_for_its_characters(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        main(['tools', '--store', f'{name}=memory:./a', '--store', 'code=memory:./b'])
    message = str(stopped.value.code)
    assert message.startswith(f'toolish-rag: --store {name!r}=...: a member name is 1 to 32 of a-z')
    assert 'several times' not in message
