"""The content model refuses lone UTF-16 surrogates in every string field, where a record is built.

No store can encode them (LanceDB and Tantivy crashed at write time, JSON persistence too), so a
record holding one must fail where it is made, naming the field, not deep inside a store.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from toolish_rag import DocumentBuilder, Entity

BAD = 'a\ud800b'


def _build(**overrides: object) -> None:
    fields = {'uri': 'file:///a.md', 'title': 'Title', 'section': 'Body', 'text': 'body text', 'metadata': {}}
    fields.update(overrides)
    b = DocumentBuilder(str(fields['uri']), str(fields['title']), metadata=fields['metadata'])  # type: ignore[arg-type]
    b.add_chunk(b.section(str(fields['section'])), str(fields['text']))
    b.build()


@pytest.mark.parametrize(
    ('overrides', 'field'),
    [
        ({'title': BAD}, 'title'),
        ({'uri': 'file:///' + BAD}, 'uri'),
        ({'section': BAD}, 'section'),
        ({'text': BAD}, 'text'),
        ({'metadata': {'k': BAD}}, "metadata 'k'"),
        ({'metadata': {'k': ['fine', '\udfff']}}, "metadata 'k'"),
    ],
)
def test_documents_refuse_lone_surrogates(overrides: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError, match='lone UTF-16 surrogate'):
        _build(**overrides)


def test_entities_refuse_lone_surrogates_and_valid_text_passes() -> None:
    with pytest.raises(ValidationError, match='name holds a lone UTF-16 surrogate at character 1'):
        Entity(id='e', name=BAD)
    with pytest.raises(ValidationError, match='labels'):
        Entity(id='e', name='ok', labels=frozenset({BAD}))
    assert Entity(id='e', name='naïve 😀 \U0001f600 中文').name.endswith('中文')
    _build(title='naïve 😀', text='中文 text', metadata={'k': ['ü', 'ß']})
