"""Hooks the resource manager gives the core, and the callback it answers through."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from si import si_pb2


class NodePredicates(Protocol):
    """Resource-manager node filters (Kubernetes: selectors, affinity, taints, ports).

    The core calls :meth:`check` only for a constrained ask, a restricted node, or a node holding an
    allocation that guards it, so asks without constraints on plain nodes cost nothing per node.
    """

    def ask_constrained(self, tags: Mapping[str, str]) -> bool: ...

    def node_restricted(self, attributes: Mapping[str, str]) -> bool: ...

    def allocation_guards(self, tags: Mapping[str, str]) -> bool:
        """Whether an allocation with ``tags`` limits which pods may join it on its node."""
        ...

    def check(self, ask_tags: Mapping[str, str], node_id: str, node_attributes: Mapping[str, str],
              node_allocation_tags: Iterable[Mapping[str, str]]) -> str | None: ...


class NoPredicates:
    """Every node fits every ask (a resource manager without placement constraints)."""

    def ask_constrained(self, tags: Mapping[str, str]) -> bool:
        return False

    def node_restricted(self, attributes: Mapping[str, str]) -> bool:
        return False

    def allocation_guards(self, tags: Mapping[str, str]) -> bool:
        return False

    def check(self, ask_tags, node_id, node_attributes, node_allocation_tags) -> str | None:
        return None


class ResourceManagerCallback(Protocol):
    """How the core answers; called from core actor threads, so implementations only ``tell``."""

    def update_allocation(self, response: si_pb2.AllocationResponse) -> None: ...

    def update_application(self, response: si_pb2.ApplicationResponse) -> None: ...

    def update_node(self, response: si_pb2.NodeResponse) -> None: ...

    def send_events(self, events: Sequence[si_pb2.EventRecord]) -> None: ...

    def update_container_scheduling_state(self, request: si_pb2.UpdateContainerSchedulingStateRequest) -> None: ...
