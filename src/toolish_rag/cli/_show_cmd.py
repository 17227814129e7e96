"""``toolish-rag show CHUNK_ID --quote "..." --png out.png``: a citation on its page, as the inspector draws it.

The chunk is read through the scope (``--filter``) like every read; the page is drawn only from a file
under a ``--root`` folder whose bytes are the ones ingested (docs/inspect.md#citation-pages).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ._common import open_rag
from ._filter_arg import add_filter_argument, scoped as scoped_rag


def register(sub: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        'show',
        help='a citation on its page: verify a quote in a chunk, print where it stands, draw the page (--png)',
    )
    parser.add_argument('chunk_id', metavar='CHUNK_ID', help='the chunk the quote is from')
    parser.add_argument('--quote', required=True, help='the exact quote (whitespace, quote marks and dashes aside)')
    parser.add_argument('--png', metavar='FILE', default=None, help='write the page, the quote highlighted, here')
    parser.add_argument(
        '--root',
        metavar='DIR',
        action='append',
        default=None,
        help='a folder the ingested file may be drawn from (repeatable; default: the current folder)',
    )
    parser.add_argument('--size', type=int, default=1600, help='the longer side of the picture in pixels (<= 1600)')
    parser.add_argument('--json', action='store_true', help='print the citation source as JSON')
    add_filter_argument(parser, 'a scope the read cannot leave')
    parser.set_defaults(run=run)
    return parser


async def run(args: argparse.Namespace) -> int:
    from ..citations._model import page_and_paragraph
    from ..pictures import PageFiles, citation_picture

    _, rag = open_rag(args)
    rag = scoped_rag(rag, args.filter)
    files = PageFiles.under(*(args.root or [Path.cwd()]))
    found = await citation_picture(rag.retriever(), args.chunk_id, args.quote, files, max_side=args.size)
    if isinstance(found, str):
        print(f'not shown: {found}')
        return 2
    source = found.source
    if args.json:
        print(json.dumps(source.model_dump(mode='json'), indent=2, ensure_ascii=False))
    else:
        place = ' > '.join([source.document_title, *(s for s in source.section_path if s != source.document_title)])
        print(f'verified: {place}{page_and_paragraph(source)} ({source.document_uri})')
        for box in source.boxes:
            print('  box (x0, top, x1, bottom):', ', '.join(f'{v:.4f}' for v in box))
    if args.png:
        if found.picture is None:
            reason = 'the document has no pages' if source.page is None else 'no unchanged file under --root holds it'
            print(f'no picture: {reason}')
            return 1
        Path(args.png).write_bytes(found.picture.png)
        print(f'wrote {args.png} ({found.picture.width} x {found.picture.height} pixels)')
    return 0
