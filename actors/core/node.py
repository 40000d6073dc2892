"""Nodes: capacity, YuniKorn allocations, foreign (occupied) allocations, and the sorted node index."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from operator import itemgetter

from sortedcontainers import SortedList

from actors.core.allocation import Allocation
from si.constants import NODE_ATTR_HOSTNAME, NODE_ATTR_RACKNAME
from si.resources import Resource


class Node:
    __slots__ = ("node_id", "attributes", "capacity", "allocated", "occupied", "schedulable", "allocations",
                 "foreign", "restricted", "index_key", "version", "held_by", "edits")

    def __init__(self, node_id: str, capacity: Resource, attributes: Mapping[str, str], schedulable: bool) -> None:
        self.node_id = node_id
        self.attributes = {name: attributes[name] for name in attributes}  # dict(map) goes through Mapping's views
        self.capacity = capacity
        self.allocated = Resource()
        self.occupied = Resource()
        self.schedulable = schedulable
        self.allocations: dict[str, Allocation] = {}
        self.foreign: dict[str, Allocation] = {}
        self.restricted = False  # set by the partition from the predicates plugin
        self.index_key: tuple | None = None
        self.version = 0  # bumped on every change, so snapshots rebuild only what changed
        self.held_by = ""  # the ask whose victims are leaving this node: no other ask is placed here
        # Bumped when one of its allocations leaves, is replaced or changes a field readers see (see
        # changed()), not when one is added: readers then take its earlier allocations' JSON as it was.
        self.edits = 0

    @property
    def available(self) -> Resource:
        return self.capacity - self.allocated - self.occupied

    def fits(self, resource: Resource) -> bool:
        """``resource.fits_in(self.available)``, without building the vector: the cycle asks it of node
        after node."""
        capacity, allocated, occupied = self.capacity, self.allocated, self.occupied
        for name, value in resource.items():
            if value > 0 and value > capacity.get(name, 0) - allocated.get(name, 0) - occupied.get(name, 0):
                return False
        return True

    def all_allocations(self) -> Iterator[Allocation]:
        """YuniKorn's and foreign allocations alike: every pod on the node."""
        yield from self.allocations.values()
        yield from self.foreign.values()

    @property
    def host_name(self) -> str:
        return self.attributes.get(NODE_ATTR_HOSTNAME, self.node_id)

    @property
    def rack_name(self) -> str:
        return self.attributes.get(NODE_ATTR_RACKNAME, "")

    def add_allocation(self, allocation: Allocation) -> None:
        self.version += 1
        if allocation.foreign:
            self.foreign[allocation.key] = allocation
            self.occupied = self.occupied + allocation.resource
        else:
            self._add(allocation)
            self.allocated = self.allocated + allocation.resource

    def place(self, allocation: Allocation) -> None:
        """Add a YuniKorn allocation whose resource ``add_allocated`` counts later, with others."""
        self.version += 1
        self._add(allocation)

    def _add(self, allocation: Allocation) -> None:
        allocations = self.allocations
        count = len(allocations)
        allocations[allocation.key] = allocation
        if len(allocations) == count:  # it replaced one of the same key, where that one was
            self.edits += 1

    def add_allocated(self, delta: Resource) -> None:
        self.version += 1
        self.allocated = self.allocated + delta

    def remove_allocation(self, key: str) -> Allocation | None:
        self.version += 1
        allocation = self.allocations.pop(key, None)
        if allocation is not None:
            self.edits += 1
            self.allocated = self.allocated - allocation.resource
            return allocation
        allocation = self.foreign.pop(key, None)
        if allocation is not None:
            self.occupied = self.occupied - allocation.resource
        return allocation

    def resize(self, allocation: Allocation, resource: Resource) -> None:
        self.version += 1
        delta = resource - allocation.resource
        if allocation.foreign:
            self.occupied = self.occupied + delta
        else:
            self.allocated = self.allocated + delta
            self.edits += 1
        allocation.resource = resource
        allocation.picture = allocation.json = None

    def changed(self, allocation: Allocation) -> None:
        """One of its allocations changed a field readers see (it is preempted, or its eviction refused)."""
        self.version += 1
        self.edits += 1
        allocation.picture = allocation.json = None

    def set_attributes(self, attributes: dict[str, str], restricted: bool) -> None:
        """``attributes``: a dict the node keeps (nobody else holds it)."""
        self.version += 1
        self.attributes = attributes
        self.restricted = restricted

    def set_capacity(self, capacity: Resource) -> None:
        self.version += 1
        self.capacity = capacity

    def set_schedulable(self, schedulable: bool) -> None:
        self.version += 1
        self.schedulable = schedulable

    def hold(self, ask_key: str) -> None:
        """Keep the node for ``ask_key`` alone (it reserved the node, or waits for its victims there)."""
        self.version += 1
        self.held_by = ask_key

    def free(self, ask_key: str) -> bool:
        """End the hold of ``ask_key``; False when the node was not held for it."""
        if self.held_by != ask_key:
            return False
        self.version += 1
        self.held_by = ""
        return True

    def usage_score(self, weights: Mapping[str, float]) -> float:
        """Weighted mean of the used share of each weighted resource type."""
        total_weight = 0.0
        score = 0.0
        allocated, occupied, capacities = self.allocated, self.occupied, self.capacity
        for name, weight in weights.items():  # every booking re-sorts its node: no vector is built for it
            capacity = capacities.get(name, 0)
            if capacity > 0 and weight > 0:
                score += weight * (allocated.get(name, 0) + occupied.get(name, 0)) / capacity
                total_weight += weight
        return score / total_weight if total_weight else 0.0


_node_id = itemgetter(1)  # of an index key


class NodeIndex:
    """Schedulable nodes in policy order; one node's re-sort costs O(log n)."""

    def __init__(self, policy: str, weights: Mapping[str, float]) -> None:
        self.policy = policy
        self.weights = dict(weights)
        self._sorted: SortedList = SortedList()

    def update(self, node: Node) -> None:
        """Place (or re-place) ``node`` after its usage, capacity, hold or schedulable flag changed (every
        booking does: the key is computed here, without a call of its own)."""
        ordered = self._sorted
        if node.index_key is not None:
            ordered.remove(node.index_key)
            node.index_key = None
        if node.schedulable and not node.held_by:  # a held node is out of the normal iteration
            score = node.usage_score(self.weights)
            node.index_key = key = (-score if self.policy == "binpacking" else score, node.node_id)
            ordered.add(key)

    def discard(self, node: Node) -> None:
        if node.index_key is not None:
            self._sorted.remove(node.index_key)
            node.index_key = None

    def __iter__(self) -> Iterator[str]:
        """Node ids, best first (no generator of its own: the cycle mostly takes the first few)."""
        return map(_node_id, self._sorted)

    def __len__(self) -> int:
        return len(self._sorted)
