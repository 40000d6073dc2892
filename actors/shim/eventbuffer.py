"""Aggregation and rate limiting of Kubernetes events and pod conditions (the recorder's logic, no I/O).

Identical events (same object, type, reason and message) pending together become one with a count;
one already written is remembered (bounded) so the next occurrence updates it instead of adding a new
object. A token bucket (``qps``, ``burst``) decides how many writes are due; warnings go first, then
pod conditions, then normal events. At most ``max_pending`` events wait: beyond that the oldest normal
event is dropped for a newcomer, and a normal newcomer is dropped when only warnings wait.
"""

from __future__ import annotations

from collections import OrderedDict

from actors.shim.messages import KubeEvent, PodCondition

NORMAL = "Normal"
WARNING = "Warning"
_REMEMBERED = 16384





class EventBuffer:
    """See the module docstring. Not thread-safe: owned by the recorder actor."""

    def __init__(self, qps: float, burst: int, max_pending: int) -> None:
        if qps <= 0 or burst < 1 or max_pending < 1:
            raise ValueError("qps must be positive, burst and max_pending at least 1")
        self._qps = qps
        self._burst = burst
        self._max_pending = max_pending
        self._tokens = float(burst)
        self._refilled: float | None = None
        self._warnings: OrderedDict[KubeEvent, int] = OrderedDict()
        self._normals: OrderedDict[KubeEvent, int] = OrderedDict()
        self._conditions: OrderedDict[str, PodCondition] = OrderedDict()
        self._written_events: OrderedDict[KubeEvent, tuple[str, str, int]] = OrderedDict()
        self._written_conditions: OrderedDict[str, tuple[str, str]] = OrderedDict()
        self.dropped = 0

    @property
    def pending(self) -> int:
        return len(self._warnings) + len(self._normals) + len(self._conditions)

    def add_event(self, event: KubeEvent) -> None:
        queue = self._warnings if event.type == WARNING else self._normals
        if event in queue:
            queue[event] += 1
            return
        if len(self._warnings) + len(self._normals) >= self._max_pending:
            if self._normals:
                self._normals.popitem(last=False)
            elif queue is self._normals:
                self.dropped += 1
                return
            else:
                self._warnings.popitem(last=False)
            self.dropped += 1
        queue[event] = 1

    def add_condition(self, condition: PodCondition) -> None:
        if self._written_conditions.get(condition.uid) == (condition.reason, condition.message):
            self._conditions.pop(condition.uid, None)
            return
        self._conditions[condition.uid] = condition

    def due(self, now: float) -> list:
        """What may be written now: ``PodCondition`` items and ``(event, count, written)`` tuples where
        ``written`` is ``(name, namespace, count)`` of the event object to update, or ``None``."""
        if self._refilled is not None:
            self._tokens = min(self._burst, self._tokens + (now - self._refilled) * self._qps)
        self._refilled = now
        items: list = []
        while self._tokens >= 1 and (self._warnings or self._conditions or self._normals):
            self._tokens -= 1
            if self._warnings:
                items.append(self._take(self._warnings))
            elif self._conditions:
                _, condition = self._conditions.popitem(last=False)
                _remember(self._written_conditions, condition.uid, (condition.reason, condition.message))
                items.append(condition)
            else:
                items.append(self._take(self._normals))
        return items

    def posted(self, event: KubeEvent, name: str, namespace: str, count: int) -> None:
        """Record that ``event`` exists as object ``namespace/name`` with ``count``."""
        _remember(self._written_events, event, (name, namespace, count))

    def _take(self, queue: OrderedDict[KubeEvent, int]) -> tuple[KubeEvent, int, tuple[str, str, int] | None]:
        event, count = queue.popitem(last=False)
        return event, count, self._written_events.get(event)


def _remember(memory: OrderedDict, key, value) -> None:
    memory[key] = value
    memory.move_to_end(key)
    if len(memory) > _REMEMBERED:
        memory.popitem(last=False)
