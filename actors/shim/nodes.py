"""Nodes as the shim sees them: a ``NodeRecord`` parsed once from the API's JSON, and its SI attributes.

``ready`` follows the node's ``Ready`` condition (a node that reports none counts as ready).

A node offers its ``status.allocatable`` (``cpu`` as ``vcore`` millicores). Its attributes carry the
well-known SI keys (hostname, rack, arch, os, zone, region, instance type), every label as
``kubernetes.io/label/<key>``, the filtering taints (``NoSchedule``, ``NoExecute``; ``PreferNoSchedule``
does not filter) as one JSON list, and the cordon flag -- the inputs of ``predicates``.
"""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from dataclasses import dataclass

from actors.shim import keys
from actors.shim.constraints import FILTERING_EFFECTS
from si import constants
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
    """A ``NodeRecord`` from a node's JSON. Raises ``ValueError`` only when the node has no name."""
    metadata = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    name = metadata.get("name")
    if not name:
        raise ValueError(f"node without a name: {metadata!r}")
    labels = metadata.get("labels") or {}
    invalid = ""
    try:
        allocatable = Resource(from_kubernetes((raw.get("status") or {}).get("allocatable")))
    except (QuantityError, TypeError, AttributeError) as error:
        invalid, allocatable = f"invalid allocatable: {error}", ZERO
    taints = [{"key": t.get("key", ""), "value": t.get("value", ""), "effect": t["effect"]}
              for t in spec.get("taints") or () if t.get("effect") in FILTERING_EFFECTS]
    return NodeRecord(
        name=name,
        resource_version=metadata.get("resourceVersion", ""),
        allocatable=allocatable,
        labels=types.MappingProxyType(dict(labels)),
        taints=json.dumps(taints, separators=(",", ":"), sort_keys=True) if taints else "",
        unschedulable=bool(spec.get("unschedulable")),
        invalid=invalid,
        ready=_ready(raw.get("status") or {}),
    )


def _ready(status: Mapping) -> bool:
    """A node is ready unless its ``Ready`` condition says otherwise (no conditions: not yet reported)."""
    for condition in status.get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return True
