"""Quota-change preemption: a queue whose max was lowered below its usage gives back the excess.

With the partition's ``preemption.quotapreemptionenabled`` and a queue's ``quota.preemption.delay``
above 0 (upstream's defaults: off, and 0 = never), a queue that has been over its max for that long
has running pods of its subtree preempted until its usage is back under the max: the lowest priority
first, then the youngest, only pods that give back a type the queue is over, never foreign pods,
placeholders, pods that opted out, or pods already leaving.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from actors.core.allocation import Allocation
from actors.core.application import Application
from actors.core.queue import Queue

MESSAGE = "Preempted by Quota change enforcement process in {queue}"


def over_max(queue: Queue) -> bool:
    """Whether the queue's usage, less what is already leaving it, is above its max."""
    return queue.max is not None and not (queue.allocated - queue.preempting).fits_in_max(queue.max)


def victims(queue: Queue, apps: Mapping[str, Application], subtree: Iterable[Queue]) -> tuple[Allocation, ...]:
    """The pods of ``queue``'s subtree to preempt so that its usage fits its max again."""
    found = [a for q in subtree for app_id in q.apps for a in apps[app_id].allocations.values()
             if a.preemptable and not a.placeholder and not a.preempted and not a.eviction_refused]
    found.sort(key=lambda a: (a.priority, a.youth(), a.key))
    usage = queue.allocated - queue.preempting
    chosen = []
    for victim in found:
        if usage.fits_in_max(queue.max):
            break
        over = usage.exceeding(queue.max)
        if any(victim.resource.get(name, 0) > 0 for name in over):
            chosen.append(victim)
            usage = usage - victim.resource
    return tuple(chosen)


def subtree(queue: Queue) -> Iterable[Queue]:
    pending = [queue]
    while pending:
        current = pending.pop()
        yield current
        pending.extend(current.children.values())
