"""Reservations: an ask that has fitted no node for a while holds the node that will fit it soonest.

Without them a large ask starves behind a stream of small ones: whatever room a finishing pod leaves
is taken by a small ask before enough gathers anywhere for the large one. An ask that has waited
``Timing.reservation_delay`` (2 s, as upstream) reserves a node; the reserved node leaves the normal
node order, so no other ask is placed there, and each scheduling cycle first tries the reserving ask
on it. The reservation ends when the ask is placed (there, or on any other node that fits it first),
when the ask or the node goes, or after ``Timing.reservation_timeout`` (60 min, as upstream).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

from actors.core.allocation import Allocation
from actors.core.node import Node

MAX_PER_CYCLE = 10  # new reservations in one scheduling cycle: each looks at every node


class Reservation:
    """``ask`` of application ``app_id`` holds ``node_id`` since ``since`` (ns)."""

    __slots__ = ("ask", "app_id", "node_id", "since")

    def __init__(self, ask: Allocation, app_id: str, node_id: str, since: int) -> None:
        self.ask = ask
        self.app_id = app_id
        self.node_id = node_id
        self.since = since


def best_node(nodes: dict[str, Node], node_order: Iterable[str], ask: Allocation,
              meets: Callable[[Allocation, Node, Collection[str]], bool]) -> Node | None:
    """The node that will fit ``ask`` soonest: of the unheld schedulable nodes whose capacity (less
    the foreign pods, which the scheduler cannot move) holds the ask and whose predicates pass, the one
    with the largest share of the ask free now."""
    wanted = [(name, amount) for name, amount in ask.resource.items() if amount > 0]
    candidates = [ask.required_node] if ask.required_node else node_order
    best, best_share = None, -1.0
    for node_id in candidates:
        node = nodes.get(node_id)
        if node is None or not node.schedulable or node.held_by:
            continue
        if not ask.resource.fits_in(node.capacity - node.occupied):
            continue
        available = node.available
        share = min((min(available.get(name, 0), amount) / amount for name, amount in wanted), default=1.0)
        if share <= best_share:
            continue
        if not meets(ask, node, ()):
            continue
        best, best_share = node, share
    return best
