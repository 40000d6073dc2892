"""Hooks the resource manager gives the core, and the callback it answers through."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from si import si_pb2


class PlacementView(Protocol):
    """A predicates plugin's index of one partition's nodes and allocations (kube-scheduler's PreFilter
    state, kept current instead of recomputed). The partition tells it every change, from its thread; the
    attributes and tags it passes are never changed afterwards (a change comes as new ones), so the view
    may keep them without a copy."""

    def node_updated(self, node_id: str, attributes: Mapping[str, str]) -> None: ...

    def node_removed(self, node_id: str) -> None: ...

    def allocation_added(self, node_id: str, key: str, tags: Mapping[str, str]) -> None: ...

    def allocations_added(self, node_id: str, allocations: Iterable[tuple[str, Mapping[str, str]]]) -> None:
        """Allocations ``(key, tags)`` on ``node_id``, told at once."""
        ...

    def allocation_removed(self, node_id: str, key: str) -> None: ...

    def guarded(self, node_id: str) -> bool:
        """Whether allocations already placed limit which asks may join ``node_id`` (anti-affinity)."""
        ...


class NodePredicates(Protocol):
    """Resource-manager node filters (Kubernetes: selectors, affinity, taints, ports, topology).

    The core calls :meth:`check` only for a constrained ask, a restricted node, or a node its view
    says is guarded, so asks without constraints on plain nodes cost nothing per node.
    """

    def ask_constrained(self, tags: Mapping[str, str]) -> bool: ...

    def node_restricted(self, attributes: Mapping[str, str]) -> bool: ...

    def view(self) -> PlacementView:
        """A new, empty view for one partition."""
        ...

    def check(self, ask_tags: Mapping[str, str], node_id: str, node_attributes: Mapping[str, str],
              node_allocation_tags: Iterable[Mapping[str, str]], view: PlacementView) -> str | None: ...

    def ask_prefers(self, tags: Mapping[str, str]) -> bool:
        """Whether a constrained ask ranks the nodes that take it (then :meth:`score` orders them)."""
        ...

    def score(self, ask_tags: Mapping[str, str], node_id: str, node_attributes: Mapping[str, str],
              view: PlacementView) -> float:
        """How much the ask prefers a node that takes it; higher is better."""
        ...


class NoView:
    """The view of a resource manager without placement constraints: it keeps nothing."""

    def node_updated(self, node_id, attributes) -> None:
        pass

    def node_removed(self, node_id) -> None:
        pass

    def allocation_added(self, node_id, key, tags) -> None:
        pass

    def allocations_added(self, node_id, allocations) -> None:
        pass

    def allocation_removed(self, node_id, key) -> None:
        pass

    def guarded(self, node_id) -> bool:
        return False


class NoPredicates:
    """Every node fits every ask (a resource manager without placement constraints)."""

    def ask_constrained(self, tags: Mapping[str, str]) -> bool:
        return False

    def node_restricted(self, attributes: Mapping[str, str]) -> bool:
        return False

    def view(self) -> PlacementView:
        return NoView()

    def check(self, ask_tags, node_id, node_attributes, node_allocation_tags, view) -> str | None:
        return None

    def ask_prefers(self, tags: Mapping[str, str]) -> bool:
        return False

    def score(self, ask_tags, node_id, node_attributes, view) -> float:
        return 0.0


class ResourceManagerCallback(Protocol):
    """How the core answers; called from core actor threads, so implementations only ``tell``."""

    def update_allocation(self, response: si_pb2.AllocationResponse) -> None: ...

    def update_application(self, response: si_pb2.ApplicationResponse) -> None: ...

    def update_node(self, response: si_pb2.NodeResponse) -> None: ...

    def send_events(self, events: Sequence[si_pb2.EventRecord]) -> None: ...

    def update_container_scheduling_state(self, request: si_pb2.UpdateContainerSchedulingStateRequest) -> None: ...
