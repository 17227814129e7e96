"""Graph builders: what writes relations (and entities) into a `GraphStore`, each idempotent.

* `StructureBuilder`: PART_OF (chunk -> section -> document) and LINKS_TO between ingested documents;
* `ExactNameLinker`: MENTIONS where a chunk names an entity, a document or a section as a whole word;
* `VectorLinker`: MENTIONS from a chunk to its most similar entities, weighted by cosine;
* `CodeGraphBuilder`: modules, classes and functions of Python sources, with CONTAINS, IMPORTS, CALLS;
* `ExtractionBuilder`: entities and relations a model reads from the text.

Run them with `build_graph`; the ledger and driver they share are in `toolish_rag.graph_builders.base`.
"""

from ._exact import ExactNameLinker
from ._structure import StructureBuilder
from ._vector import VectorLinker
from .base import BuildReport, GraphBuilder, GraphBuildStore, build_graph
from .code import CodeGraphBuilder
from .extract import ExtractionBuilder

__all__ = [
    'BuildReport',
    'CodeGraphBuilder',
    'ExactNameLinker',
    'ExtractionBuilder',
    'GraphBuildStore',
    'GraphBuilder',
    'StructureBuilder',
    'VectorLinker',
    'build_graph',
]
