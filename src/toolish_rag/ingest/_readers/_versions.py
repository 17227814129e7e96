"""Which reader, at which version, reads a file: the part of its fingerprint that is not bytes or chunker.

Every reader module declares ``VERSION``; a bump re-reads exactly the files that reader takes
on the next ingest. Version 0 with the default backend adds nothing to the fingerprint, so
stores written before versions were recorded keep matching until their reader changes
(docs/ingestion.md#reader-versions).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

from . import READERS, Reader
from ._ocr import DEFAULT_OCR, OcrOptions

__all__ = ['READER_BACKENDS', 'ReaderBackend', 'reader_key', 'reader_version']

ReaderBackend = Literal['default', 'unstructured']
"""``'default'``: this package's readers; ``'unstructured'``: the ``unstructured`` library's offline partitioners."""

READER_BACKENDS: tuple[ReaderBackend, ...] = ('default', 'unstructured')

_PACKAGE = __name__.rpartition('.')[0]
_OCR_READERS = frozenset({'pdf', 'image'})
"""Reader modules whose output depends on the OCR settings."""


def reader_version(reader: Reader) -> int:
    """``VERSION`` of the module that defines ``reader`` (or of the reader package it is in)."""
    name = reader.__module__
    while name.startswith(_PACKAGE + '.'):
        version = getattr(sys.modules.get(name), 'VERSION', None)
        if isinstance(version, int):
            return version
        name = name.rpartition('.')[0]
    raise LookupError(f'reader module {reader.__module__} declares no VERSION')


def reader_key(path: Path, backend: ReaderBackend = 'default', ocr: OcrOptions = DEFAULT_OCR) -> str:
    """What reads ``path``, at which version and OCR settings: ``''`` or e.g. ``' reader=pdf/2 ocr=never'``.

    Appended to the chunker's config key in each file's fingerprint. The ``unstructured``
    backend names itself, its own version and the library's, since an upgrade of the
    library changes what it extracts. ``''`` (nothing added) for a version-0 default reader
    under the default OCR settings: the fingerprints written before versions existed.
    """
    if backend == 'unstructured':
        from .unstructured import backend_key

        key = backend_key(path)
        if key is not None:
            return f' reader={key}'
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        return ''
    name = reader.__module__.rpartition('._readers.')[2].split('.')[0]
    parts = [f'{name}/{reader_version(reader)}']
    if name in _OCR_READERS:
        if ocr.mode != DEFAULT_OCR.mode:
            parts.append(f'ocr={ocr.mode}')
        if ocr.languages:
            parts.append(f'ocr_languages={"+".join(ocr.languages)}')
    if parts == [f'{name}/0']:
        return ''
    return ' reader=' + ' '.join(parts)
