"""An agent built from a spec (a dict and a YAML file) gets the store's tools, scope and grounding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent

from tests.capability.cap_helpers import request_texts
from tests.grounded.grounded_helpers import ACME_URI, GLOBEX_URI, Scripted, build_store
from toolish_rag import RagCapability, ToolishRag
from toolish_rag.capability import SERIALIZATION_NAME


@pytest.fixture
async def kb(tmp_path: Path) -> str:
    """A saved memory store (both tenants), as a store spec string."""
    await build_store(tmp_path / 'kb')
    return f'memory:{tmp_path / "kb"}'


def spec(store: str, **options: Any) -> dict[str, Any]:
    return {
        'model': 'test',
        'capabilities': [
            {SERIALIZATION_NAME: {'store': store, 'name': 'docs', 'filter': {'tenant': 'acme'}, **options}}
        ],
    }


async def searched(agent: Agent[Any, Any]) -> str:
    """What the agent's text search told a scripted model."""
    script = Scripted([('docs_text_search', {'query': 'refunds paid'}), 'done'])
    with agent.override(model=script.model):
        result = await agent.run('refunds')
    return request_texts(result.all_messages())


async def test_an_agent_from_a_spec_dict_has_the_stores_tools_in_its_scope(kb: str) -> None:
    options = {'embedder': 'hashing', 'filterable': {'tenant': 'acme|globex'}}
    agent = Agent.from_spec(spec(kb, **options), custom_capability_types=[RagCapability])
    text = await searched(agent)
    assert 'Text search results for' in text and ACME_URI in text and GLOBEX_URI not in text
    (capability,) = [c for c in agent.root_capability.capabilities if isinstance(c, RagCapability)]
    assert capability.id == 'docs' and capability.compaction
    definitions = {d.name: d for d in await capability.rag.tool_definitions()}
    assert 'filter' in definitions['docs_text_search'].parameters_json_schema['properties']
    assert RagCapability.get_serialization_name() == 'ToolishRag'


async def test_an_agent_from_a_yaml_file(kb: str, tmp_path: Path) -> None:
    path = tmp_path / 'agent.yaml'
    path.write_text(
        f'model: test\ncapabilities:\n  - ToolishRag:\n      store: "{kb}"\n      name: docs\n'
        '      filter: {tenant: acme}\n      compaction: false\n      search_budget: 3\n',
        encoding='utf-8',
    )
    agent = Agent.from_file(path, custom_capability_types=[RagCapability])
    text = await searched(agent)
    assert ACME_URI in text and GLOBEX_URI not in text
    (capability,) = [c for c in agent.root_capability.capabilities if isinstance(c, RagCapability)]
    assert (capability.compaction, capability.search_budget) == (False, 3)


async def test_a_filter_spec_can_be_a_filter_and_a_bad_one_says_why(kb: str) -> None:
    scoped = RagCapability.from_spec(kb, filter={'op': 'eq', 'key': 'tenant', 'value': 'globex'})
    hits = (await scoped.rag.run_tool('text_search', {'query': 'refunds'})).metadata['hits']
    assert {h.record.metadata['tenant'] for h in hits} == {'globex'}
    with pytest.raises(ValueError, match='filterable'):
        RagCapability.from_spec(kb, filterable={'year': ''})
    with pytest.raises(ValueError, match='search_budget'):
        RagCapability.from_spec(kb, search_budget=1)


async def test_rag_capability_is_the_same_class_with_id_and_description() -> None:
    rag = ToolishRag(await build_store(), name='handbook', description='Refund rules')
    capability = rag.capability(compaction=False)
    assert isinstance(capability, RagCapability) and capability.rag is rag
    assert capability.id == 'handbook' and 'Refund rules' in (capability.description or '')
    assert rag.capability(id='kb', description='x').id == 'kb'
