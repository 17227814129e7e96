"""What every federated store holds: its members in declared order, the write route and the fusion.

`Federated` picks, when constructed, a class with exactly the capability protocols its members
can serve (the mixins in `_searches`, `_records`, `_writes`). See docs/federation.md.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any

from ...filters import Filter
from ...protocols import FilterPushdown

_NAME = re.compile(r'[a-z][a-z0-9_-]{0,31}')


def check_member_name(name: str) -> str:
    """``name`` unchanged, or ``ValueError``: lower-case letters, digits, ``_`` and ``-``, a letter first, 32 at most."""
    if not isinstance(name, str) or _NAME.fullmatch(name) is None:
        raise ValueError(
            f'member name {name!r}: use 1 to 32 lower-case letters, digits, _ and -, starting with a letter'
        )
    return name


def pushes_down(store: object, f: Filter | None) -> bool:
    """Whether ``store`` is sent ``f`` itself (else it is sent no filter and its answers are filtered here)."""
    return f is not None and isinstance(store, FilterPushdown) and store.supports_filter(f)


class FederationCore:
    """The state and helpers the capability mixins share (not a store by itself)."""

    _members: tuple[tuple[str, Any], ...]
    _write_lock: asyncio.Lock

    def __init__(self, members: Mapping[str, Any]) -> None:
        if not members:
            raise ValueError('a federation needs at least one member')
        self._members = tuple((check_member_name(name), store) for name, store in members.items())
        self._write_lock = asyncio.Lock()

    @property
    def members(self) -> dict[str, Any]:
        """The member stores by name, in declared order (a copy)."""
        return dict(self._members)

    def serving(self, protocol: type) -> list[Any]:
        """The members implementing ``protocol``, in declared order."""
        return [store for _, store in self._members if isinstance(store, protocol)]

    def supports_filter(self, filter: Filter) -> bool:
        """Always: each member gets the filter if it can evaluate it, else its answers are filtered here."""
        return True

    def __repr__(self) -> str:
        inner = ', '.join(f'{name!r}: {type(store).__name__}' for name, store in self._members)
        return f'Federated({{{inner}}})'
