"""Guaranteed-based preemption: which running allocations an ask that fits no node may take the room of.

The decision is a pure function of the partition's objects (:func:`plan`); the partition applies it.
Upstream's laws, each checked here:

1. the preemptor's queue (and each ancestor with a guarantee) is under its guaranteed share for the
   types it guarantees and stays at or under it once the ask runs and the victims are gone;
2. victims come only from queues above their guaranteed share, and no victim takes its queue (or an
   ancestor not shared with the preemptor) below it, per resource type;
3. never a victim of the preemptor's own application (nor of its own leaf queue);
4. a victim's priority is at most the preemptor's, both seen from the victim's queue: the queues'
   ``priority.offset`` count on the way (the preemptor's up to the fence, the victim's down from it),
   and a ``priority.policy: fence`` queue below the fence gives all its pods up if its offset is at most
   the preemptor's priority there, none otherwise (upstream's ``findEligiblePreemptionVictims``);
5. ``preemption.policy: fence`` — a preemptor inside a fenced queue takes victims only inside it, and
   pods inside a fenced queue are victims only of preemptors inside it; ``disabled`` — pods in or
   below the queue are never victims. A queue on the preemptor's path whose max the ask would break
   fences it too: only its pods make room under that max;
6. an ask preempts only once it has waited its queue's ``preemption.delay``;
7. all victims are on one node, where the ask fits once they are gone, its predicates included; an
   ask its queue's headroom holds back (``shortfall``) also takes victims anywhere inside the queue
   whose max it would break, until they free what the headroom lacks, and holds a node that takes it.

Never victims: foreign pods, placeholders, pods that opted out (``allowPreemptSelf`` false), pods
already being preempted, and pods whose eviction the resource manager refused. Among the node's
eligible pods the lowest-priority, youngest come first, and the smallest set that frees enough wins;
across nodes, the fewest victims, then the lowest top priority.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping

from actors.base import record
from actors.core.allocation import Allocation
from actors.core.application import Application
from actors.core.node import Node
from actors.core.queue import Queue
from si.resources import Resource

MAX_PER_QUEUE = 10  # preempting asks of one queue per scheduling cycle, as upstream
FEASIBLE_NODES = 16  # nodes with a workable victim set compared before the best one is taken


@record
class Plan:
    """Victims on ``node`` whose room ``ask`` takes once they are gone."""

    node: Node
    victims: tuple[Allocation, ...]


class InFlight:
    """A preemption under way: the ask holds ``node`` until its ``victims`` are gone."""

    __slots__ = ("ask", "app_id", "queue_path", "node_id", "victims")

    def __init__(self, ask: Allocation, app_id: str, queue_path: str, node_id: str, victims: Iterable[str]) -> None:
        self.ask = ask
        self.app_id = app_id
        self.queue_path = queue_path
        self.node_id = node_id
        self.victims = set(victims)


def guarded_types(queue: Queue, ask: Allocation) -> bool:
    """Whether some queue on the ask's path guarantees a type the ask needs (else it cannot preempt)."""
    return any(guarantees_some(q, ask.resource) for q in queue.chain())


def guarantees_some(queue: Queue, wanted: Resource) -> bool:
    """Whether ``queue`` guarantees a type ``wanted`` needs."""
    guaranteed = queue.guaranteed
    return guaranteed is not None and any(v > 0 and n in guaranteed for n, v in wanted.items())


def _after(q: Queue, ask: Resource, freed: Resource) -> Resource:
    """``q``'s usage once the preemptions under way and this one are done."""
    return q.allocated - q.preempting + q.awaiting + ask - freed


def preemptor_within_guarantee(path: Iterable[Queue], ask: Resource, freed_below: dict[str, Resource]) -> bool:
    """Law 1: every queue of ``path`` stays at or under its guarantee for the types the ask needs;
    ``freed_below`` maps a queue path to what the victims free inside it."""
    for q in path:
        guaranteed = q.guaranteed
        if guaranteed is None:
            continue
        after = _after(q, ask, freed_below.get(q.path, _ZERO))
        for name, amount in ask.items():
            if amount > 0 and name in guaranteed and after.get(name, 0) > guaranteed[name]:
                return False
    return True


_ZERO = Resource()

# Whether a node meets an ask's constraints with the given allocations gone (the partition's check).
Meets = Callable[[Allocation, Node, Collection[str]], bool]


class _Chooser:
    """One ask's victim search: the preemptor's context and the per-queue verdicts it caches."""

    def __init__(self, queues: dict[str, Queue], app_id: str, queue: Queue, ask: Allocation, meets: Meets) -> None:
        self.queues = queues
        self.app_id = app_id
        self.queue = queue
        self.ask = ask
        self.meets = meets
        self.preemptor_path = {q.path for q in queue.chain()}
        # Upstream's fence root: the first queue up from the preemptor's that is fenced, or whose max the
        # ask would break, or the root. On the way, the ask's priority as each of those queues sees it.
        self.seen_priority: dict[str, int] = {}
        priority = ask.priority
        for fence in queue.chain():
            priority = fence.priority_offset if fence.priority_fence else priority + fence.priority_offset
            self.seen_priority[fence.path] = priority
            if (fence.parent is None or fence.preemption_policy == "fence"
                    or (fence.max is not None and not (fence.allocated + ask.resource).fits_in_max(fence.max))):
                break
        self.fence = fence
        self.fence_prefix = fence.path + "." if fence.parent is not None else ""
        self.eligible_queue: dict[str, Queue | None] = {}
        self.top_priority: dict[str, float] = {}

    def _inside(self, path: str, ancestor: str) -> bool:
        return path == ancestor or path.startswith(ancestor + ".")

    def victim_queue(self, path: str) -> Queue | None:
        """The victim's leaf queue when its pods may be victims of this ask at all (laws 3 and 5)."""
        if path in self.eligible_queue:
            return self.eligible_queue[path]
        queue = self.queues.get(path)
        own = self.queue.path
        if queue is None or path == own:
            queue = None
        elif self.fence_prefix and not (path + ".").startswith(self.fence_prefix):
            queue = None
        elif not self._claim_against(queue):
            queue = None
        else:
            for q in queue.chain():
                if q.preemption_policy == "disabled" or (
                        q.preemption_policy == "fence" and q.parent is not None and not self._inside(own, q.path)):
                    queue = None
                    break
        self.eligible_queue[path] = queue
        return queue

    def highest_victim_priority(self, victim_queue: Queue) -> float:
        """The highest priority a pod of ``victim_queue`` may have to be a victim (law 4): the ask's
        priority carried down from the fence through the queues' offsets; a priority-fenced queue on the
        way gives all its pods up (infinity) or none (minus infinity)."""
        path = victim_queue.path
        if path in self.top_priority:
            return self.top_priority[path]
        below = []
        for q in victim_queue.chain():
            if q is self.fence:
                break
            below.append(q)
        priority: float = self.seen_priority[self.fence.path]
        fenced = False
        for q in reversed(below):
            if q.path in self.seen_priority:
                priority = self.seen_priority[q.path]
            elif q.priority_fence:
                if q.priority_offset > priority:
                    priority = float("-inf")
                    break
                fenced = True
            else:
                priority -= q.priority_offset
        top = self.top_priority[path] = float("inf") if fenced and priority > float("-inf") else priority
        return top

    def _claim_against(self, victim_queue: Queue) -> bool:
        """Whether a guarantee of the ask's types lies on the preemptor's path below the queue it shares
        with ``victim_queue``: two queues that only share a guaranteed parent have no claim on each other
        (else they would take the room from each other in turn)."""
        shared = next(q.path for q in victim_queue.chain() if q.path in self.preemptor_path)
        for q in self.queue.chain():
            if q.path == shared:
                return False
            if guarantees_some(q, self.ask.resource):
                return True
        return False

    def victim_ok(self, victim: Allocation, queue: Queue, freed_in: dict[str, Resource]) -> bool:
        """Law 2: taking ``victim`` leaves each of its queues not shared with the preemptor at or above
        its guarantee."""
        for q in queue.chain():
            if q.path in self.preemptor_path:
                break
            guaranteed = q.guaranteed
            if guaranteed is None:
                continue
            left = q.allocated - q.preempting - freed_in.get(q.path, _ZERO) - victim.resource
            for name, amount in victim.resource.items():
                if amount > 0 and name in guaranteed and left.get(name, 0) < guaranteed[name]:
                    return False
        return True

    def candidates(self, allocations: Iterable[Allocation],
                   apps: Mapping[str, Application]) -> list[tuple[Allocation, Queue]]:
        """Of ``allocations``, those that may be victims, with their queues, in the order they are taken."""
        found = []
        for victim in allocations:
            if (not victim.preemptable or victim.placeholder or victim.preempted or victim.eviction_refused
                    or victim.application_id == self.app_id):
                continue
            app = apps.get(victim.application_id)
            queue = self.victim_queue(app.queue_path) if app is not None else None
            if queue is not None and victim.priority <= self.highest_victim_priority(queue):
                found.append((victim, queue))
        found.sort(key=lambda pair: (pair[0].priority, pair[0].youth(), pair[0].key))
        return found

    def on_node(self, node: Node, apps: Mapping[str, Application]) -> tuple[Allocation, ...] | None:
        """The smallest preferred victim set on ``node`` after which the ask fits there, or None."""
        ask = self.ask.resource
        available = node.available
        if ask.fits_in(available):
            return None  # it fits without preemption: the predicates refused it, victims would not help
        found = self.candidates(node.allocations.values(), apps)
        if not found:
            return None
        chosen: list[tuple[Allocation, Queue]] = []
        freed = Resource()
        freed_in: dict[str, Resource] = {}
        for victim, queue in found:
            short = {n for n, v in ask.items() if v > 0 and v > available.get(n, 0) + freed.get(n, 0)}
            if not any(victim.resource.get(n, 0) > 0 for n in short):
                continue
            if not self.victim_ok(victim, queue, freed_in):
                continue
            chosen.append((victim, queue))
            freed = freed + victim.resource
            for q in queue.chain():
                freed_in[q.path] = freed_in.get(q.path, _ZERO) + victim.resource
            if ask.fits_in(available + freed):
                break
        else:
            return None
        for pair in reversed(chosen[:-1]):  # fewest pods: drop any the others make unnecessary
            if ask.fits_in(available + freed - pair[0].resource):
                chosen.remove(pair)
                freed = freed - pair[0].resource
                for q in pair[1].chain():
                    freed_in[q.path] = freed_in[q.path] - pair[0].resource
        if not preemptor_within_guarantee(self.queue.chain(), ask, freed_in):
            return None
        victims = tuple(v for v, _ in chosen)
        if not self.meets(self.ask, node, {v.key for v in victims}):
            return None
        return victims


    def with_shortfall(self, node: Node, apps: Mapping[str, Application], everywhere: list[tuple[Allocation, Queue]],
                       shortfall: Resource) -> tuple[Allocation, ...] | None:
        """Victims after which the ask, held back by its queue's headroom, runs on ``node``: those on the
        node it needs there (none if it fits already), then the preferred of ``everywhere`` (inside the
        fence) until together they free ``shortfall``; None when they cannot."""
        ask = self.ask.resource
        local: tuple[Allocation, ...] = ()
        if not ask.fits_in(node.available):
            local = self.on_node(node, apps)
            if local is None:
                return None
        elif not self.meets(self.ask, node, ()):
            return None
        chosen = list(local)
        freed = Resource()
        freed_in: dict[str, Resource] = {}

        def take(victim: Allocation, queue: Queue) -> None:
            nonlocal freed
            freed = freed + victim.resource
            for q in queue.chain():
                freed_in[q.path] = freed_in.get(q.path, _ZERO) + victim.resource

        for victim in local:  # on_node took them from eligible queues only
            take(victim, self.victim_queue(apps[victim.application_id].queue_path))
        for victim, queue in everywhere:
            short = {n for n, v in shortfall.items() if v > freed.get(n, 0)}
            if not short:
                break
            if victim in chosen or not any(victim.resource.get(n, 0) > 0 for n in short):
                continue
            if self.victim_ok(victim, queue, freed_in):
                chosen.append(victim)
                take(victim, queue)
        if not shortfall.fits_in(freed) or not chosen:
            return None
        if not preemptor_within_guarantee(self.queue.chain(), ask, freed_in):
            return None
        return tuple(chosen)


def on_required_node(node: Node, ask: Allocation, meets: Meets) -> Plan | None:
    """Victims for a DaemonSet pod's ask on its node, as upstream's required-node preemptor: any pod
    there of the same or a lower priority that shares a resource type with the ask, except other
    required-node pods and pods already leaving; those that opted out (``allowPreemptSelf`` false)
    come after the others and originators (an application's driver) last, then the lowest priority,
    the youngest and the smallest first, until together they hold at least what the ask needs. The
    queues' guarantees do not count."""
    wanted = {name for name, value in ask.resource.items() if value > 0}
    found = sorted((v for v in node.allocations.values()
                    if not v.required_node and v.priority <= ask.priority and not v.preempted
                    and not v.eviction_refused and not v.placeholder_released
                    and any(v.resource.get(name, 0) > 0 for name in wanted)),
                   key=_required_node_order)
    chosen: list[Allocation] = []
    freed = Resource()
    for victim in found:
        if ask.resource.fits_in(freed):
            break
        chosen.append(victim)
        freed = freed + victim.resource
    if not chosen or not ask.resource.fits_in(node.available + freed):
        return None
    if not meets(ask, node, {v.key for v in chosen}):
        return None
    return Plan(node, tuple(chosen))


def _required_node_order(victim: Allocation) -> tuple:
    kind = 3 if victim.originator else 1 if victim.preemptable else 2
    return (kind, victim.priority, victim.youth(), sum(victim.resource.values()), victim.key)


def plan(nodes: dict[str, Node], node_order: Iterable[str], queues: dict[str, Queue], apps: Mapping[str, Application],
         app_id: str, queue: Queue, ask: Allocation, meets: Meets, shortfall: Resource | None = None) -> Plan | None:
    """The preemption that lets ``ask`` run, or None. Laws 1-5 and 7; the caller checks the delay and the
    partition's and the ask's switches. ``apps``: the partition's applications by id; ``shortfall``: what
    the queue's headroom lacks for the ask, when it holds the ask back."""
    if not guarded_types(queue, ask) or not preemptor_within_guarantee((queue,), ask.resource, {}):
        return None
    chooser = _Chooser(queues, app_id, queue, ask, meets)
    everywhere: list[tuple[Allocation, Queue]] = []
    if shortfall is not None:
        everywhere = chooser.candidates((a for q in queues.values() if q.leaf and chooser.victim_queue(q.path)
                                         for app in q.apps.values() for a in app.allocations.values()), apps)
        if not everywhere:
            return None
    candidates = [ask.required_node] if ask.required_node else node_order
    best: tuple | None = None
    feasible = 0
    for node_id in candidates:
        node = nodes.get(node_id)
        if node is None or not node.schedulable or (node.held_by and node.held_by != ask.key):
            continue
        if shortfall is None:
            victims = chooser.on_node(node, apps)
        else:
            victims = chooser.with_shortfall(node, apps, everywhere, shortfall)
        if victims is None:
            continue
        score = (len(victims), max(v.priority for v in victims), max(v.youth() for v in victims))
        if best is None or score < best[0]:
            best = (score, Plan(node, victims))
        feasible += 1
        if feasible >= FEASIBLE_NODES:
            break
    return best[1] if best is not None else None
