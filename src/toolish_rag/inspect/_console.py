"""The tool console: a form built from each offered tool's own JSON schema, run through ``rag.run_tool`` exactly
as a model's call, under a scope picked as a filter or (by an unscoped viewer) a token of the token file. Shows
the text the model receives, the hits (each linked to Browse), a bad call's retry message, and the time taken.
See docs/inspect.md#tool-console."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic_ai import ModelRetry

from ..content import Chunk
from ..filters import Filter, PropertyFilter, and_, parse_filter
from ..search import SearchHit
from ..toolset import ToolishRag
from ._access import ScopedToolsets, Viewer
from ._browse import chunk_link, document_link
from ._html import Html, counted, join, markup, pretty, table
from ._page import BadRequest, Page

if TYPE_CHECKING:
    from ..mcp import TokenTable

__all__ = ['console_page', 'form_arguments', 'parse_scope_text']

logger = logging.getLogger('toolish_rag.inspect')

_BIG = frozenset({'query', 'pattern'})


def parse_scope_text(text: str) -> Filter | None:
    """The console's filter box: a filter's JSON (``{"op": "eq", ...}``) or a token file's scope shorthand
    (``{"tenant": "acme"}``; a list means one of); empty means no extra filter."""
    text = text.strip()
    if not text:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise BadRequest(f'the filter is not JSON: {e.msg} (line {e.lineno})') from None
    if not isinstance(data, dict):
        raise BadRequest('the filter is a JSON object: a filter ({"op": ...}) or a scope ({"tenant": "acme"})')
    try:
        if 'op' in data:
            return parse_filter(data)
        parts: list[Filter | None] = [
            PropertyFilter.in_(k, v) if isinstance(v, list) else PropertyFilter.eq(k, v) for k, v in data.items()
        ]
        return and_(*parts) if parts else None
    except (ValidationError, ValueError, TypeError) as e:
        raise BadRequest(f'not a filter: {str(e).splitlines()[0]}') from None


def _kind(schema: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """The property's type, looking through ``anyOf [X, null]``: string, integer, number, boolean, strings, or json."""
    options = [o for o in schema.get('anyOf', [schema]) if o.get('type') != 'null']
    one = options[0] if len(options) == 1 else {}
    kind = one.get('type')
    if kind in ('string', 'integer', 'number', 'boolean') and 'enum' not in one:
        return str(kind), one
    if 'enum' in one:
        return 'enum', one
    if kind == 'array' and one.get('items', {}).get('type') == 'string':
        return 'strings', one
    return 'json', one


def form_arguments(schema: Mapping[str, Any], form: Mapping[str, str]) -> dict[str, Any]:
    """The arguments a form sent, typed by the tool's schema; a blank field is left out (its default applies).

    A value that is not of its type is sent as typed, so the tool's own validation answers it with the
    retry message a model would get.
    """
    args: dict[str, Any] = {}
    for name, prop in schema.get('properties', {}).items():
        raw = form.get(f'arg.{name}')
        kind, _ = _kind(prop)
        if kind == 'boolean':
            choice = (raw or '').strip()
            if choice in ('true', 'false'):
                args[name] = choice == 'true'
            continue
        if raw is None or not raw.strip():
            continue
        value = raw.strip()
        if kind == 'integer':
            args[name] = int(value) if value.lstrip('-').isdigit() else value
        elif kind == 'number':
            try:
                args[name] = float(value)
            except ValueError:
                args[name] = value
        elif kind == 'strings':
            args[name] = [line.strip() for line in value.splitlines() if line.strip()]
        elif kind == 'json':
            try:
                args[name] = json.loads(value)
            except json.JSONDecodeError:
                args[name] = value
        else:
            args[name] = raw if kind == 'string' else value
    return args


def _field(name: str, prop: Mapping[str, Any], required: bool, value: str) -> Html:
    kind, one = _kind(prop)
    label = markup('<span class="arg">{}</span>{}', name, ' *' if required else '')
    described = markup('<small>{}</small>', prop.get('description', ''))
    field_name = f'arg.{name}'
    if kind == 'boolean':
        options = [('', 'default'), ('true', 'true'), ('false', 'false')]
        control = markup(
            '<select name="{}">{}</select>',
            field_name,
            join(
                markup('<option value="{}"{}>{}</option>', v, Html(' selected') if v == value else '', t)
                for v, t in options
            ),
        )
    elif kind == 'enum':
        choices = ['', *[str(v) for v in one.get('enum', [])]]
        control = markup(
            '<select name="{}">{}</select>',
            field_name,
            join(
                markup('<option value="{}"{}>{}</option>', v, Html(' selected') if v == value else '', v or 'default')
                for v in choices
            ),
        )
    elif kind in ('strings', 'json') or name in _BIG:
        hint = 'one per line' if kind == 'strings' else 'JSON' if kind == 'json' else ''
        control = markup(
            '<textarea name="{}" rows="{}" placeholder="{}">{}</textarea>',
            field_name,
            6 if kind == 'json' else 2,
            hint,
            value,
        )
    else:
        step = Html(' step="any"') if kind == 'number' else Html('')
        control = markup(
            '<input name="{}" value="{}" placeholder="{}"{}>',
            field_name,
            value,
            '' if 'default' not in prop else 'optional' if prop['default'] is None else f'default: {prop["default"]}',
            step,
        )
    return markup('<label class="field">{} {} {}</label>', label, control, described)


def _short(rag: ToolishRag[Any], name: str) -> str | None:
    """The offered tool ``name`` names (short or full), as its full name."""
    for full, short in zip(rag.tool_names, rag.offered_tools, strict=True):
        if name in (full, short):
            return full
    return None


def _hits_table(hits: Sequence[SearchHit]) -> Html:
    rows = []
    for rank, hit in enumerate(hits, start=1):
        record = hit.record
        where: object = (
            markup(
                '{}{}',
                document_link(record.document_id, record.document_title),
                markup(' > {}', ' > '.join(record.section_path)) if record.section_path else '',
            )
            if isinstance(record, Chunk)
            else getattr(record, 'name', '')
        )
        rows.append((rank, chunk_link(record.id), record.kind, f'{hit.score:.4f}', where))
    return table(['rank', 'id', 'kind', 'score', 'where'], rows, css='hits')


async def console_page(
    viewer: Viewer,
    tokens: TokenTable | None,
    toolsets: ScopedToolsets,
    query: Mapping[str, str],
    form: Mapping[str, str] | None,
) -> Page:
    definitions = await viewer.rag.tool_definitions()
    if not definitions:
        return Page('Tool console', markup('<p class="lacks">This toolset offers no tools.</p>'))
    asked = (form if form is not None else query).get('tool', '')
    chosen = _short(viewer.rag, asked) if asked else None
    full = chosen or definitions[0].name
    definition = next(d for d in definitions if d.name == full)
    schema = definition.parameters_json_schema
    values: Mapping[str, Any] = form if form is not None else {f'arg.{k}': v for k, v in query.items()}
    tools = join(
        markup('<option value="{}"{}>{}</option>', d.name, Html(' selected') if d.name == full else '', d.name)
        for d in definitions
    )
    required = set(schema.get('required', []))
    fields = join(
        _field(n, p, n in required, str(values.get(f'arg.{n}', '') or ''))
        for n, p in schema.get('properties', {}).items()
    )
    scope_text = (form or {}).get('scope_filter', '')
    label = (form or {}).get('scope_token', '')
    token_choice = Html('')
    if tokens is not None and viewer.unscoped:
        options = join(
            markup('<option value="{}"{}>{}</option>', t, Html(' selected') if t == label else '', t or 'none')
            for t in ['', *tokens.labels]
        )
        token_choice = markup('<label class="field">As token <select name="scope_token">{}</select></label>', options)
    result = await _run(viewer, tokens, toolsets, full, schema, form) if form is not None else Html('')
    body = markup(
        '<form method="get" action="/console" class="inline"><label>Tool <select name="tool" id="tool-pick">{}'
        '</select></label> <button type="submit">Open</button></form>'
        '<details><summary>Description the model reads</summary><pre>{}</pre></details>'
        '<form method="post" action="/console" id="tool-form"><input type="hidden" name="tool" value="{}">{}'
        '<fieldset><legend>Scope (narrows this call, never widens the view)</legend>{}'
        '<label class="field">Filter <textarea name="scope_filter" rows="2" '
        'placeholder=\'{{"tenant": "acme"}} or {{"op": "eq", "key": "tenant", "value": "acme"}}\'>{}</textarea>'
        '</label></fieldset><button type="submit" id="run">Run {}</button></form>{}',
        tools,
        definition.description or '',
        full,
        fields,
        token_choice,
        scope_text,
        full,
        result,
    )
    return Page('Tool console', body)


async def _run(
    viewer: Viewer,
    tokens: TokenTable | None,
    toolsets: ScopedToolsets,
    full: str,
    schema: Mapping[str, Any],
    form: Mapping[str, str],
) -> Html:
    rag = viewer.rag
    label = form.get('scope_token', '')
    if label:
        if tokens is None or not viewer.unscoped or label not in tokens.labels:
            raise BadRequest('no such token to preview')
        rag = toolsets.of(next(s for s in tokens.scopes if s.label == label))  # the viewer is unscoped
    extra = parse_scope_text(form.get('scope_filter', ''))
    if extra is not None:
        rag = rag.with_metadata_filter(extra)
    arguments = form_arguments(schema, form)
    sent = markup('<h2>Arguments sent</h2><pre id="arguments">{}</pre>', pretty(arguments))
    start = time.perf_counter()
    try:
        outcome = await rag.run_tool(full, arguments)
    except ModelRetry as retry:
        took = (time.perf_counter() - start) * 1000
        return markup(
            '{}<h2>Retry message the model receives</h2><pre class="retry" id="model-text">{}</pre>'
            '<p class="timing">{} ms</p>',
            sent,
            retry.message,
            f'{took:.1f}',
        )
    except Exception:
        logger.exception('inspect: tool %s failed', full)
        return markup('{}<p class="error">{} failed with an internal error (see the server log).</p>', sent, full)
    took = (time.perf_counter() - start) * 1000
    hits = outcome.metadata.get('hits', []) if isinstance(outcome.metadata, dict) else []
    return markup(
        '{}<h2>Text the model receives</h2><pre class="model-text" id="model-text">{}</pre>'
        '<p class="timing">{} ms · {}</p><h2>Hits</h2>{}',
        sent,
        str(outcome.return_value),
        f'{took:.1f}',
        counted(len(hits), 'hit'),
        _hits_table(hits),
    )
