"""The extras of ``toolish-rag-slim`` and the one error a missing one raises, naming its install command.

The slim core installs pydantic-ai-slim, numpy, google-re2 and PyStemmer only; readers, the default
embedder, graph builders, MCP and the inspector come with extras (``toolish-rag``, the full install,
has them all). See docs/design.md#distributions.
"""

from __future__ import annotations

import importlib.util

__all__ = ['DISTRIBUTION', 'MissingExtraError', 'install_command', 'missing_modules', 'require_extra']

DISTRIBUTION = 'toolish-rag-slim'
"""The distribution that holds the code and declares the extras (the full ``toolish-rag`` depends on it)."""


def install_command(extra: str) -> str:
    """``pip install "toolish-rag-slim[extra]"``: right for a slim install and for a full one alike."""
    return f'pip install "{DISTRIBUTION}[{extra}]"'


class MissingExtraError(ImportError):
    """What needs an extra that is not installed: one line naming the extra and its install command."""

    def __init__(self, what: str, extra: str, missing: str) -> None:
        super().__init__(f'{what} needs the {extra!r} extra (not installed: {missing}): {install_command(extra)}')
        self.extra = extra


def missing_modules(*modules: str) -> list[str]:
    """The top-level modules of ``modules`` that cannot be imported here (found without importing them)."""
    missing: list[str] = []
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a module set to None in sys.modules, or a parent missing
            found = False
        if not found:
            missing.append(module)
    return missing


def require_extra(what: str, extra: str, *modules: str) -> None:
    """Raise `MissingExtraError` when any of ``modules`` (the extra's libraries ``what`` uses) is missing."""
    missing = missing_modules(*modules)
    if missing:
        raise MissingExtraError(what, extra, ', '.join(missing))
