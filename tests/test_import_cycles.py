"""No import cycles among the project's own modules (src/toolish_rag and stores/*/src/*).

The module graph is read from the source (AST), not from ``sys.modules``, so an import inside a
function counts like one at the top of a module: moving an import into a function hides a
cycle from Python's import order, not from this check. Imports under ``if TYPE_CHECKING:`` do
not count (they never run). ``from pkg import name`` is an edge to ``pkg`` (its ``__init__``
runs) and, when ``pkg.name`` is a module, to that module too; so a submodule that imports a
sibling as ``from . import sibling`` depends on its package's ``__init__``, which usually
imports it back: siblings import each other directly (``from .sibling import name``). And
importing ``a.b.c`` from outside the package ``a.b`` runs ``a/b/__init__.py`` first, so that is
an edge to ``a.b`` too: a leaf module of a package whose ``__init__`` imports the importer back
is a cycle, whatever order the modules happen to be loaded in today.

Run as a script (``python tests/test_import_cycles.py [repo root]``) to print the cycles of a
tree, e.g. of an older checkout.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path

import networkx as nx  # type: ignore[import-untyped]

REPO = Path(__file__).resolve().parents[1]


def source_roots(repo: Path) -> dict[Path, str]:
    """The project's import roots: each source directory and the package it holds."""
    roots = {repo / 'src': 'toolish_rag'}
    for store_src in sorted(repo.glob('stores/*/src')):
        for package in sorted(p for p in store_src.iterdir() if (p / '__init__.py').is_file()):
            roots[store_src] = package.name
    return roots


def find_modules(roots: Mapping[Path, str]) -> dict[str, tuple[Path, bool]]:
    """Every module under the roots' packages: dotted name -> (file, whether it is a package)."""
    modules: dict[str, tuple[Path, bool]] = {}
    for root, package in roots.items():
        for path in sorted((root / package).rglob('*.py')):
            parts = list(path.relative_to(root).with_suffix('').parts)
            is_package = parts[-1] == '__init__'
            if is_package:
                parts.pop()
            modules['.'.join(parts)] = (path, is_package)
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == 'TYPE_CHECKING') or (
        isinstance(test, ast.Attribute) and test.attr == 'TYPE_CHECKING'
    )


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: at any depth, but not in an ``if TYPE_CHECKING:`` body."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield from _runtime_imports(ast.Module(body=[child], type_ignores=[]))
        else:
            yield from _runtime_imports(node)


def _base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module ``from <base> import ...`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ''
    package = module.split('.') if is_package else module.split('.')[:-1]
    package = package[: len(package) - (node.level - 1)]
    return '.'.join([*package, *([node.module] if node.module else [])])


def import_graph(roots: Mapping[Path, str]) -> nx.DiGraph:
    """The project's modules and, for each, the project modules its code imports."""
    modules = find_modules(roots)
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for module, (path, is_package) in modules.items():
        for node in _runtime_imports(ast.parse(path.read_text(encoding='utf-8'), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _base(module, is_package, node)
                targets = [base, *(f'{base}.{alias.name}' for alias in node.names)]
            for target in (t for t in targets if t in modules and t != module):
                graph.add_edge(module, target)
                graph.add_edges_from((module, p) for p in _packages_entered(module, target) if p in modules)
    return graph


def _packages_entered(module: str, target: str) -> list[str]:
    """The packages above ``target`` whose ``__init__`` importing it runs: those ``module`` is not inside."""
    parts = target.split('.')
    above = ('.'.join(parts[:i]) for i in range(1, len(parts)))
    return [p for p in above if module != p and not module.startswith(p + '.')]


def import_cycles(graph: nx.DiGraph) -> list[list[str]]:
    """The cycles to break, each a path ``[a, b, ..., a]`` starting at its first module by name.

    For every module in a strongly connected component, a shortest cycle through it, so a
    component of several loops names each module's (duplicates dropped).
    """
    cycles: set[tuple[str, ...]] = set()
    for component in nx.strongly_connected_components(graph):
        if len(component) < 2:
            continue
        inner = graph.subgraph(component)
        for module in component:
            back = min(
                (nx.shortest_path(inner, successor, module) for successor in inner.successors(module)),
                key=lambda path: (len(path), path),
            )
            loop = [module, *back[:-1]]
            first = loop.index(min(loop))
            rotated = loop[first:] + loop[:first]
            cycles.add((*rotated, rotated[0]))
    return sorted(list(c) for c in cycles)


def describe(cycles: list[list[str]]) -> str:
    return '\n'.join(' -> '.join(cycle) for cycle in cycles)


def test_no_import_cycles() -> None:
    cycles = import_cycles(import_graph(source_roots(REPO)))
    assert not cycles, (
        f'import cycles (import the defining module, not a package __init__; no function-local dodges):\n{describe(cycles)}'
    )


def test_the_graph_covers_the_project() -> None:
    graph = import_graph(source_roots(REPO))
    assert {'toolish_rag', 'toolish_rag_lancedb', 'toolish_rag_tantivy'} <= set(graph)
    # A known edge of each kind: a module-level relative import, and a store's absolute one.
    assert graph.has_edge('toolish_rag.toolset._rag', 'toolish_rag.grounded._capability')
    assert graph.has_edge('toolish_rag_tantivy._store', 'toolish_rag.filters')


def test_no_module_imports_the_top_level_package() -> None:
    # Its __init__ imports most of the project: a submodule imports the module that defines a name.
    graph = import_graph(source_roots(REPO))
    importers = sorted(m for m in graph.predecessors('toolish_rag') if m.startswith('toolish_rag.'))
    assert not importers, f'import from the defining module, not from toolish_rag: {importers}'


def _write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding='utf-8')


def test_the_check_finds_cycles_hidden_in_functions_and_through_a_package_init(tmp_path: Path) -> None:
    # Today's two kinds: a function-local import closing a loop (tantivy's store/partitioned
    # before the split), and a submodule importing its own package's __init__ (filters).
    _write(
        tmp_path,
        {
            'pkg/__init__.py': 'from .helpers import helper\nfrom .user import use\n',
            'pkg/helpers.py': 'from . import user\n\ndef helper():\n    return user\n',
            'pkg/user.py': 'def use():\n    return 1\n',
            'pkg/store.py': 'def open_store():\n    from .partitioned import Partitioned\n    return Partitioned\n',
            'pkg/partitioned.py': 'from .store import open_store\n\nclass Partitioned:\n    pass\n',
            'pkg/typed.py': (
                'from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .typed_back import T\n'
                'else:\n    import json\n'
            ),
            'pkg/typed_back.py': 'from .typed import TYPE_CHECKING as T\n',
        },
    )
    cycles = import_cycles(import_graph({tmp_path: 'pkg'}))
    assert cycles == [
        ['pkg', 'pkg.helpers', 'pkg'],
        ['pkg.partitioned', 'pkg.store', 'pkg.partitioned'],
    ]
    assert describe(cycles) == 'pkg -> pkg.helpers -> pkg\npkg.partitioned -> pkg.store -> pkg.partitioned'


def test_the_check_finds_a_cycle_through_the_init_of_an_imported_modules_package(tmp_path: Path) -> None:
    # grounded.capability importing toolset.names ran toolset/__init__, which imports rag, which
    # imports grounded.capability: a cycle though no module imports its importer by name.
    _write(
        tmp_path,
        {
            'pkg/__init__.py': '',
            'pkg/upper/__init__.py': 'from .capability import Grounding\n',
            'pkg/upper/capability.py': 'from ..toolset.names import tool_name\n\nclass Grounding:\n    pass\n',
            'pkg/toolset/__init__.py': 'from .rag import Rag\n',
            'pkg/toolset/names.py': 'def tool_name():\n    return 1\n',
            'pkg/toolset/rag.py': 'from ..upper.capability import Grounding\n\nclass Rag:\n    pass\n',
        },
    )
    assert import_cycles(import_graph({tmp_path: 'pkg'})) == [
        ['pkg.toolset', 'pkg.toolset.rag', 'pkg.upper', 'pkg.upper.capability', 'pkg.toolset'],
        ['pkg.toolset', 'pkg.toolset.rag', 'pkg.upper.capability', 'pkg.toolset'],
    ]


def test_sibling_imports_and_type_checking_imports_are_not_cycles(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            'pkg/__init__.py': 'from .a import f\nfrom .b import g\n',
            'pkg/a.py': 'from .b import g\n\ndef f():\n    return g()\n',
            'pkg/b.py': (
                'from __future__ import annotations\nimport typing\n\nif typing.TYPE_CHECKING:\n'
                '    from .a import f\n\ndef g():\n    return 1\n'
            ),
        },
    )
    graph = import_graph({tmp_path: 'pkg'})
    assert set(graph.edges) == {('pkg', 'pkg.a'), ('pkg', 'pkg.b'), ('pkg.a', 'pkg.b')}
    assert import_cycles(graph) == []


if __name__ == '__main__':
    found = import_cycles(import_graph(source_roots(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO)))
    print(describe(found) or 'no import cycles')
