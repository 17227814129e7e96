"""Every ```python block in docs/ runs, in order, one namespace per page.

A block preceded by ``<!-- not-run -->`` is shown but not run (for snippets that need a
network service or an API key). Top-level ``await`` works, as in a notebook; a page with none
runs in a thread with no event loop, as a script does (its blocks may call ``asyncio.run``).
"""

from __future__ import annotations

import ast
import asyncio
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / 'docs'
BLOCK = re.compile(r'(<!-- not-run -->\s*)?```python\n(.*?)```', re.DOTALL)
PAGES = sorted(p for p in DOCS.rglob('*.md') if BLOCK.search(p.read_text(encoding='utf-8')))


@pytest.mark.parametrize('page', PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
async def test_page_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    module = types.ModuleType(f'docs_{page.stem.replace("-", "_")}')
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = module.__dict__
    blocks = [m.group(2) for m in BLOCK.finditer(page.read_text(encoding='utf-8')) if not m.group(1)]
    assert blocks, f'{page} has no runnable example'
    if not any(_needs_top_level_await(b) for b in blocks):  # a script's blocks: no event loop running
        await asyncio.to_thread(_run_as_a_script, page, blocks, namespace)
        return
    for ran, source in enumerate(blocks):
        code = compile(source, f'{page.name}:block{ran}', 'exec', flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        result = types.FunctionType(code, namespace)()
        if result is not None and hasattr(result, '__await__'):
            await result


def _run_as_a_script(page: Path, blocks: list[str], namespace: dict[str, object]) -> None:
    for i, source in enumerate(blocks):
        exec(compile(source, f'{page.name}:block{i}', 'exec'), namespace)


AWAIT_NOTE = '> The examples on this page run in order as one program, with top-level `await`'
"""What a page says before its first example when they use top-level ``await`` (issue 40: unannounced)."""


def _needs_top_level_await(source: str) -> bool:
    try:
        compile(source, 'block', 'exec')
    except SyntaxError as exc:
        return 'await' in str(exc) or 'async' in str(exc)
    return False


@pytest.mark.parametrize('page', PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_pages_copied_in_order_run_as_a_script(page: Path) -> None:
    """A page's examples in order, under ``async def main()``, compile as one script, and a page whose
    examples need top-level ``await`` says so (and how to run them as a script) before the first one."""
    text = page.read_text(encoding='utf-8')
    blocks = [m.group(2) for m in BLOCK.finditer(text) if not m.group(1)]
    script = 'import asyncio\n\nasync def main():\n' + textwrap.indent('\n'.join(blocks), '    ')
    compile(script + '\n    pass\n\nasyncio.run(main())\n', f'{page.name} as a script', 'exec')
    if any(_needs_top_level_await(b) for b in blocks):
        first = BLOCK.search(text)
        assert first is not None and AWAIT_NOTE in text[: first.start()], f'{page.name}: top-level await unannounced'


RUN_WHOLE = ['custom-store.md']
"""Pages whose every block must run: a store author copies them verbatim (issue 26)."""


@pytest.mark.parametrize('name', RUN_WHOLE)
def test_store_author_pages_run_as_a_script(name: str, tmp_path: Path) -> None:
    """The page's blocks copied in order into one file run with ``python file.py``, as a stranger runs them."""
    blocks = [m.group(2) for m in BLOCK.finditer((DOCS / name).read_text(encoding='utf-8'))]
    script = tmp_path / 'grep_store.py'
    script.write_text('\n\n'.join(blocks), encoding='utf-8')
    ran = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, f'python {script.name} (the blocks of {name}) failed:\n{ran.stderr[-3000:]}'
    assert ' passed, 0 failed' in ran.stdout, ran.stdout[-2000:]


@pytest.mark.parametrize('name', RUN_WHOLE)
def test_store_author_pages_run_every_block(name: str) -> None:
    text = (DOCS / name).read_text(encoding='utf-8')
    assert BLOCK.search(text), f'{name} has no python block'
    skipped = [m.group(2).splitlines()[0] for m in BLOCK.finditer(text) if m.group(1)]
    assert not skipped, f'{name} has <!-- not-run --> blocks (starting {skipped}): every block of it must run'


def test_the_store_page_lists_every_protocol() -> None:
    from toolish_rag import protocols

    names = {n for n in protocols.__all__ if getattr(getattr(protocols, n), '_is_protocol', False)}
    rows = set(re.findall(r'^\| `(\w+)` \|', (DOCS / 'custom-store.md').read_text(encoding='utf-8'), re.MULTILINE))
    assert names <= rows, f'docs/custom-store.md protocol table lacks {sorted(names - rows)}'
    assert rows <= names, f'docs/custom-store.md protocol table names {sorted(rows - names)}, not protocols'
