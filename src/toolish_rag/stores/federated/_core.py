"""What every federated store holds: its members in declared order, their scopes, and the failure policy.

`Federated` picks, when constructed, a class with exactly the store protocols its members
can serve (the mixins in `_searches`, `_records`, `_writes`). See docs/federation.md.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

from ...errors import InvalidRequestError
from ...filters import Filter, and_
from ...protocols import FilterPushdown
from ._events import MemberListener, MemberUnavailable, note_unavailable

log = logging.getLogger(__name__)
_NAME = re.compile(r'[a-z][a-z0-9_-]{0,31}')
_T = TypeVar('_T')


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


def both(a: Filter | None, b: Filter | None) -> Filter | None:
    """``a AND b``; ``None`` stands for no filter."""
    return a if b is None else b if a is None else and_(a, b)


@dataclass(frozen=True, slots=True)
class Member:
    """One member: its name, its store and the scope every read of it is narrowed by (``None``: none)."""

    name: str
    store: Any
    scope: Filter | None = None
    description: str = ''
    """What the member holds, in a few words: the search tools name it beside the member."""

    def scoped(self, f: Filter | None) -> Filter | None:
        """The filter a read of this member under the request filter ``f`` runs with."""
        return both(self.scope, f)


class FederationCore:
    """The state and helpers the capability mixins share (not a store by itself)."""

    _members: tuple[Member, ...]
    _write_lock: asyncio.Lock
    timeout: float | None
    on_unavailable: MemberListener | None

    def _setup(self, members: tuple[Member, ...], timeout: float | None, on_unavailable: MemberListener | None) -> None:
        if not members:
            raise ValueError('a federation needs at least one member')
        if timeout is not None and not timeout > 0:
            raise ValueError('timeout must be a positive number of seconds (or None)')
        for member in members:
            check_member_name(member.name)
        self._members = members
        self._write_lock = asyncio.Lock()
        self.timeout = timeout
        self.on_unavailable = on_unavailable

    @property
    def descriptions(self) -> dict[str, str]:
        """Each member's description by name, in declared order (``''`` when none was given)."""
        return {m.name: m.description for m in self._members}

    @property
    def members(self) -> dict[str, Any]:
        """The member stores by name, in declared order (a copy)."""
        return {m.name: m.store for m in self._members}

    def serving(self, protocol: type) -> list[Member]:
        """The members implementing ``protocol``, in declared order."""
        return [m for m in self._members if isinstance(m.store, protocol)]

    def supports_filter(self, filter: Filter) -> bool:
        """Always: each member gets the filter if it can evaluate it, else its answers are filtered here."""
        return True

    async def guarded(self, member: Member, operation: str, call: Awaitable[_T], empty: _T) -> _T:
        """``call``'s answer, or ``empty`` when the member fails or times out (reported, never raised).

        A caller's mistake (`InvalidRequestError`: a bad query, a pattern, a limit) is the
        caller's to fix and is raised as it is, whichever member found it.
        """
        try:
            return await asyncio.wait_for(call, self.timeout)
        except InvalidRequestError:
            raise
        except Exception as error:
            timed_out = isinstance(error, TimeoutError)
            event = MemberUnavailable(member.name, operation, 'timeout' if timed_out else 'error', type(error).__name__)
            log.warning('federation member %r unavailable for %s (%s)', member.name, operation, event.error_type)
            note_unavailable(event)
            if self.on_unavailable is not None:
                self.on_unavailable(event)
            return empty

    def __repr__(self) -> str:
        inner = ', '.join(f'{m.name!r}: {type(m.store).__name__}' for m in self._members)
        return f'Federated({{{inner}}})'
