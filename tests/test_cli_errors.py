"""CLI errors in the user's words (issue 27 item 9): one line, the right form shown, no internals.

``--filter`` takes ``KEY=VALUE`` like a token file's scope; an unknown option gets the subcommand's usage and
the closest option; each subcommand's help lists only its own options, as plain text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolish_rag import PropertyFilter as F
from toolish_rag.cli import build_parser, main
from toolish_rag.cli._filter_arg import parse_scope

STORE = ['--store', 'memory:./kb', '--embedder', 'hashing']


@pytest.fixture
def kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    monkeypatch.chdir(tmp_path)
    docs = tmp_path / 'docs'
    docs.mkdir()
    (docs / 'acme.md').write_text('---\ntenant: acme\nyear: 2024\n---\n# Acme\n\nRefunds take 14 days at Acme.\n')
    (docs / 'umbrella.md').write_text('---\ntenant: umbrella\nyear: 2023\n---\n# Umbrella\n\nRefunds take 30 days.\n')
    assert main(['ingest', 'docs', *STORE]) == 0
    capsys.readouterr()
    return tmp_path


def _search(capsys: pytest.CaptureFixture[str], *filters: str) -> tuple[int, str, str]:
    argv = ['search', 'refunds take days', '--tool', 'text', *STORE]
    for f in filters:
        argv += ['--filter', f]
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_filter_shorthand_like_a_token_files_scope(kb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _search(capsys, 'tenant=acme')
    assert code == 0 and 'acme.md' in out and 'umbrella.md' not in out
    code, out, _ = _search(capsys, 'tenant=acme', 'year=2023')  # repeated: all of them
    assert code == 0 and 'acme.md' not in out and 'umbrella.md' not in out
    code, out, _ = _search(capsys, 'year=2023')  # a number, as in a token file
    assert code == 0 and 'umbrella.md' in out and 'acme.md' not in out


def test_shorthand_values_are_typed_as_in_token_files() -> None:
    assert parse_scope('tenant=acme') == F.eq('tenant', 'acme')
    assert parse_scope('tenant="acme"') == F.eq('tenant', 'acme')
    assert parse_scope('year=2024') == F.eq('year', 2024)
    assert parse_scope('draft=true') == F.eq('draft', True)
    assert parse_scope('tenant=["a", "b"]') == F.in_('tenant', ['a', 'b'])
    assert parse_scope('{"op":"eq","key":"tenant","value":"acme"}') == F.eq('tenant', 'acme')


@pytest.mark.parametrize(
    ('value', 'said'),
    [
        ('{"op":"eqq","key":"tenant","value":"acme"}', '"op" eqq is not one of eq, ne'),
        ('{"op":"eq","key":"tenant"}', 'value: Field required'),
        ('{"key":"tenant"}', 'no "op"'),
        ('{bad', 'invalid JSON'),
        ('tenant', 'neither KEY=VALUE nor a JSON filter'),
    ],
)
def test_a_wrong_filter_is_one_human_line(kb: Path, capsys: pytest.CaptureFixture[str], value: str, said: str) -> None:
    code, out, err = _search(capsys, value)
    assert code == 2 and out == ''  # a usage error
    assert err.startswith('toolish-rag: --filter ') and said in err
    message = err.removesuffix('\n')
    assert '\n' not in message and 'pydantic' not in message and 'errors.pydantic.dev' not in message
    assert 'tenant=acme' in message  # the right form, shown


def test_a_misspelt_option_gets_the_subcommands_usage_and_the_close_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(['search', 'refund', '--topk', '3'])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith('usage: toolish-rag search ')
    assert 'unrecognized arguments: --topk 3; did you mean --top-k?' in err


def _options(command: str) -> set[str]:
    parser = build_parser()
    return {s for action in parser.commands[command]._actions for s in action.option_strings}  # type: ignore[attr-defined]


def test_each_subcommand_lists_only_its_options() -> None:
    toolset = {'--name', '--filterable', '--group-by-document'}
    for writer in ('ingest', 'upgrade'):
        assert not _options(writer) & (toolset | {'--reranker', '--rerank-candidates'})
    assert not _options('eval') & toolset
    assert '--reranker' in _options('eval')
    assert toolset <= _options('search')


def test_help_is_plain_text_and_eval_states_its_own_default(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ('graph', 'eval'):
        with pytest.raises(SystemExit):
            main([command, '--help'])
        out = capsys.readouterr().out
        assert '``' not in out
        if command == 'eval':
            text = ' '.join(out.split())
            assert 'default: memory; a bare NAME' in text and '.toolish-rag/eval/DATASET-NAME' in text
            assert '$TOOLISH_RAG_STORE' not in text  # eval never opens the default store
