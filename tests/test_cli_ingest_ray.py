"""``toolish-rag ingest --ray [ADDRESS]`` / ``--watch``: the options, and the extra named when its library is missing.

A library is made missing the way Python itself spells "not importable": ``None`` in
``sys.modules`` (``import`` raises ``ImportError``, ``find_spec`` returns ``None``). Running
ingestion on Ray is tested in tests/ingest/test_ray_ingest.py; here nothing starts Ray.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from toolish_rag.cli import build_parser, main


@pytest.mark.parametrize(
    ('argv', 'ray'),
    [
        (['docs'], None),  # no --ray: the in-process pipeline
        (['docs', '--ray'], True),  # Ray's default: $RAY_ADDRESS, else a local instance
        (['docs', '--ray', 'auto'], 'auto'),
        (['docs', '--ray=ray://head:10001'], 'ray://head:10001'),
    ],
)
def test_ray_takes_an_optional_address(argv: list[str], ray: object) -> None:
    args = build_parser().parse_args(['ingest', *argv])
    assert args.ray == ray and args.paths == ['docs']


@pytest.mark.parametrize(('flag', 'module', 'extra'), [('--ray', 'ray', 'ray'), ('--watch', 'watchfiles', 'watch')])
def test_a_missing_extra_is_named_before_anything_is_opened(
    flag: str, module: str, extra: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / 'docs').mkdir()
    (tmp_path / 'docs' / 'a.md').write_text('# A\n\nalpha\n')
    monkeypatch.setitem(sys.modules, module, None)
    kb = tmp_path / 'kb'
    with pytest.raises(SystemExit) as exited:
        main(['ingest', str(tmp_path / 'docs'), flag, '--store', f'memory:{kb}', '--embedder', 'hashing'])
    assert str(exited.value) == f'toolish-rag: {flag} needs {module}: pip install "toolish-rag-slim[{extra}]"'
    assert not kb.exists()  # refused before the store was opened or anything ingested
