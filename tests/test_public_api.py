"""The public surface is the one docs/api.md lists, and nothing outside it leans on the rest.

A module is private when a component of its dotted path starts with ``_`` (``__init__`` and
``__main__`` aside); every other module under ``src/toolish_rag`` and ``stores/*/src`` is public:
it defines ``__all__``, every name in it exists and is listed under the module's heading in
docs/api.md. The store adapters, the examples and the docs' Python blocks import from the
project only public modules and names. See docs/api.md.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
API_PAGE = ROOT / 'docs' / 'api.md'
SOURCE_ROOTS = [ROOT / 'src', *sorted((ROOT / 'stores').glob('*/src'))]
PROJECT_PACKAGES = ('toolish_rag', 'toolish_rag_lancedb', 'toolish_rag_tantivy')
MODULE_HEADING = re.compile(r'^#{2,4} `([\w.]+)`\s*$', re.MULTILINE)
LISTED_NAME = re.compile(r'^\| `([\w.]+)` \|', re.MULTILINE)
PYTHON_BLOCK = re.compile(r'```python\n(.*?)```', re.DOTALL)


@dataclass(frozen=True)
class Module:
    name: str
    path: Path

    @property
    def private(self) -> bool:
        return any(part.startswith('_') and part not in ('__init__', '__main__') for part in self.name.split('.'))


def _modules() -> list[Module]:
    found = []
    for root in SOURCE_ROOTS:
        for path in sorted(root.rglob('*.py')):
            parts = list(path.relative_to(root).with_suffix('').parts)
            if parts[-1] == '__init__':
                parts = parts[:-1]
            found.append(Module('.'.join(parts), path))
    return found


MODULES = _modules()
PUBLIC = [m for m in MODULES if not m.private and not m.name.endswith('.__main__')]
PUBLIC_NAMES = {m.name for m in PUBLIC}


def _api_sections() -> dict[str, set[str]]:
    """Module name -> the names its section of docs/api.md lists (table rows ``| `name` | ...``)."""
    text = API_PAGE.read_text(encoding='utf-8')
    headings = list(MODULE_HEADING.finditer(text))
    sections: dict[str, set[str]] = {}
    for i, heading in enumerate(headings):
        end = headings[i + 1].start() if i + 1 < len(headings) else len(text)
        body = re.split(r'^#{1,4} ', text[heading.end() : end], maxsplit=1, flags=re.MULTILINE)[0]
        sections[heading.group(1)] = set(LISTED_NAME.findall(body))
    return sections


SECTIONS = _api_sections()


def _defines_all(path: Path) -> bool:
    for node in ast.parse(path.read_text(encoding='utf-8')).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, 'target', None)]
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and any(
            isinstance(t, ast.Name) and t.id == '__all__' for t in targets
        ):
            return True
    return False


@pytest.mark.parametrize('module', PUBLIC, ids=[m.name for m in PUBLIC])
def test_public_module_defines_all_and_is_listed(module: Module) -> None:
    where = module.path.relative_to(ROOT)
    assert _defines_all(module.path), (
        f'{module.name} ({where}) is public (no _ in its dotted path) but defines no __all__: '
        'add __all__, or rename it with a leading _ if it is internal'
    )
    assert module.name in SECTIONS, (
        f'{module.name} ({where}) is public but docs/api.md has no "### `{module.name}`" section: '
        'list it there, or rename it with a leading _ if it is internal'
    )


@pytest.mark.parametrize('module', PUBLIC, ids=[m.name for m in PUBLIC])
def test_every_name_in_all_exists_and_is_documented(module: Module) -> None:
    imported = importlib.import_module(module.name)
    exported = list(getattr(imported, '__all__', []))
    missing = [name for name in exported if not hasattr(imported, name)]
    assert not missing, f'{module.name}.__all__ names what the module does not define: {missing}'
    duplicated = sorted({name for name in exported if exported.count(name) > 1})
    assert not duplicated, f'{module.name}.__all__ lists these names twice: {duplicated}'
    listed = SECTIONS.get(module.name)
    if listed is None:
        pytest.skip(f'{module.name} has no docs/api.md section (reported by the test above)')
    undocumented = sorted(set(exported) - listed)
    assert not undocumented, f"docs/api.md's section for {module.name} does not list: {undocumented}"
    stale = sorted(listed - set(exported))
    assert not stale, f"docs/api.md's section for {module.name} lists names not in its __all__: {stale}"


def test_api_page_lists_only_public_modules() -> None:
    unknown = sorted(set(SECTIONS) - PUBLIC_NAMES)
    assert not unknown, f'docs/api.md has sections for modules that are not public modules of the project: {unknown}'


def _project_imports(source: str, own_package: str | None = None) -> list[tuple[str, str | None, int]]:
    """(module, name or None for ``import module``, line) for each absolute import of the project."""
    found: list[tuple[str, str | None, int]] = []
    for node in ast.walk(ast.parse(source)):
        modules: list[tuple[str, str | None]]
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            modules = [(alias.name, None) for alias in node.names]
        else:
            continue
        for module, name in modules:
            top = module.split('.')[0]
            if top in PROJECT_PACKAGES and top != own_package:
                found.append((module, name, node.lineno))
    return found


def _import_problem(module: str, name: str | None) -> str | None:
    if module not in PUBLIC_NAMES:
        return f'imports from {module}, which is not a public module (see docs/api.md)'
    if name is None or name == '*':
        return None
    if f'{module}.{name}' in PUBLIC_NAMES:
        return None
    exported = getattr(importlib.import_module(module), '__all__', [])
    if name not in exported:
        return f'imports {name} from {module}, which is not in {module}.__all__'
    return None


def _consumers() -> list[tuple[str, str, str | None]]:
    """(label, source, own package) for the adapters' modules, the examples and the docs' Python blocks."""
    found: list[tuple[str, str, str | None]] = []
    for root in SOURCE_ROOTS[1:]:
        for path in sorted(root.rglob('*.py')):
            own = path.relative_to(root).parts[0]
            found.append((str(path.relative_to(ROOT)), path.read_text(encoding='utf-8'), own))
    for path in sorted((ROOT / 'examples').rglob('*.py')):
        found.append((str(path.relative_to(ROOT)), path.read_text(encoding='utf-8'), None))
    for page in [ROOT / 'README.md', *sorted((ROOT / 'docs').rglob('*.md'))]:
        for i, block in enumerate(PYTHON_BLOCK.findall(page.read_text(encoding='utf-8'))):
            found.append((f'{page.relative_to(ROOT)} (python block {i})', block, None))
    return found


CONSUMERS = _consumers()


@pytest.mark.parametrize(('label', 'source', 'own'), CONSUMERS, ids=[c[0] for c in CONSUMERS])
def test_consumers_import_only_the_public_surface(label: str, source: str, own: str | None) -> None:
    problems = [
        f'{label}:{line}: {problem}'
        for module, name, line in _project_imports(source, own)
        if (problem := _import_problem(module, name)) is not None
    ]
    assert not problems, '\n'.join(problems)


def test_the_rule_flags_a_private_import_and_an_unlisted_module() -> None:
    """The checks above are not vacuous: a private module and a name outside ``__all__`` are caught."""
    assert _import_problem('toolish_rag.ingest._pipeline', 'ingest') is not None
    assert _import_problem('toolish_rag.regex', 'compile_request') is None
    assert _import_problem('toolish_rag.regex', 're') is not None
    assert Module('toolish_rag.ingest._readers.text', Path()).private
    assert not Module('toolish_rag.ingest.__init__', Path()).private
    assert 'toolish_rag.ingest' in SECTIONS and 'ingest' in SECTIONS['toolish_rag.ingest']


def test_renamed_names_still_work_for_one_release_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """`StoreCapabilities` is `StoreFeatures`, ``store_capabilities`` is ``store_features``, the Tantivy modules
    moved: each old name still answers, and says it is deprecated (CHANGELOG)."""
    import toolish_rag
    from toolish_rag import ToolishRag, protocols
    from toolish_rag.embedding import HashingEmbeddingModel
    from toolish_rag.stores import InMemoryStore

    with pytest.warns(DeprecationWarning, match='StoreFeatures'):
        assert protocols.StoreCapabilities is protocols.StoreFeatures
    assert 'StoreCapabilities' not in toolish_rag.__all__ and 'StoreFeatures' in toolish_rag.__all__
    rag = ToolishRag(InMemoryStore(HashingEmbeddingModel(16)), name='kb')
    with pytest.warns(DeprecationWarning, match='store_features'):
        assert rag.store_capabilities == rag.store_features
    monkeypatch.delitem(sys.modules, 'toolish_rag_tantivy.store', raising=False)  # imported again: it warns
    with pytest.warns(DeprecationWarning, match='import from toolish_rag_tantivy'):
        old = importlib.import_module('toolish_rag_tantivy.store')
    assert old.TantivyStore is importlib.import_module('toolish_rag_tantivy').TantivyStore
