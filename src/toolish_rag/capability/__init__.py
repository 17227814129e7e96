"""toolish-rag as a pydantic-ai capability: ``Agent(model, capabilities=[rag.capability()])``.

`RagCapability` carries the collection's tools and instructions, eager searches (as data before
the prompt), grounding of a `GroundedAnswer`, evidence compaction with one-line references,
budgets and deferral; `EvidenceLedger` is what a conversation showed and cited, rebuilt from its
message history. See docs/capabilities.md and docs/compaction.md.
"""

from .._evidence import EagerResultsPart, EvidenceLedger, Sighting
from ..toolset._factory import register_capability_factory
from ._capability import DEFAULT_COMPACTION_BUDGET, RagCapability
from ._spec import SERIALIZATION_NAME

__all__ = [
    'DEFAULT_COMPACTION_BUDGET',
    'SERIALIZATION_NAME',
    'EagerResultsPart',
    'EvidenceLedger',
    'RagCapability',
    'Sighting',
]

register_capability_factory(RagCapability)
