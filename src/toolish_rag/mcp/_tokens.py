"""Bearer tokens for the HTTP MCP server: each token maps to a scope filter, compared in constant time.

The token file format is in docs/mcp.md#tokens-and-scopes-http.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..filters import Filter, PropertyFilter, and_, parse_filter
from ._limits import limit_overrides

__all__ = ['TokenScope', 'TokenTable', 'load_token_table', 'scope_from_shorthand']

_MIN_TOKEN_LENGTH = 16


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode('utf-8')).digest()


def scope_from_shorthand(scope: Mapping[str, Any]) -> Filter | None:
    """``{"tenant": "acme", "year": 2024}`` -> ``tenant == "acme" AND year == 2024``; ``{}`` -> no filter.

    A list value means "one of" (an ``in`` filter).
    """
    parts: list[Filter | None] = []
    for key, value in scope.items():
        if isinstance(value, list):
            parts.append(PropertyFilter.in_(key, value))
        elif isinstance(value, dict):
            raise ValueError(f'scope value for {key!r} is a table; use `filter = ...` for anything but equality')
        else:
            parts.append(PropertyFilter.eq(key, value))
    return and_(*parts) if parts else None


@dataclass(frozen=True)
class TokenScope:
    """One configured token: its label, the scope filter every tool call is narrowed by, and its own limits.

    ``limits`` replaces some of the server's default `TokenLimits` for this token (names to values).
    """

    label: str
    filter: Filter | None
    digest: bytes = field(repr=False)
    limits: Mapping[str, int | float] = field(default_factory=dict)


class TokenTable:
    """The configured tokens; `authenticate` maps a presented token to its `TokenScope`."""

    def __init__(self, scopes: Sequence[TokenScope]) -> None:
        if not scopes:
            raise ValueError('the token table is empty: configure at least one token')
        digests = [s.digest for s in scopes]
        if len(set(digests)) != len(digests):
            raise ValueError('two token entries have the same token')
        labels = [s.label for s in scopes]
        if len(set(labels)) != len(labels):
            raise ValueError('two token entries have the same label')
        self._scopes = tuple(scopes)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, environ: Mapping[str, str] | None = None) -> TokenTable:
        """Build from the parsed file content (``{"tokens": {label: entry, ...}}``)."""
        env = os.environ if environ is None else environ
        tokens = data.get('tokens')
        if not isinstance(tokens, Mapping) or not tokens:
            raise ValueError('the token file needs a non-empty "tokens" table: {"tokens": {"LABEL": {...}}}')
        unknown_top = set(data) - {'tokens'}
        if unknown_top:
            raise ValueError(f'unknown top-level keys in the token file: {sorted(unknown_top)}')
        scopes = [_entry(str(label), entry, env) for label, entry in tokens.items()]
        return cls(scopes)

    @property
    def labels(self) -> list[str]:
        return [s.label for s in self._scopes]

    @property
    def scopes(self) -> tuple[TokenScope, ...]:
        return self._scopes

    def authenticate(self, presented: str | None) -> TokenScope | None:
        """The scope of ``presented``, or ``None`` when it is missing or matches no token.

        Every configured token is compared (constant time, no early exit).
        """
        if not presented:
            return None
        candidate = _digest(presented)
        found: TokenScope | None = None
        for scope in self._scopes:
            if hmac.compare_digest(candidate, scope.digest):
                found = scope
        return found

    def __repr__(self) -> str:
        return f'TokenTable(labels={self.labels!r})'


def _entry(label: str, entry: Any, env: Mapping[str, str]) -> TokenScope:
    where = f'token entry {label!r}'
    if not isinstance(entry, Mapping):
        raise ValueError(f'{where}: expected a table with token/token_env and scope/filter (and limits)')
    unknown = set(entry) - {'token', 'token_env', 'scope', 'filter', 'limits'}
    if unknown:
        raise ValueError(f'{where}: unknown keys {sorted(unknown)}')
    if ('token' in entry) == ('token_env' in entry):
        raise ValueError(f'{where}: give exactly one of "token" or "token_env"')
    if 'token' in entry:
        token = entry['token']
    else:
        var = entry['token_env']
        token = env.get(var) if isinstance(var, str) else None
        if not token:
            raise ValueError(f'{where}: environment variable {var!r} is not set')
    if not isinstance(token, str) or len(token) < _MIN_TOKEN_LENGTH:
        raise ValueError(f'{where}: the token must be a string of at least {_MIN_TOKEN_LENGTH} characters')
    if ('scope' in entry) == ('filter' in entry):
        raise ValueError(
            f'{where}: give exactly one of "scope" (shorthand) or "filter" (use scope = {{}} for no scope)'
        )
    try:
        if 'scope' in entry:
            if not isinstance(entry['scope'], Mapping):
                raise ValueError('scope must be a table of key = value')
            scope_filter = scope_from_shorthand(entry['scope'])
        else:
            scope_filter = parse_filter(entry['filter'])
        limits = limit_overrides(entry.get('limits', {}))
    except ValueError as e:
        raise ValueError(f'{where}: {e}') from None
    return TokenScope(label=label, filter=scope_filter, digest=_digest(token), limits=limits)


def load_token_table(path: str | Path, *, environ: Mapping[str, str] | None = None) -> TokenTable:
    """Read a token file: TOML when it ends in ``.toml``, else JSON."""
    path = Path(path)
    raw = path.read_bytes()
    try:
        data = tomllib.loads(raw.decode('utf-8')) if path.suffix.lower() == '.toml' else json.loads(raw)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as e:
        # The decoders quote the offending text, which may be a token: report the position only.
        position = f' (line {e.lineno})' if isinstance(e, json.JSONDecodeError) else ''
        raise ValueError(
            f'{path}: not valid {"TOML" if path.suffix.lower() == ".toml" else "JSON"}{position}'
        ) from None
    if not isinstance(data, Mapping):
        raise ValueError(f'{path}: expected an object with a "tokens" table')
    try:
        return TokenTable.from_mapping(data, environ=environ)
    except ValueError as e:
        raise ValueError(f'{path}: {e}') from None
