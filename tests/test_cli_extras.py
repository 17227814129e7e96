"""Every optional library a command needs is checked before any work, with the exact install command
(issue 27 item 2: eval once ingested for 35 minutes before failing on pytrec_eval).

A library is made missing for one test with ``sys.modules[name] = None``: nothing is uninstalled.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.test_eval import write_beir
from toolish_rag.cli import main


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _refusal(argv: list[str]) -> str:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    return str(stopped.value.code)


def test_eval_without_pytrec_eval_stops_before_ingesting(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = write_beir(here / 'mini')
    monkeypatch.setitem(sys.modules, 'pytrec_eval', None)
    said = _refusal(['eval', str(folder), '--embedder', 'hashing'])
    assert said == 'toolish-rag: eval needs pytrec_eval: pip install "toolish-rag-slim[eval]"'
    assert not (here / '.toolish-rag').exists(), 'eval opened (and filled) its store before checking'


@pytest.mark.parametrize(
    ('argv', 'module', 'said'),
    [
        (['mcp'], 'mcp', 'toolish-rag: mcp needs mcp: pip install "toolish-rag-slim[mcp]"'),
        (['mcp', '--http', '127.0.0.1:0', '--no-auth'], 'uvicorn', 'toolish-rag-slim[mcp]'),
        (
            ['ingest', 'docs', '--watch'],
            'watchfiles',
            'toolish-rag: --watch needs watchfiles: pip install "toolish-rag-slim[watch]"',
        ),
        (['ingest', 'docs', '--ray'], 'ray', 'pip install "toolish-rag-slim[ray]"'),
        (
            ['ingest', 'docs', '--tokenizer', 'tiktoken:cl100k_base'],
            'tiktoken',
            'pip install "toolish-rag-slim[tokens]"',
        ),
    ],
)
def test_each_missing_extra_is_named_before_the_store_is_touched(
    here: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], module: str, said: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    message = _refusal([*argv, '--store', 'memory:./kb'])
    assert said in message and '\n' not in message
    assert not (here / 'kb').exists()


@pytest.mark.parametrize(
    ('argv', 'module', 'said'),
    [
        (
            ['ask', 'why?', '--model', 'anthropic:claude-sonnet-4-5'],
            'anthropic',
            'pip install "pydantic-ai-slim[anthropic]"',
        ),
        (['chat', '--model', 'openai:gpt-5-mini'], 'openai', 'pip install "toolish-rag-slim[openai]"'),
    ],
)
def test_a_missing_model_provider_is_named_before_the_store_is_opened(
    here: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    module: str,
    said: str,
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    assert main([*argv, '--store', 'memory:./kb']) == 2  # the store does not exist: the model is said first
    err = capsys.readouterr().err
    assert err.startswith(f"toolish-rag: model '{argv[-1]}' needs its provider library") and said in err
    assert err.count('\n') == 1


def test_without_split_the_error_names_the_splits_there(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = write_beir(here / 'mini')
    (folder / 'qrels' / 'test.tsv').rename(folder / 'qrels' / 'train.tsv')
    assert main(['eval', str(folder), '--embedder', 'hashing']) == 2
    err = capsys.readouterr().err
    assert "split 'test'" in err and 'its splits: train (pass --split train)' in err


def test_a_missing_extra_raised_inside_a_command_is_one_line_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    # The library's own check (the readers, the default embedder) reaches the command as MissingExtraError.
    from toolish_rag._extras import MissingExtraError
    from toolish_rag.cli._errors import report

    assert report(MissingExtraError('toolish_rag.ingest (the document readers)', 'documents', 'bs4')) == 2
    said = capsys.readouterr().err
    assert said == (
        "toolish-rag: toolish_rag.ingest (the document readers) needs the 'documents' extra (not installed: bs4): "
        'pip install "toolish-rag-slim[documents]"\n'
    )
