"""A node's record read from its JSON text (``read_node``, what the informer's lists use) against the one
parsed from its dict (``parse_node``): the same fields, or the same error, whatever the node holds."""

from __future__ import annotations

import copy
import json

import hypothesis
import orjson
import pytest

from actors.shim.nodes import parse_node, read_node
from tests.reliability import tenants
from tests.shim.factories import node_json, parsed_or_refused


def _changed(path: str, value: object) -> dict:
    """A node of ``node_json`` with the field at dotted ``path`` set to ``value``."""
    raw = node_json("node-1", labels={"kubernetes.io/os": "linux"})
    raw["status"]["conditions"] = [{"type": "MemoryPressure", "status": "False"},
                                   {"type": "Ready", "status": "True", "reason": "KubeletReady"}]
    *parents, last = path.split(".")
    target = raw
    for parent in parents:
        target = target[parent]
    target[last] = value
    return raw


VARIED_NODES = [
    node_json("plain"),
    node_json("kubesim", labels={"topology.kubernetes.io/zone": "zone-1", "kubernetes.io/arch": "arm64"}),
    node_json("tainted", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                                 {"key": "soft", "effect": "PreferNoSchedule"}]),
    node_json("cordoned", unschedulable=True),
    node_json("ö-nöde", labels={"zöne": "ü"}, resource_version="7"),
    node_json("odd-sizes", cpu="1500m", memory="1.5Gi", pods="0"),
    _changed("status.conditions", [{"type": "Ready", "status": "False"}]),
    _changed("status.conditions", [{"type": "Ready", "status": "Unknown"}, {"type": "Ready", "status": "True"}]),
    _changed("status.conditions", [None, 5, {"type": "Ready", "status": "False"}]),
    _changed("status.conditions", [{"type": 5, "status": "True"}, {"type": "Ready", "status": True}]),
    _changed("status.conditions", "Ready"),
    _changed("status.conditions", None),
    _changed("status.conditions", []),
    _changed("status.allocatable", None),
    _changed("status.allocatable", {}),
    _changed("status.allocatable", {"cpu": 8, "memory": "1Gi"}),
    _changed("status.allocatable", {"cpu": "lots"}),
    _changed("status.allocatable", {"cpu": "1", "vcore": "99999999999999999999"}),
    _changed("status.allocatable", ["cpu"]),
    _changed("status", None),
    _changed("status", "Ready"),
    _changed("spec", None),
    _changed("spec", []),
    _changed("spec.taints", None),
    _changed("spec.taints", "NoSchedule"),
    _changed("spec.taints", [{"key": 5, "effect": "NoSchedule"}]),
    _changed("spec.unschedulable", None),
    _changed("spec.unschedulable", "yes"),
    _changed("spec.unschedulable", 0),
    _changed("metadata.labels", None),
    _changed("metadata.labels", {"a": 5}),
    _changed("metadata.labels", ["a"]),
    _changed("metadata.resourceVersion", 5),
    _changed("metadata.resourceVersion", None),
    _changed("metadata.name", ""),
    _changed("metadata.name", 5),
    _changed("metadata.name", None),
    _changed("metadata", None),
    _changed("metadata", ["node-1"]),
    {"metadata": {"name": "bare"}},
    [node_json("in-a-list")],
    "node-1",
]


@pytest.mark.parametrize("raw", VARIED_NODES, ids=range(len(VARIED_NODES)))
def test_a_node_read_from_its_json_text_is_the_record_parsed_from_its_dict(raw):
    """Compact (the API server's) and spaced, twice (the allocatable's cache warm the second time)."""
    for text in (json.dumps(raw, separators=(",", ":"), ensure_ascii=False).encode(), json.dumps(raw).encode()):
        expected = parsed_or_refused(parse_node, orjson.loads(text))
        for _ in range(2):
            assert parsed_or_refused(read_node, text) == expected, text[:300]


@hypothesis.settings(max_examples=300, deadline=None, suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(tenants.nodes())
def test_a_tenants_node_read_from_its_json_text_is_the_record_parsed_from_its_dict(raw):
    text = json.dumps(raw, separators=(",", ":")).encode()
    assert parsed_or_refused(read_node, text) == parsed_or_refused(parse_node, orjson.loads(text))


@pytest.mark.parametrize("text", [
    b'{"metadata":{"name":"a","name":"b"},"status":{"allocatable":{"cpu":"1"},"allocatable":{"cpu":"2"}}}',
    b'{"metadata":{"name":"a","labels":{"x":"1","x":"2"}},"status":{"allocatable":{}}}',
    b'{"metadata":{"name":"a"},"spec":{"unschedulable":true,"unschedulable":false},"status":{"allocatable":{}}}',
    b'{"metadata":{"n\\u0061me":"escaped"},"status":{"allocatable":{"cpu":"1"}}}',
])
def test_a_node_written_oddly_is_read_as_its_dict_reads(text):
    """Keys written twice (the last one counts, as orjson reads them) or escaped."""
    assert parsed_or_refused(read_node, text) == parsed_or_refused(parse_node, orjson.loads(text))


@pytest.mark.parametrize("text", [b"", b"{", b"[" * 5000 + b"]" * 5000, b'{"metadata":{"name":"\xff"}}',
                                  b'{"metadata":{"name":"\\ud800"},"status":{"allocatable":{}}}', b"5"])
def test_text_that_is_no_node_is_a_value_error(text):
    with pytest.raises(ValueError):
        read_node(text)


def test_the_record_holds_none_of_the_texts_state():
    """The labels of a record read from text are its own: the next node read leaves them as they are."""
    raw = node_json("a", labels={"team": "x"})
    first = read_node(json.dumps(raw).encode())
    other = copy.deepcopy(raw)
    other["metadata"]["labels"]["team"] = "y"
    read_node(json.dumps(other).encode())
    assert first.labels["team"] == "x"
    with pytest.raises(TypeError):
        first.labels["team"] = "z"  # type: ignore[index]
