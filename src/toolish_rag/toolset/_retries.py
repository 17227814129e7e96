"""What a model is told when a call is refused, bounded in length whatever it sent.

`retry_message` bounds our and the stores' refusals; `BoundedArgsValidator` says an argument a parameter's
constraint refused (or one the tool does not take) as that refusal, and bounds pydantic's other validation
errors (at most `MAX_ERRORS`, inputs shortened). See docs/toolset.md.
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError
from pydantic_ai import ModelRetry
from pydantic_ai.toolsets.abstract import SchemaValidatorProt
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError, SchemaValidator

from ..errors import ECHO_CHARS, echo
from ._arguments import REFUSAL

__all__ = [
    'MAX_ERRORS',
    'MAX_RETRY_CHARS',
    'BoundedArgsValidator',
    'bounded_validation_error',
    'retry_message',
    'short_repr',
]

MAX_RETRY_CHARS = 2000
"""The longest retry message a model is sent."""
MAX_ERRORS = 4
"""How many argument validation errors a model is shown (the rest are counted, not listed)."""
_MAX_LOC = 5
_ELLIPSIS = '…'


def _cut(text: str, limit: int = ECHO_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + _ELLIPSIS


_PYDANTIC_LINK = re.compile(r'\n *For further information visit https://errors\.pydantic\.dev/\S+')
"""pydantic's link under each validation error: nothing a model can act on, and it carries whatever version
pydantic-core read (``latest`` when it could not), so one call's retry text would differ between processes."""


def retry_message(message: str, echoed: Iterable[str] = ()) -> str:
    """``message`` with each long argument in ``echoed`` shortened wherever it is quoted, capped in length.

    Our messages quote arguments through `echo` already; a store's message may quote one whole
    (``f'cannot run {pattern!r}'``), so its quotes are shortened here, the one place every retry
    passes. The final cap keeps the start (what is wrong) and the end (what to do instead).
    """
    message = _PYDANTIC_LINK.sub('', message)
    for value in sorted({v for v in echoed if len(v) > ECHO_CHARS}, key=len, reverse=True):
        message = message.replace(repr(value), echo(value)).replace(value, _cut(value))
    if len(message) <= MAX_RETRY_CHARS:
        return message
    half = (MAX_RETRY_CHARS - 3) // 2
    return f'{message[:half]} {_ELLIPSIS} {message[-half:]}'


class _ShortRepr(reprlib.Repr):
    """A ``repr`` that never builds the whole text of a big input (nor of a huge integer, which ``repr`` refuses)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxdict, self.maxlist, self.maxtuple, self.maxset = 2, 3, 3, 3, 3
        self.maxstring = self.maxother = ECHO_CHARS

    def repr_int(self, x: int, level: int) -> str:
        return repr(x) if x.bit_length() <= 64 else f'<an integer of {x.bit_length()} bits>'


_SHORT_REPR = _ShortRepr()


def short_repr(value: Any) -> str:
    """``repr(value)``, short whatever ``value`` is (a number a model sent back in a message, say)."""
    return _SHORT_REPR.repr(value)


def _small(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is small enough to show as it is (a few short scalars, nested at most twice)."""
    if value is None or isinstance(value, bool | float):
        return True
    if isinstance(value, int):
        return value.bit_length() <= 64
    if isinstance(value, str):
        return len(value) <= ECHO_CHARS
    if isinstance(value, list | tuple | dict) and depth < 2 and len(value) <= 3:
        items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
        return all(_small(item, depth + 1) for item in items)
    return False


def _short_input(value: Any) -> Any:
    """An error's ``input``, small: as it is when it already is, a string cut short, anything else a short text."""
    if _small(value):
        return value
    if isinstance(value, str):
        return _cut(value)
    if isinstance(value, bytes | bytearray):
        return _cut(bytes(value[: ECHO_CHARS + 1]).decode('utf-8', 'replace'))
    return _cut(short_repr(value))


def _short_loc(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    short = tuple(_cut(part) if isinstance(part, str) else part for part in loc[:_MAX_LOC])
    return short if len(loc) <= _MAX_LOC else (*short, _ELLIPSIS)


def _line_error(detail: ErrorDetails) -> InitErrorDetails:
    """``detail`` rebuilt with a short input and location, keeping pydantic's own error type where it can."""
    line: InitErrorDetails = {
        'type': detail['type'],
        'loc': _short_loc(detail['loc']),
        'input': _short_input(detail['input']),
    }
    if 'ctx' in detail:
        line['ctx'] = detail['ctx']
    try:  # a built-in error type: pydantic rebuilds its message from the context
        ValidationError.from_exception_data('check', [line])
    except (KeyError, TypeError, ValueError):  # a custom one: keep its message as written
        custom = PydanticCustomError(detail['type'], _cut(detail['msg'], 200))
        line = {'type': custom, 'loc': line['loc'], 'input': line['input']}
    return line


def bounded_validation_error(error: ValidationError) -> ValidationError:
    """``error`` with at most `MAX_ERRORS` errors, each with its input and location shortened."""
    details = error.errors(include_url=False)
    lines = [_line_error(d) for d in details[:MAX_ERRORS]]
    hidden = len(details) - len(lines)
    if hidden:
        more = PydanticCustomError('more_errors', '{count} more errors not shown', {'count': hidden})
        lines.append({'type': more, 'loc': (), 'input': None})
    return ValidationError.from_exception_data(error.title, lines)


def _refusal(detail: ErrorDetails) -> str | None:
    """What the model is told for an argument a parameter's constraint refused, or one the tool does not take."""
    if detail['type'] == REFUSAL:
        return str(detail.get('ctx', {}).get('refusal', detail['msg']))
    if detail['type'] == 'extra_forbidden' and len(detail['loc']) == 1:
        return f'this tool takes no {_cut(str(detail["loc"][0]))} argument: call it without one'
    return None


def _refused(error: ValidationError) -> ModelRetry | ValidationError:
    """A ``ModelRetry`` saying the first refusal when every error is one, else `bounded_validation_error`."""
    refusals = [_refusal(d) for d in error.errors(include_url=False)]
    if refusals and all(r is not None for r in refusals):
        return ModelRetry(retry_message(str(refusals[0])))
    return bounded_validation_error(error)


@dataclass(frozen=True, slots=True)
class BoundedArgsValidator:
    """A tool's argument validator whose refusals are ``ModelRetry`` and other errors bounded.

    An argument refused by its parameter's constraint (`~toolish_rag.toolset._arguments.StringArgument`,
    ``IntBounds``) or not taken by the tool is a ``ModelRetry`` saying what to send instead, as a refusal
    from the tool's body is. pydantic-ai shows the model any other validation error's details as JSON,
    inputs included; for malformed JSON arguments the input is the whole raw text: those are
    `bounded_validation_error`. Wrapping the validator does both on every path that validates a tool call
    (agent runs, ``run_tool``, MCP).
    """

    inner: SchemaValidator | SchemaValidatorProt

    def validate_json(
        self,
        input: str | bytes | bytearray,
        *,
        allow_partial: bool | Literal['off', 'on', 'trailing-strings'] = False,
        **kwargs: Any,
    ) -> Any:
        try:
            return self.inner.validate_json(input, allow_partial=allow_partial, **kwargs)
        except ValidationError as e:
            raise _refused(e) from None

    def validate_python(
        self, input: Any, *, allow_partial: bool | Literal['off', 'on', 'trailing-strings'] = False, **kwargs: Any
    ) -> Any:
        try:
            return self.inner.validate_python(input, allow_partial=allow_partial, **kwargs)
        except ValidationError as e:
            raise _refused(e) from None
