"""Nodes as the shim sees them: a ``NodeRecord`` parsed once from the API's JSON, and its SI attributes.

``ready`` follows the node's ``Ready`` condition (a node that reports none counts as ready).

A node offers its ``status.allocatable`` (``cpu`` as ``vcore`` millicores). Its attributes carry the
well-known SI keys (hostname, rack, arch, os, zone, region, instance type), every label as
``kubernetes.io/label/<key>``, the filtering taints (``NoSchedule``, ``NoExecute``; ``PreferNoSchedule``
does not filter) as one JSON list, and the cordon flag -- the inputs of ``predicates``.
"""

from __future__ import annotations

import functools
import json
import types
from collections.abc import Mapping
from dataclasses import dataclass, fields

import msgspec
import orjson

from actors.base import slot_setter
from actors.shim import keys
from actors.shim.constraints import FILTERING_EFFECTS
from si import constants
from si.bounded import shown
from si.gojson import mapping, string_map, text
from si.quantity import QuantityError, from_kubernetes
from si.resources import ZERO, Resource

_WELL_KNOWN_LABELS = {
    "kubernetes.io/arch": constants.NODE_ATTR_ARCH,
    "kubernetes.io/os": constants.NODE_ATTR_OS,
    "node.kubernetes.io/instance-type": constants.NODE_ATTR_INSTANCE_TYPE,
    "topology.kubernetes.io/zone": constants.NODE_ATTR_ZONE,
    "topology.kubernetes.io/region": constants.NODE_ATTR_REGION,
}


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """The facts of one node the shim acts on; immutable."""

    name: str
    resource_version: str
    allocatable: Resource
    labels: Mapping[str, str]
    taints: str
    unschedulable: bool
    invalid: str = ""
    ready: bool = True

    @property
    def key(self) -> str:
        return self.name

    def attributes(self) -> dict[str, str]:
        """The SI node attributes (see the module docstring)."""
        attributes = {
            constants.NODE_ATTR_HOSTNAME: self.labels.get(keys.HOSTNAME_LABEL, self.name),
            constants.NODE_ATTR_RACKNAME: keys.DEFAULT_RACK,
        }
        for label, attribute in _WELL_KNOWN_LABELS.items():
            if label in self.labels:
                attributes[attribute] = self.labels[label]
        for label, value in self.labels.items():
            attributes[constants.label_tag(label)] = value
        if self.taints:
            attributes[keys.ATTR_TAINTS] = self.taints
        if self.unschedulable:
            attributes[keys.ATTR_UNSCHEDULABLE] = "true"
        return attributes

    def same_offer(self, other: NodeRecord) -> bool:
        """Whether the core's view (resource, attributes) is unchanged between the two records."""
        return (self.allocatable == other.allocatable and self.labels == other.labels
                and self.taints == other.taints and self.unschedulable == other.unschedulable)


def parse_node(raw: Mapping) -> NodeRecord:
    """A ``NodeRecord`` from a node's JSON, whatever its content. Raises ``ValueError`` only when the
    node has no name."""
    raw = mapping(raw)
    metadata = mapping(raw.get("metadata"))
    spec, status = mapping(raw.get("spec")), mapping(raw.get("status"))
    name = metadata.get("name")
    if not name or not isinstance(name, str):
        raise ValueError(f"node without a name: {shown(metadata)}")
    problems = []
    labels = string_map(metadata.get("labels") or {})
    if labels is None:
        problems.append("labels must be a map of strings")
    try:
        allocatable = _allocatable(status.get("allocatable"))
    except (QuantityError, TypeError, AttributeError) as error:
        problems.append(f"invalid allocatable: {error}")
        allocatable = ZERO
    taints = spec.get("taints") or ()
    if not isinstance(taints, list | tuple) or not all(
            isinstance(t, Mapping) and all(isinstance(t.get(k, ""), str) for k in ("key", "value", "effect"))
            for t in taints):
        problems.append("taints must be a list of taints")
        taints = ()
    filtering = [{"key": t.get("key", ""), "value": t.get("value", ""), "effect": t["effect"]}
                 for t in taints if t.get("effect") in FILTERING_EFFECTS]
    return _make_record(
        name=name,
        resource_version=text(metadata.get("resourceVersion")),
        allocatable=ZERO if problems else allocatable,
        labels=types.MappingProxyType(dict(labels or {})),
        taints=json.dumps(filtering, separators=(",", ":"), sort_keys=True) if filtering else "",
        unschedulable=bool(spec.get("unschedulable")),
        invalid="; ".join(problems),
        ready=_ready(status),
    )


# A record is made for every node listed and every update of one: filled as a draft of its slots
# (``slot_setter``) rather than through the frozen dataclass's ``__init__`` (measured: 0.3 us a record against 3).
_make_record = slot_setter(NodeRecord, [field.name for field in fields(NodeRecord)], new=True)


def _allocatable(quantities: object) -> Resource:
    """The node's allocatable in SI units. Nodes of a cluster offer a few sizes: each is read once
    (measured: reading one took 30 us, a sixth of listing a node, in exact fractions)."""
    if isinstance(quantities, dict) and all(isinstance(v, str) for v in quantities.values()):
        return _read_allocatable(tuple(quantities.items()))
    return Resource(from_kubernetes(quantities))


@functools.lru_cache(maxsize=256)
def _read_allocatable(quantities: tuple[tuple[str, str], ...]) -> Resource:
    return Resource(from_kubernetes(dict(quantities)))


def _ready(status: Mapping) -> bool:
    """A node is ready unless its ``Ready`` condition says otherwise (no conditions: not yet reported)."""
    conditions = status.get("conditions") or ()
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return True


# ---- a node read straight from its JSON -------------------------------------------------------------
# A listed node is read from its JSON text without a dict of it: msgspec decodes, in C, only what a record
# takes and skips the rest (addresses, capacity, images, the conditions' times). A node of another shape
# (a field of another type, taints to filter, no allocatable) is read as any node is, from orjson's dicts
# through ``parse_node``: the records are the same.

class _JsonCondition(msgspec.Struct, gc=False):
    type: str | None = None
    status: str | None = None


class _JsonNodeMetadata(msgspec.Struct, gc=False):
    name: str | None = None
    resourceVersion: str | None = None
    labels: dict[str, str] | None = None


class _JsonNodeSpec(msgspec.Struct, gc=False):
    taints: list[msgspec.Raw] | None = None
    unschedulable: bool | None = None


class _JsonNodeStatus(msgspec.Struct, gc=False):
    allocatable: dict[str, str] | None = None
    conditions: list[_JsonCondition] | None = None


class _JsonNode(msgspec.Struct, gc=False):
    metadata: _JsonNodeMetadata | None = None
    spec: _JsonNodeSpec | None = None
    status: _JsonNodeStatus | None = None


_NODE_JSON = msgspec.json.Decoder(_JsonNode)


def read_node(data: bytes | memoryview | msgspec.Raw) -> NodeRecord:
    """``parse_node`` of the node whose JSON text is ``data``: the same record, read without decoding
    what it does not take when it can. Raises ``ValueError`` as ``parse_node`` does, and for text that
    is no JSON (or nested deeper than orjson reads)."""
    try:
        node = _NODE_JSON.decode(data)
    except (ValueError, RecursionError):  # msgspec's DecodeError and ValidationError are ValueErrors
        node = None
    record = _json_record(node) if node is not None else None
    return record if record is not None else parse_node(orjson.loads(memoryview(data)))


def _json_record(node: _JsonNode) -> NodeRecord | None:
    """The record ``parse_node`` makes of ``node``; ``None`` where it reads the node whole."""
    metadata, spec, status = node.metadata, node.spec, node.status
    if metadata is None or not metadata.name or status is None or status.allocatable is None or (
            spec is not None and spec.taints):
        return None
    try:
        allocatable = _read_allocatable(tuple(status.allocatable.items()))
    except (QuantityError, TypeError, AttributeError):
        return None
    ready = True
    for condition in status.conditions or ():
        if condition.type == "Ready":
            ready = condition.status == "True"
            break
    return _make_record(
        name=metadata.name,
        resource_version=metadata.resourceVersion or "",
        allocatable=allocatable,
        labels=types.MappingProxyType(metadata.labels or {}),
        taints="",
        unschedulable=bool(spec is not None and spec.unschedulable),
        invalid="",
        ready=ready,
    )
