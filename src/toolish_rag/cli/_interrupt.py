"""Ctrl-C during a command that writes: a stated, fast, clean stop.

The first Ctrl-C (or SIGTERM) says "stopping…", cancels the command's task and lets it print what it did;
the process then ends at once with 130, without waiting for worker threads still embedding (they only ever
finish a write the store commits atomically, or never commit it) and without the interpreter's teardown,
where a second Ctrl-C used to abort torch. A second Ctrl-C, or a stop that takes longer than ``grace``
seconds, exits at once with a line saying the store is consistent. See docs/ingestion.md#reports.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from types import FrameType
from typing import NoReturn

__all__ = ['EXIT_INTERRUPTED', 'Interrupt', 'abort', 'exit_now', 'interruptible']

EXIT_INTERRUPTED = 130
"""What a shell reports for a command ended by Ctrl-C (128 + SIGINT)."""

_ABORTED = 'toolish-rag: aborted; the store is consistent: the same command again resumes'


def exit_now(code: int, release: Callable[[], None] | None = None) -> NoReturn:
    """Flush what was printed, release the store's lock, and end the process now (no thread joins, no teardown)."""
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError, RuntimeError):
            stream.flush()
    if release is not None:
        release()
    os._exit(code)


def abort(release: Callable[[], None] | None = None) -> NoReturn:
    """A second Ctrl-C: one line, then exit 130 at once (no traceback, no teardown abort)."""
    _say(_ABORTED)
    exit_now(EXIT_INTERRUPTED, release)


def _say(line: str) -> None:
    """A line on stderr from a signal handler: straight to the file descriptor (a print could be re-entered)."""
    with suppress(OSError):
        os.write(2, f'\n{line}\n'.encode())


@dataclass
class Interrupt:
    """The signal handlers of one command run (see the module docstring); ``requested`` once a stop was asked."""

    task: asyncio.Task[object]
    loop: asyncio.AbstractEventLoop
    release: Callable[[], None]
    grace: float = 10.0
    requested: bool = False
    _timer: threading.Timer | None = field(default=None, repr=False)

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            abort(self.release)
        self.requested = True
        _say('toolish-rag: stopping… (Ctrl-C again to abort)')
        self.loop.call_soon_threadsafe(self.task.cancel)
        self._timer = threading.Timer(self.grace, self._too_slow)
        self._timer.daemon = True
        self._timer.start()

    def _too_slow(self) -> None:
        _say(f'toolish-rag: not stopped after {self.grace:.0f} s: {_ABORTED.removeprefix("toolish-rag: ")}')
        exit_now(EXIT_INTERRUPTED, self.release)

    def stopped(self) -> NoReturn:
        """The command printed what it did after the stop: end the process now."""
        exit_now(EXIT_INTERRUPTED, self.release)


@contextmanager
def interruptible(release: Callable[[], None], grace: float = 10.0) -> Iterator[Interrupt]:
    """Within it, Ctrl-C and SIGTERM go to an `Interrupt` for the current task (the previous handlers after)."""
    interrupt = Interrupt(asyncio.current_task(), asyncio.get_running_loop(), release, grace)  # type: ignore[arg-type]
    previous = {sig: signal.signal(sig, interrupt.handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield interrupt
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
