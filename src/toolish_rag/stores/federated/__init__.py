"""Several stores as one: fan-out search with per-member fusion, reads routed by id, routed writes.

See docs/federation.md.
"""

from ._events import MemberListener, MemberUnavailable, SourcedHit
from ._federated import Federated
from ._fusion import MemberFusion
from ._routing import ByHash, ByMetadata, Route

__all__ = [
    'ByHash',
    'ByMetadata',
    'Federated',
    'MemberFusion',
    'MemberListener',
    'MemberUnavailable',
    'Route',
    'SourcedHit',
]
