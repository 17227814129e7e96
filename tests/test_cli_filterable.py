"""``--filterable KEY=TYPE`` and ``--group-by-document``: the CLI (and so the MCP server) offer what the API does.

The options build the same ``filterable=`` declaration and ``allow_grouping`` a program passes to
`ToolishRag`, so ``toolish-rag tools`` shows the model-visible schema a deployment will serve, and a
bad declaration stops the command with a message rather than serving a toolset without it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolish_rag.cli import main
from toolish_rag.cli._common import filterable_keys
from toolish_rag.manifest import StoreManifest, write_manifest
from toolish_rag.toolset import FilterableKey


def test_specs_become_a_declaration() -> None:
    keys = filterable_keys(['year=int', 'score=float', 'path=str', 'live=bool', 'product=basic|pro'])
    assert keys == {
        'year': FilterableKey(int),
        'score': FilterableKey(float),
        'path': FilterableKey(str),
        'live': FilterableKey(bool),
        'product': FilterableKey(str, values=('basic', 'pro')),
    }
    assert filterable_keys([]) is None


@pytest.mark.parametrize('spec', ['year', 'year=', '=int', 'bad key=int', 'product=a|a'])
def test_a_bad_spec_stops_the_command(spec: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_manifest(tmp_path / 'kb', StoreManifest('memory'))  # an empty store: some specs are checked by the toolset
    with pytest.raises(SystemExit, match='--filterable'):
        main(['tools', '--store', 'memory:./kb', '--embedder', 'hashing', '--filterable', spec])


def test_tools_shows_the_filter_and_group_by_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write_manifest(tmp_path / 'kb', StoreManifest('memory'))  # an empty store (a read command refuses a missing one)
    args = ['tools', '--store', 'memory:./kb', '--embedder', 'hashing']
    assert main(args) == 0
    plain = capsys.readouterr().out
    assert '"filter"' not in plain and '"group_by"' not in plain and 'docs_list_values' not in plain
    assert main([*args, '--filterable', 'year=int', '--filterable', 'product=basic|pro', '--group-by-document']) == 0
    out = capsys.readouterr().out
    assert '## docs_list_values' in out
    search = next(line for line in out.splitlines() if line.startswith('parameters:') and '"query"' in line)
    schema = json.loads(search.removeprefix('parameters: '))
    declared = schema['properties']['filter']['properties']  # optional: not required (compact, docs/toolset.md)
    assert set(declared) == {'year', 'product', 'any_of', 'not'}
    assert declared['product']['$ref'] == '#/$defs/product'  # a key's operators are defined once per tool
    assert schema['$defs']['product']['anyOf'][0]['enum'] == ['basic', 'pro']
    assert schema['properties']['group_by']['const'] == 'document'
