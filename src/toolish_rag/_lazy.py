"""Names a package exports, imported from their modules when first used (PEP 562).

``import toolish_rag`` (and any ``toolish_rag.x`` submodule, which runs the package first) then
costs what the caller uses, not pydantic-ai, numpy and every store: the CLI and the MCP server
answer before those are loaded (docs/mcp.md#start-up-time).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ['lazy_exports']


def lazy_exports(
    package: str, exports: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, which exports ``exports`` (module -> its names).

    A name is imported from its (relative) module on first access and kept in the package's namespace.
    """
    where = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f'module {package!r} has no attribute {name!r}')
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__
