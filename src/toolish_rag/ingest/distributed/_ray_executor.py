"""`RayExecutor`: read, chunk and embed on a Ray cluster; the driver writes, as in-process.

See docs/ingestion.md#how-the-pipeline-is-built.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import pickle
from collections.abc import AsyncGenerator, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import KW_ONLY, dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..._extras import install_command
from .._embedding import StoreEmbedding
from .._parse import Parsed, ParseJob
from .._walk import Found
from ._ray_stages import PAYLOAD, ParseAndEmbed, parse_batch

if TYPE_CHECKING:
    from ray.data import Dataset

__all__ = ['RayExecutor']

MAX_BLOCKS = 2000
"""At most this many input blocks: one per embedding batch up to there, for an even spread over
the actors; beyond, bigger blocks (each one is an object Ray tracks)."""


@dataclass(frozen=True, slots=True)
class RayExecutor:
    """Parse and embed the files of an `ingest` run on Ray (``pip install 'toolish-rag[ray]'``).

    Args:
        address: the cluster to connect to (``'auto'``, ``'ray://head:10001'``...); ``None``
            connects to ``RAY_ADDRESS`` when set, else starts Ray on this machine. When Ray is
            already initialised in this process, that connection is used as it is. Ray stays
            up for the rest of the process (it shuts down at exit; ``ray.shutdown()`` ends it
            sooner), so a second run does not start it again; each run starts its own actors,
            though, and each loads the model: a fixed cost per run (docs/benchmarks-ray.md).
        num_cpus: CPUs of the Ray instance started here (default: all of this machine's);
            not allowed with an existing cluster (Ray says so).
        actors: embedding actors (default: the cluster's CPUs divided by ``cpus_per_actor``; never
            more than there are batches to embed, as each actor loads the model before any work).
        cpus_per_actor: CPUs Ray reserves for each actor, and the threads its model uses.
        docs_per_batch: documents per embedding batch (each batch's chunks are embedded together).
        runtime_env: Ray's ``runtime_env`` for the job (environment variables such as API keys,
            packages), when Ray is started or connected here.
    """

    address: str | None = None
    _: KW_ONLY
    num_cpus: int | None = None
    actors: int | None = None
    cpus_per_actor: float = 1.0
    docs_per_batch: int = 16
    runtime_env: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.actors is not None and self.actors < 1:
            raise ValueError('actors must be at least 1')
        if self.cpus_per_actor <= 0 or self.docs_per_batch < 1:
            raise ValueError('cpus_per_actor must be positive and docs_per_batch at least 1')

    @property
    def embeds(self) -> bool:
        return True

    async def parse(
        self, files: Sequence[Found], job: ParseJob, embedding: StoreEmbedding | None
    ) -> AsyncGenerator[Parsed, None]:
        """Stream each file's `Parsed` (with its chunks' vectors when ``embedding`` is given) as Ray finishes it."""
        if not files:
            return
        ray = _import_ray()
        dataset = await asyncio.to_thread(self._plan, ray, files, job, embedding)
        async with contextlib.aclosing(_stream(dataset)) as batches:
            async for payloads in batches:
                for payload in payloads:
                    yield _unpickle(payload)

    def _connect(self, ray: ModuleType) -> None:
        if ray.is_initialized():
            return
        options: dict[str, Any] = {'address': self.address, 'include_dashboard': False}
        if self.num_cpus is not None:
            options['num_cpus'] = self.num_cpus
        if self.runtime_env is not None:
            options['runtime_env'] = dict(self.runtime_env)
        ray.init(**options)

    def _plan(
        self, ray: ModuleType, files: Sequence[Found], job: ParseJob, embedding: StoreEmbedding | None
    ) -> Dataset:
        """The (lazy) Ray Data pipeline over ``files``; blocking: connects to Ray and puts the rows in its store."""
        self._connect(ray)
        import ray.data as ray_data

        rows = [{'path': str(found.path), 'relative_path': found.relative_path} for found in files]
        blocks = max(1, min(math.ceil(len(rows) / self.docs_per_batch), MAX_BLOCKS))
        dataset: Dataset = ray_data.from_items(rows, override_num_blocks=blocks)
        if embedding is None:  # the store embeds in upsert: Ray only reads, parses and chunks
            parse = functools.partial(parse_batch, job=job)
            dataset = dataset.map_batches(parse, batch_size=self.docs_per_batch, batch_format='numpy')
        else:
            dataset = dataset.map_batches(
                ParseAndEmbed,
                fn_constructor_args=(job, embedding, max(1, int(self.cpus_per_actor))),
                batch_size=self.docs_per_batch,
                batch_format='numpy',
                compute=ray_data.ActorPoolStrategy(size=min(self.actors or self._default_actors(ray), blocks)),
                num_cpus=self.cpus_per_actor,
            )
        dataset.context.enable_progress_bars = False  # `ingest` shows its own, per written document
        return dataset

    def _default_actors(self, ray: ModuleType) -> int:
        cpus = float(ray.cluster_resources().get('CPU', 1))
        return max(1, int(cpus // self.cpus_per_actor))


def _import_ray() -> ModuleType:
    try:
        import ray
        import ray.data  # Ray Data is the part this needs: the ``[data]`` extra
    except ImportError as exc:
        raise ImportError(f'RayExecutor needs Ray Data (ray[data]): {install_command("ray")}') from exc
    return ray


async def _stream(dataset: Dataset) -> AsyncGenerator[Sequence[bytes], None]:
    """The payload column of each finished block, read by one dedicated thread.

    One thread, so that closing the iterator (which stops Ray's streaming execution when the
    run stops early) queues behind a ``next`` still running instead of racing it.
    """
    batches: Iterator[Mapping[str, Any]] = iter(dataset.iter_batches(batch_size=None, batch_format='numpy'))
    with ThreadPoolExecutor(1, thread_name_prefix='toolish-ray-ingest') as reader:
        try:
            while (batch := await asyncio.wrap_future(reader.submit(next, batches, None))) is not None:
                yield batch[PAYLOAD]
        finally:
            await asyncio.wrap_future(reader.submit(_close, batches))


def _close(iterator: Iterator[Any]) -> None:
    close = getattr(iterator, 'close', None)
    if close is not None:
        close()


def _unpickle(payload: bytes) -> Parsed:
    parsed = pickle.loads(payload)
    if not isinstance(parsed, Parsed):  # pragma: no cover - only this module's stages write the column
        raise TypeError(f'unexpected Ray ingest payload: {type(parsed).__name__}')
    return parsed
