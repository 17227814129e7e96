"""Modules of at most 600 lines, functions of at most 60 (the house rules), in src/ and stores/*/src.

A function's length is its body's, from the first statement after its docstring to its last line: the
signature and docstring are its documentation (pydantic-ai style: one parameter a line, a docstring that
says what and why), not the logic a reader has to hold at once. A nested function counts within its
outer one and on its own.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60


def sources() -> Iterator[Path]:
    yield from sorted((REPO / 'src').rglob('*.py'))
    for store in sorted(REPO.glob('stores/*/src')):
        yield from sorted(store.rglob('*.py'))


def function_lengths(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """Each function's name and body length (lines from the first statement after its docstring)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        body = node.body
        first = body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            body = body[1:]
        if body:
            yield node.name, (body[-1].end_lineno or body[-1].lineno) - body[0].lineno + 1


def excesses() -> list[str]:
    found = []
    for path in sources():
        name = path.relative_to(REPO).as_posix()
        text = path.read_text(encoding='utf-8')
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES:
            found.append(f'{name}: {lines} lines')
        for function, length in function_lengths(ast.parse(text, name)):
            if length > MAX_FUNCTION_LINES:
                found.append(f'{name}::{function}: {length} lines')
    return found


def test_no_module_over_600_lines_and_no_function_over_60() -> None:
    found = excesses()
    assert not found, 'split by concern (docs/design.md):\n' + '\n'.join(found)


def test_the_length_of_a_function_is_its_body_after_the_docstring() -> None:
    source = (
        'def f(\n    a,\n):\n    """Doc.\n\n    More.\n    """\n    x = 1\n\n    return x\n\n\ndef g():\n    pass\n'
    )
    assert dict(function_lengths(ast.parse(source))) == {'f': 3, 'g': 1}
