"""Token files: TOML and JSON, shorthand and full filters, strict validation, tokens never echoed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolish_rag import PropertyFilter as F, and_, parse_filter
from toolish_rag.mcp import TokenTable, load_token_table, scope_from_shorthand

TOML = """\
[tokens.acme]
token = "acme-0123456789abcdef"
scope = { tenant = "acme" }

[tokens.globex-2024]
token_env = "GLOBEX_TOKEN"
filter = { op = "and", filters = [
  { op = "eq", key = "tenant", value = "globex" },
  { op = "gte", key = "year", value = 2024 },
] }

[tokens.several]
token = "several-0123456789abcdef"
scope = { tenant = ["acme", "initech"], public = true }

[tokens.admin]
token = "admin-0123456789abcdef"
scope = {}
"""


def test_a_toml_token_file(tmp_path: Path) -> None:
    path = tmp_path / 'tokens.toml'
    path.write_text(TOML)
    table = load_token_table(path, environ={'GLOBEX_TOKEN': 'globex-from-the-environment'})
    assert table.labels == ['acme', 'globex-2024', 'several', 'admin']
    acme = table.authenticate('acme-0123456789abcdef')
    assert acme is not None and acme.label == 'acme' and acme.filter == F.eq('tenant', 'acme')
    globex = table.authenticate('globex-from-the-environment')
    assert globex is not None and globex.filter == and_(F.eq('tenant', 'globex'), F.gte('year', 2024))
    several = table.authenticate('several-0123456789abcdef')
    assert several is not None and several.filter == and_(F.in_('tenant', ['acme', 'initech']), F.eq('public', True))
    admin = table.authenticate('admin-0123456789abcdef')
    assert admin is not None and admin.filter is None


def test_a_json_token_file_is_the_same_structure(tmp_path: Path) -> None:
    path = tmp_path / 'tokens.json'
    data = {
        'tokens': {
            'acme': {'token': 'acme-0123456789abcdef', 'scope': {'tenant': 'acme'}},
            'b': {'token': 'b-0123456789abcdefgh', 'filter': F.ne('tenant', 'acme').model_dump()},
        }
    }
    path.write_text(json.dumps(data))
    table = load_token_table(path)
    found = table.authenticate('b-0123456789abcdefgh')
    assert found is not None and found.filter == parse_filter({'op': 'ne', 'key': 'tenant', 'value': 'acme'})


@pytest.mark.parametrize('presented', [None, '', 'acme', 'acme-0123456789abcdeF', 'acme-0123456789abcdef ', 'x' * 500])
def test_anything_but_an_exact_token_is_refused(presented: str | None) -> None:
    table = TokenTable.from_mapping({'tokens': {'acme': {'token': 'acme-0123456789abcdef', 'scope': {}}}})
    assert table.authenticate(presented) is None


SECRET = 'this-token-must-never-appear-anywhere'


@pytest.mark.parametrize(
    ('entry', 'message'),
    [
        ({'token': SECRET}, 'exactly one of "scope"'),
        ({'token': SECRET, 'scope': {}, 'filter': {'op': 'exists', 'key': 'a'}}, 'exactly one of "scope"'),
        ({'scope': {}}, 'exactly one of "token" or "token_env"'),
        ({'token': SECRET, 'token_env': 'X', 'scope': {}}, 'exactly one of "token"'),
        ({'token_env': 'UNSET_TOKEN_VARIABLE', 'scope': {}}, 'is not set'),
        ({'token': 'short', 'scope': {}}, 'at least 16 characters'),
        ({'token': SECRET, 'scope': {'tenant': {'op': 'ne'}}}, 'use `filter = ...`'),
        ({'token': SECRET, 'scope': {'bad key': 'x'}}, 'bad key'),
        ({'token': SECRET, 'filter': {'op': 'bogus'}}, 'token entry'),
        ({'token': SECRET, 'scope': {}, 'tenant': 'acme'}, 'unknown keys'),
        ('just-a-string', 'expected a table'),
    ],
)
def test_invalid_entries_are_rejected_without_echoing_the_token(entry: Any, message: str) -> None:
    with pytest.raises(ValueError) as info:
        TokenTable.from_mapping({'tokens': {'label': entry}}, environ={})
    assert message in str(info.value)
    assert SECRET not in str(info.value)


def test_table_level_errors() -> None:
    with pytest.raises(ValueError, match='non-empty "tokens" table'):
        TokenTable.from_mapping({'tokens': {}})
    with pytest.raises(ValueError, match='unknown top-level keys'):
        TokenTable.from_mapping({'tokens': {'a': {'token': SECRET, 'scope': {}}}, 'token': 'x'})
    with pytest.raises(ValueError, match='same token'):
        TokenTable.from_mapping({'tokens': {'a': {'token': SECRET, 'scope': {}}, 'b': {'token': SECRET, 'scope': {}}}})


def test_unparseable_files_do_not_quote_their_content(tmp_path: Path) -> None:
    for name, text in [('t.toml', f'[tokens.a]\ntoken = "{SECRET}\n'), ('t.json', f'{{"tokens": {{"a": "{SECRET}"')]:
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(ValueError, match='not valid') as info:
            load_token_table(path)
        assert SECRET not in str(info.value)


def test_reprs_show_labels_only() -> None:
    table = TokenTable.from_mapping({'tokens': {'acme': {'token': SECRET, 'scope': {'tenant': 'acme'}}}})
    found = table.authenticate(SECRET)
    assert SECRET not in repr(table) and SECRET not in repr(found) and 'acme' in repr(table)


def test_shorthand() -> None:
    assert scope_from_shorthand({}) is None
    assert scope_from_shorthand({'tenant': 'acme'}) == F.eq('tenant', 'acme')
    assert scope_from_shorthand({'a': 1, 'b': [1, 2]}) == and_(F.eq('a', 1), F.in_('b', [1, 2]))
