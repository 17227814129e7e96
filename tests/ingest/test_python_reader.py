"""The Python reader: sections from the `ast`, text kept exactly, and a code graph over what it ingests.

Everything runs through the real pipeline (`ingest` into an InMemoryStore with the hashing
embedder, or `parse_path`) and the real `CodeGraphBuilder`, which accepts a module only when
every stored chunk is found at its offsets in the file.
"""

from __future__ import annotations

import itertools
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Literal

import pydantic_ai

from toolish_rag.content import Chunk
from toolish_rag.embedding import HashingEmbeddingModel
from toolish_rag.graph.walk import WalkRequest, walk
from toolish_rag.graph_builders import CodeGraphBuilder, build_graph
from toolish_rag.graph_builders.code import code_entity_id
from toolish_rag.ingest import READERS, Chunker, ParsedSection, file_uri, ingest, parse_path, read_file
from toolish_rag.ingest._readers.python import read_python
from toolish_rag.ingest._readers.text import decode_text
from toolish_rag.search import ExpansionRequest
from toolish_rag.stores import InMemoryStore

PYDANTIC_AI = Path(pydantic_ai.__file__ or '').parent
VERSION = f'{sys.version_info.major}.{sys.version_info.minor}'

MODULE = '''\
"""Greetings, in a café."""

from __future__ import annotations

import re

# the only pattern


def shout(text: str) -> str:
    return text.upper()

LIMIT = 3
"""How many greetings."""


# -- the greeter --

@dataclass
class Greeter:
    """Greets people."""

    name: str

    # formats one line
    def _format(self, who: str) -> str:
        def inner() -> str:
            return who
        return f'{self.name}: {inner()}'

    async def greet(self, who: str) -> str:
        return self._format(who)

    alias = greet

if __name__ == '__main__':
    print(shout('hi'))
'''


def _tree(section: ParsedSection) -> list[tuple[str, object]]:
    return [(c.title, _tree(c)) for c in section.children]


def _texts(source: str, section: ParsedSection) -> list[str]:
    return [source[b.start : b.end] for b in section.blocks]


def _sections(root: ParsedSection) -> dict[str, ParsedSection]:
    return {s.title: s for s in root.walk()[1:]}


def test_outline_follows_classes_functions_and_methods(tmp_path: Path) -> None:
    path = tmp_path / 'greet.py'
    path.write_text(MODULE, encoding='utf-8')
    parsed = read_file(path)
    assert READERS['.py'] is read_python and READERS['.pyi'] is read_python
    assert (parsed.title, parsed.format, parsed.warnings, parsed.source) == ('greet.py', 'python', [], MODULE)
    assert _tree(parsed.root) == [
        ('def shout', []),
        ('LIMIT = 3', []),
        ('class Greeter', [('def _format', []), ('async def greet', []), ('alias = greet', [])]),
        ("if __name__ == '__main__':", []),
    ]
    source = parsed.source
    # the preamble is the document's own text; the comment above ``def shout`` is part of its section
    assert _texts(source, parsed.root) == [
        '"""Greetings, in a café."""',
        'from __future__ import annotations',
        'import re',
    ]
    sections = _sections(parsed.root)
    assert _texts(source, sections['def shout']) == [
        '# the only pattern',
        'def shout(text: str) -> str:\n    return text.upper()',
    ]
    assert _texts(source, sections['LIMIT = 3']) == ['LIMIT = 3\n"""How many greetings."""']
    # banner, decorator, class line, docstring and attributes: the class's own text, before its methods
    assert _texts(source, sections['class Greeter']) == [
        '# -- the greeter --',
        '@dataclass\nclass Greeter:\n    """Greets people."""',
        'name: str',
    ]
    # a nested function is the method's text, indentation kept; the comment above the method is its own
    assert _texts(source, sections['def _format']) == [
        '# formats one line\n    def _format(self, who: str) -> str:\n        def inner() -> str:\n'
        "            return who\n        return f'{self.name}: {inner()}'"
    ]
    assert _texts(source, sections['alias = greet']) == ['alias = greet']
    assert [s.level for s in parsed.root.walk()[1:]] == [1, 1, 1, 2, 2, 2, 1]


def test_a_file_that_is_not_python_3_is_text_in_one_part(tmp_path: Path) -> None:
    path = tmp_path / 'legacy.py'
    path.write_text('# Python 2\n\nprint "hello"\n\n\ndef f():\n    print "bye"\n', encoding='utf-8')
    parsed = read_python(path.read_bytes(), path)
    assert parsed.root.children == []
    assert _texts(parsed.source, parsed.root) == ['# Python 2', 'print "hello"', 'def f():\n    print "bye"']
    assert parsed.warnings == [f'not valid Python {VERSION} syntax (line 3): read as plain text, without sections']


def test_python_s_warnings_about_the_code_read_are_not_shown(tmp_path: Path) -> None:
    path = tmp_path / 'regex.py'
    path.write_text("import re\n\nDIGITS = re.compile('\\d+')\n", encoding='utf-8')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        parsed = read_python(path.read_bytes(), path)
    assert parsed.warnings == [] and [str(w.message) for w in caught] == []
    assert _texts(parsed.source, parsed.root) == ['import re', "DIGITS = re.compile('\\d+')"]


async def test_a_folder_with_bad_python_still_ingests(tmp_path: Path) -> None:
    (tmp_path / 'legacy.py').write_text('print "hello"\n', encoding='utf-8')
    (tmp_path / 'stub.pyi').write_text('def f(x: int) -> str: ...\n', encoding='utf-8')
    store = InMemoryStore(HashingEmbeddingModel(64))
    report = await ingest(store, tmp_path, progress=False)
    assert report.ok and not report.skipped and len(report.added) == 2
    assert [w.reason for w in report.warnings] == [
        f'not valid Python {VERSION} syntax (line 1): read as plain text, without sections'
    ]


def _assert_exact(source: str, chunks: list[Chunk]) -> None:
    assert chunks
    for chunk in chunks:
        assert chunk.start_char is not None and chunk.end_char is not None
        assert chunk.urtext == source[chunk.start_char : chunk.end_char], chunk.id


async def _chunks(store: InMemoryStore, document_id: str) -> list[Chunk]:
    chunks = list(await store.expand(ExpansionRequest(document_id=document_id, limit=500)))
    assert len(chunks) < 500
    return chunks


async def test_chunks_are_exact_slices_even_when_a_function_is_split(tmp_path: Path) -> None:
    steps = '\n\n'.join(f'    # step {i}: café\n    total += compute({i}, factor={i * 2})' for i in range(40))
    big = f'def big(total: int) -> int:\n{steps}\n    return total\n'
    path = tmp_path / 'big.py'
    path.write_bytes(f'"""Doc."""\r\n\r\nimport os\r\n\r\n\r\n{big}'.replace('\n', '\r\n').encode('utf-8'))
    store = InMemoryStore(HashingEmbeddingModel(64))
    report = await ingest(store, path, chunker=Chunker(chunk_size=300), progress=False)
    assert report.ok and len(report.added) == 1
    [info] = await store.list_documents()
    chunks = await _chunks(store, info.id)
    source = decode_text(path.read_bytes())  # what the code graph reads, too: line endings normalised
    _assert_exact(source, chunks)
    pieces = [c for c in chunks if c.section_path == ('def big',)]
    assert len(pieces) > 3
    assert pieces[0].urtext.startswith('def big(total: int) -> int:\n    # step 0: café\n    total +=')
    assert pieces[-1].urtext.endswith('\n    return total')
    # together, in order and without overlap, the pieces hold every character of the function but blank space
    spans = [(p.start_char or 0, p.end_char or 0) for p in pieces]
    assert spans[0][0] == source.index('def big') and spans[-1][1] == len(source.rstrip())
    assert all(end <= start and not source[end:start].strip() for (_, end), (start, _) in itertools.pairwise(spans))
    assert all('\n    total += compute(' in p.urtext for p in pieces[1:])  # indentation inside a piece is kept


def test_offsets_are_exact_on_a_large_real_module() -> None:
    path = PYDANTIC_AI / 'agent' / '__init__.py'
    document = parse_path(path, Chunker(chunk_size=400))
    source = decode_text(path.read_bytes())
    _assert_exact(source, list(document.chunks))
    assert document.title == 'agent/__init__.py' and len(document.chunks) > 100
    paths = {c.section_path for c in document.chunks}
    assert ('class Agent', 'async def iter') in paths and ('class Agent', 'def override') in paths


PACKAGE = {
    'shop/__init__.py': '''
        """A tiny shop."""
    ''',
    'shop/pricing.py': '''
        """Prices."""


        class Cart:
            """Items and their total."""

            def __init__(self) -> None:
                self.items: list[int] = []

            def add(self, price: int) -> None:
                self.items.append(price)

            def subtotal(self) -> int:
                return sum(self.items)

            def total(self) -> int:
                return apply_tax(self.subtotal())


        def apply_tax(amount: int) -> int:
            return amount * 6 // 5
    ''',
    'shop/checkout.py': '''
        """Checking out."""

        from .pricing import Cart, apply_tax


        def checkout(prices: list[int]) -> int:
            cart = Cart()
            for price in prices:
                cart.add(price)
            return cart.total()


        def quote(amount: int) -> int:
            return apply_tax(amount)
    ''',
}


async def _callers(store: InMemoryStore, kind: Literal['class', 'function'], qualname: str) -> set[str]:
    """Who calls ``qualname``: one CALLS hop in, through the public walk."""
    seed = code_entity_id(kind, qualname)
    request = WalkRequest(seeds=(seed,), hops=1, edge_types=frozenset({'CALLS'}), direction='in')
    result = await walk(store, request)
    return {n.node.title for n in result.nodes if n.hop == 1}


async def test_an_ingested_package_builds_a_code_graph(tmp_path: Path) -> None:
    for name, text in PACKAGE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip(), encoding='utf-8')
    store = InMemoryStore(HashingEmbeddingModel(64))
    report = await ingest(store, tmp_path, chunker=Chunker(chunk_size=120), progress=False)
    assert report.ok and len(report.added) == 3

    infos = {i.uri: i for i in await store.list_documents()}
    pricing = infos[file_uri(tmp_path / 'shop' / 'pricing.py')]
    assert (
        pricing.title == 'pricing.py' and infos[file_uri(tmp_path / 'shop' / '__init__.py')].title == 'shop/__init__.py'
    )
    chunks = await _chunks(store, pricing.id)
    _assert_exact((tmp_path / 'shop' / 'pricing.py').read_text(encoding='utf-8'), chunks)
    assert {c.section_path for c in chunks} == {
        (),
        ('class Cart',),
        ('class Cart', 'def add'),
        ('class Cart', 'def subtotal'),
        ('class Cart', 'def total'),
        ('def apply_tax',),
    }
    # a small method goes in one chunk with its class's own text (the chunker combines small sections)
    assert 'def __init__' in next(c.urtext for c in chunks if c.section_path == ('class Cart',))

    built = await build_graph(store, CodeGraphBuilder())
    assert [r.failures for r in built] == [()]
    assert await _callers(store, 'function', 'shop.pricing.apply_tax') == {
        'shop.pricing.Cart.total',
        'shop.checkout.quote',
    }
    assert await _callers(store, 'class', 'shop.pricing.Cart') == {'shop.checkout.checkout'}
    assert await _callers(store, 'function', 'shop.pricing.Cart.subtotal') == {'shop.pricing.Cart.total'}


async def test_a_large_real_module_builds_a_code_graph_without_failures() -> None:
    store = InMemoryStore(HashingEmbeddingModel(64))
    report = await ingest(store, PYDANTIC_AI / 'agent' / '__init__.py', chunker=Chunker(chunk_size=300), progress=False)
    assert report.ok and len(report.added) == 1
    built = await build_graph(store, CodeGraphBuilder())
    assert [r.failures for r in built] == [()] and built[0].entities_written > 100
