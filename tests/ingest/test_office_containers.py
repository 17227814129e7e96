"""DOCX/XLSX/PPTX that are not ZIP files: encrypted (an OLE compound file), legacy binary, or damaged.

Office encrypts a DOCX/XLSX/PPTX (MS-OFFCRYPTO) by wrapping it in an OLE compound file
(MS-CFB, magic ``D0 CF 11 E0 A1 B1 1A E1``) holding an ``EncryptionInfo`` stream (the key
data) and an ``EncryptedPackage`` stream (the encrypted ZIP). Legacy binary .doc/.xls/.ppt
files are compound files too, without those streams. No encrypted Office file is in
``../shared/data/documents``, ``msoffcrypto-tool`` and ``olefile`` are not installed, so
`compound_file` below writes the compound-file bytes by hand.

What it builds, honestly: a version-3 compound file (512-byte sectors) with a header, one
FAT sector, one directory sector and the streams' data in regular sectors (each stream
padded to 4096 bytes, the mini-stream cutoff, so no mini FAT is needed). Its streams hold
placeholder bytes, not real encryption data or a real Word binary document: the tests are
about telling the containers apart, which only needs the directory. (Checked once by hand
against two independent readers: ``file`` 5.44 reports the encrypted one as "CDFV2
Encrypted", and olefile 0.47 lists the same streams.)
"""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import pytest

from toolish_rag.ingest import ReadError, parse_path

SECTOR = 512
FREE, END_OF_CHAIN, FAT_SECTOR, NO_STREAM = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD, 0xFFFFFFFF
MAGIC = bytes.fromhex('D0CF11E0A1B11AE1')


def _dir_entry(name: str, kind: int, *, child: int = NO_STREAM, right: int = NO_STREAM, start: int = 0, size: int = 0) -> bytes:  # fmt: skip
    encoded = name.encode('utf-16-le') + b'\0\0'
    return (
        encoded.ljust(64, b'\0')
        + struct.pack('<HBB', len(encoded), kind, 1)  # name length, type (1 storage, 2 stream, 5 root), black
        + struct.pack('<III', NO_STREAM, right, child)  # left sibling, right sibling, child
        + b'\0' * 16  # CLSID
        + b'\0' * 4  # state bits
        + b'\0' * 16  # creation and modification times
        + struct.pack('<IQ', start, size)
    )


def compound_file(streams: dict[str, bytes]) -> bytes:
    """A minimal MS-CFB v3 file whose root storage holds ``streams`` (at most 3, each padded to 4096 bytes).

    Layout: sector 0 is the FAT, sector 1 the directory (4 entries: the root and up to 3
    streams), then each stream's 8 sectors. The root's children are chained through
    right siblings in CFB name order (length, then upper-case); the red-black colours are
    all black, which CFB readers do not check.
    """
    assert 1 <= len(streams) <= 3
    ordered = sorted(streams, key=lambda n: (len(n), n.upper()))
    per_stream = 4096 // SECTOR
    fat = [FAT_SECTOR, END_OF_CHAIN]
    entries = [_dir_entry('Root Entry', 5, child=1, start=END_OF_CHAIN)]
    data = b''
    for i, name in enumerate(ordered):
        first = len(fat)
        fat += [*range(first + 1, first + per_stream), END_OF_CHAIN]
        body = streams[name][:4096].ljust(4096, b'\0')
        right = i + 2 if i + 1 < len(ordered) else NO_STREAM
        entries.append(_dir_entry(name, 2, right=right, start=first, size=4096))
        data += body
    directory = b''.join(entries).ljust(SECTOR, b'\0')
    fat_sector = struct.pack(f'<{len(fat)}I', *fat).ljust(SECTOR, b'\xff')
    header = (
        MAGIC
        + b'\0' * 16  # CLSID
        + struct.pack('<HHHHH', 0x3E, 3, 0xFFFE, 9, 6)  # minor, major version 3, byte order, 512 B sectors, 64 B mini
        + b'\0' * 6
        + struct.pack('<IIIIIIIII', 0, 1, 1, 0, 4096, END_OF_CHAIN, 0, END_OF_CHAIN, 0)
        + struct.pack('<109I', 0, *([FREE] * 108))  # DIFAT: the FAT is sector 0
    )
    assert len(header) == SECTOR
    return header + fat_sector + directory + data


ENCRYPTED = {'EncryptionInfo': b'\x04\x00\x04\x00\x40\x00\x00\x00<encryption/>', 'EncryptedPackage': b'\x10' * 64}


@pytest.mark.parametrize('suffix', ['docx', 'xlsx', 'pptx'])
def test_an_encrypted_office_file_is_reported_as_encrypted(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f'salaries.{suffix}'
    path.write_bytes(compound_file(ENCRYPTED))
    with pytest.raises(ReadError) as error:
        parse_path(path)
    message = str(error.value)
    assert message.startswith(f'encrypted {suffix.upper()}: ') and 'password' in message
    assert 'corrupt' not in message and 'ZIP' not in message


def test_a_legacy_word_file_named_docx_is_not_called_encrypted(tmp_path: Path) -> None:
    """A .doc is a compound file too; its text may even mention the encryption stream's name."""
    path = tmp_path / 'old-report.docx'
    text = 'Office keeps the key data in the EncryptionInfo stream.'.encode('utf-16-le')
    path.write_bytes(compound_file({'WordDocument': text, '1Table': b'\0' * 32}))
    with pytest.raises(ReadError) as error:
        parse_path(path)
    message = str(error.value)
    assert message.startswith('not DOCX but a legacy binary Office file')
    assert 'encrypt' not in message.lower() and 'password' not in message


def test_a_damaged_zip_is_still_corrupt(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, 'w') as zf:
        zf.writestr('word/document.xml', '<w:document/>' * 100)
    path = tmp_path / 'cut.docx'
    path.write_bytes(buffer.getvalue()[:-30])  # the end of the central directory is gone
    with pytest.raises(ReadError, match=r'^corrupt DOCX \(not a readable ZIP container\)'):
        parse_path(path)


@pytest.mark.parametrize(
    'data',
    [MAGIC, MAGIC + b'\xff' * 600, compound_file(ENCRYPTED)[:700]],
    ids=['magic-only', 'garbage-header', 'no-directory-sector'],
)
def test_a_truncated_compound_file_is_not_called_encrypted(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / 'stub.xlsx'
    path.write_bytes(data)
    with pytest.raises(ReadError) as error:
        parse_path(path)
    assert str(error.value).startswith('not XLSX but a legacy binary Office file')
