"""ZIP containers (DOCX, XLSX, PPTX, EPUB) checked before any parser sees them: the zip-bomb guard.

Every member's declared and actual decompressed size, the total, the compression ratio and
the XML tags are checked in one streaming pass, so a 256 KB file that unpacks to 256 MB is
refused in about a second instead of feeding a parser. See docs/ingestion.md#bounds-per-file.
"""

from __future__ import annotations

import io
import zipfile
import zlib

from .._limits import IngestLimits, check_time, current_limits
from .._model import ReadError

__all__ = ['check_members', 'open_container']

_RATIO_FLOOR = 1024 * 1024
"""Members smaller than this are never refused for their ratio (a tiny part can compress very well)."""
_XML_SUFFIXES = ('.xml', '.rels', '.xhtml', '.html', '.htm', '.opf', '.ncx')
_CHUNK = 1024 * 1024


def open_container(data: bytes, kind: str) -> zipfile.ZipFile:
    """Open ``data`` as a ZIP and `check_members`; raises `ReadError` (``zipfile.BadZipFile`` when not a ZIP)."""
    zf = zipfile.ZipFile(io.BytesIO(data))
    try:
        check_members(zf, kind)
    except BaseException:
        zf.close()
        raise
    return zf


def check_members(zf: zipfile.ZipFile, kind: str) -> None:
    """Refuse a container over the `IngestLimits` in force; also verifies every member's CRC."""
    limits = current_limits()
    total = 0
    for info in zf.infolist():
        _check_declared(info, kind, limits)
        total += info.file_size
        if total > limits.unpacked_bytes:
            raise ReadError(f'{kind} unpacks to more than the {limits.unpacked_bytes:,}-byte limit (a zip bomb?)')
    unpacked = tags = 0
    for info in zf.infolist():
        counts_tags = info.filename.lower().endswith(_XML_SUFFIXES)
        try:
            with zf.open(info) as member:
                while chunk := member.read(_CHUNK):
                    unpacked += len(chunk)
                    if unpacked > limits.unpacked_bytes:
                        raise ReadError(f'{kind} unpacks to more than the {limits.unpacked_bytes:,}-byte limit')
                    if counts_tags:
                        tags += chunk.count(b'<')
                        if tags > limits.elements:
                            raise ReadError(f'{kind} holds more than the {limits.elements:,}-element limit of XML tags')
                    check_time()
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise ReadError(f'corrupt {kind}: damaged member {info.filename} ({exc})') from None
        except NotImplementedError as exc:
            raise ReadError(f'unreadable {kind}: member {info.filename}: {exc}') from None


def _check_declared(info: zipfile.ZipInfo, kind: str, limits: IngestLimits) -> None:
    if info.file_size > limits.unpacked_bytes:
        raise ReadError(
            f'{kind} member {info.filename} unpacks to {info.file_size:,} bytes, '
            f'over the {limits.unpacked_bytes:,}-byte limit (a zip bomb?)'
        )
    ratio = info.file_size / max(1, info.compress_size)
    if info.file_size > _RATIO_FLOOR and ratio > limits.compression_ratio:
        raise ReadError(
            f'{kind} member {info.filename} is compressed {ratio:,.0f} times '
            f'({info.compress_size:,} -> {info.file_size:,} bytes), over the {limits.compression_ratio:g}x limit '
            '(a zip bomb?)'
        )
