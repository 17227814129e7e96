"""Fixtures of the hardening tests: each store once per module, on one event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from .stores import STORE_NAMES, StoreEnv, open_env


@pytest.fixture(scope='module')
def runner() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as runner:
        yield runner


@pytest.fixture(scope='module', params=STORE_NAMES)
def env(
    request: pytest.FixtureRequest, runner: asyncio.Runner, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StoreEnv]:
    name: str = request.param
    opened = open_env(name, runner, tmp_path_factory.mktemp(f'hardening-{name}'))
    yield opened
    aclose = getattr(opened.store, 'aclose', None)
    if aclose is not None:
        runner.run(aclose())
