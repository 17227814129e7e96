"""The optional libraries a command needs, checked before it does any work, with the exact install command.

`eval` once ingested 5,183 abstracts for half an hour before finding that pytrec_eval was missing; now each
command names what it lacks at once. See docs/troubleshooting.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._extras import install_command, missing_modules

__all__ = ['CLI', 'EVAL', 'MCP', 'MCP_HTTP', 'RAY', 'TOKENS', 'WATCH', 'Extra', 'check_model', 'require']


@dataclass(frozen=True, slots=True)
class Extra:
    """A library (``module``) an option needs (``what``), and the toolish-rag extra that installs it."""

    module: str
    extra: str
    what: str

    @property
    def install(self) -> str:
        return install_command(self.extra)

    def installed(self) -> bool:
        return not missing_modules(self.module)


CLI = Extra('rich', 'cli', 'the command line')
EVAL = Extra('pytrec_eval', 'eval', 'eval')
MCP = Extra('mcp', 'mcp', 'mcp')
MCP_HTTP = Extra('uvicorn', 'mcp', 'mcp --http')
WATCH = Extra('watchfiles', 'watch', '--watch')
RAY = Extra('ray', 'ray', '--ray')
TOKENS = Extra('tiktoken', 'tokens', '--tokenizer tiktoken:...')


def require(*extras: Extra) -> None:
    """SystemExit with one line per missing library, naming its install command; nothing when all are there."""
    missing = [e for e in extras if not e.installed()]
    if missing:
        raise SystemExit('\n'.join(f'toolish-rag: {e.what} needs {e.module}: {e.install}' for e in missing))


def check_model(model: str) -> None:
    """Build the model the way the agent will (no request is made): a missing provider library or setting
    is said now, with pydantic-ai's install command, rather than after the store was opened (a ValueError:
    ``main`` prints it in one line, exit 2)."""
    from pydantic_ai.exceptions import UserError
    from pydantic_ai.models import infer_model

    try:
        infer_model(model)
    except ImportError as e:
        hint = f' (or {install_command("openai")})' if model.startswith('openai') else ''
        raise ValueError(f'model {model!r} needs its provider library: {e}{hint}') from None
    except (UserError, ValueError) as e:
        raise ValueError(f'cannot use model {model!r}: {e}') from None
