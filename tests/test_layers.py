"""No import runs up a layer: the layer order written in docs/design.md#layers, checked on every import.

The imports are those `tests/test_import_cycles.py` collects (from the source: a function-local import
counts, an ``if TYPE_CHECKING:`` one does not). A unit is a top-level module or package of
``toolish_rag`` (``toolish_rag.toolset._rag`` is ``toolset``), or a store adapter's package; each is listed
in exactly one layer, so a new module is placed on purpose.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import networkx as nx  # type: ignore[import-untyped]

from tests.test_import_cycles import REPO, import_graph, source_roots

_ITEM = re.compile(r'^(\d+)\. \*\*[^*]+\*\*: (.*)$')


def layers(design: str) -> dict[str, int]:
    """Each unit's layer, from the numbered list under ``## Layers`` (its backquoted names before any ``(``)."""
    section = design.split('\n## Layers\n', 1)[1].split('\n## ', 1)[0]
    found: dict[str, int] = {}
    for line in section.splitlines():
        item = _ITEM.match(line)
        if item is None:
            continue
        for unit in re.findall(r'`([\w.]+)`', item.group(2).split(' (', 1)[0]):
            assert unit not in found, f'{unit} is listed in two layers'
            found[unit] = int(item.group(1))
    return found


def unit_of(module: str) -> str:
    parts = module.split('.')
    return parts[1] if parts[0] == 'toolish_rag' and len(parts) > 1 else parts[0]


def upward_imports(graph: nx.DiGraph, layer: dict[str, int]) -> list[str]:
    """Every import from a unit to a unit of a higher layer, as ``importer (n) -> imported (m)``."""
    found = []
    for importer, imported in sorted(graph.edges):
        low, high = layer[unit_of(importer)], layer[unit_of(imported)]
        if high > low:
            found.append(f'{importer} ({low}) -> {imported} ({high})')
    return found


def _design_layers() -> dict[str, int]:
    return layers((REPO / 'docs' / 'design.md').read_text(encoding='utf-8'))


def test_every_unit_has_a_layer() -> None:
    units = {unit_of(m) for m in import_graph(source_roots(REPO))}
    layer = _design_layers()
    assert not units - set(layer), f'place these in docs/design.md#layers: {sorted(units - set(layer))}'
    assert not set(layer) - units, (
        f'docs/design.md#layers names modules that do not exist: {sorted(set(layer) - units)}'
    )


def test_no_import_runs_up_a_layer() -> None:
    upward = upward_imports(import_graph(source_roots(REPO)), _design_layers())
    assert not upward, 'imports running up a layer (docs/design.md#layers):\n' + '\n'.join(upward)


def test_the_check_sees_a_function_local_import_up_a_layer(tmp_path: Path) -> None:
    for name, text in {
        'toolish_rag/__init__.py': '',
        'toolish_rag/content.py': 'def render():\n    from .toolset import Rag\n    return Rag\n',
        'toolish_rag/toolset/__init__.py': 'from .rag import Rag\n',
        'toolish_rag/toolset/rag.py': (
            'from typing import TYPE_CHECKING\n\nfrom ..content import render\n\n'
            'if TYPE_CHECKING:\n    from ..cli import main\n\nclass Rag:\n    pass\n'
        ),
        'toolish_rag/cli.py': 'def main():\n    return 0\n',
    }.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding='utf-8')
    design = (
        '# x\n\n## Layers\n\n1. **a**: `toolish_rag`, `content`\n2. **b**: `toolset` (a note: `cli`)\n3. **c**: `cli`\n'
    )
    layer = layers(design)
    assert layer == {'toolish_rag': 1, 'content': 1, 'toolset': 2, 'cli': 3}
    graph = import_graph({tmp_path: 'toolish_rag'})
    assert upward_imports(graph, layer) == ['toolish_rag.content (1) -> toolish_rag.toolset (2)']
