"""``toolish-rag inspect``: a local web app to see what an agent sees (documents, tool results under a scope,
the graph, citations, retrieval quality). Needs the ``web`` extra. See docs/inspect.md.
"""

from ._app import create_app

__all__ = ['create_app']
