"""The event recorder: Kubernetes-visible feedback on pods, nodes and configmaps, without flooding.

Events (``KubeEvent``) and pod conditions (``PodCondition``), alone or several in a ``Feedback``,
are told to the recorder, which keeps
them in an ``EventBuffer`` (``eventbuffer``) and writes at most ``qps`` per second (bursts up to
``burst``) on a timer. Identical events aggregate into one with a count, an event already written
is updated (count and last timestamp) instead of duplicated, and when too much is pending the oldest
``Normal`` events are dropped before any ``Warning``.
"""

from __future__ import annotations

import logging
import socket
import time
from datetime import UTC, datetime

from actors.base import Actor, Supervisor, record
from actors.shim.client import CONNECTION_ERRORS, MERGE_PATCH, STRATEGIC_MERGE_PATCH, ApiError, KubeClient
from actors.shim.eventbuffer import EventBuffer
from actors.shim.fence import Fenced
from actors.shim.messages import Feedback, Flush, KubeEvent, PodCondition, RecorderStatsRequest
from actors.shim.ticker import Ticker

log = logging.getLogger(__name__)
COMPONENT = "yunikorn"




@record
class RecorderStats:
    written: int
    updated: int
    dropped: int
    pending: int
    failed: int


class EventRecorder(Actor):
    """See the module docstring."""

    kind = "recorder"
    use_daemon_thread = False

    def __init__(self, client: KubeClient, qps: float = 50.0, burst: int = 300, max_pending: int = 10000,
                 interval: float = 0.2, default_namespace: str = "default", supervisor: Supervisor | None = None
                 ) -> None:
        super().__init__(supervisor)
        self._client = client
        self._buffer = EventBuffer(qps, burst, max_pending)
        self._interval = interval
        self._default_namespace = default_namespace
        self._instance = socket.gethostname()
        self._ticker: Ticker | None = None
        self._written = self._updated = self._failed = 0

    def on_start(self) -> None:
        self._ticker = Ticker(self.actor_ref, Flush(), self._interval, "event-recorder-timer").start()

    def on_stop(self) -> None:
        self._ticker.stop()
        self._flush()

    def on_Feedback(self, message: Feedback) -> None:
        for item in message.items:
            self._add(item)

    def on_KubeEvent(self, message: KubeEvent) -> None:
        self._add(message)

    def on_PodCondition(self, message: PodCondition) -> None:
        self._add(message)

    def on_Flush(self, message: Flush) -> None:
        self._flush()

    def on_RecorderStatsRequest(self, message: RecorderStatsRequest) -> RecorderStats:
        return RecorderStats(self._written, self._updated, self._buffer.dropped, self._buffer.pending,
                             self._failed)

    def _add(self, item: KubeEvent | PodCondition) -> None:
        if isinstance(item, KubeEvent):
            self._buffer.add_event(item)
        else:
            self._buffer.add_condition(item)

    def _flush(self) -> None:
        for item in self._buffer.due(time.monotonic()):
            try:
                if isinstance(item, PodCondition):
                    self._write_condition(item)
                else:
                    self._write_event(*item)
            except (ApiError, *CONNECTION_ERRORS, OSError, Fenced) as error:
                self._failed += 1
                log.debug("event write failed: %s", error)

    def _write_event(self, event: KubeEvent, count: int, posted: tuple[str, str, int] | None) -> None:
        now = _now()
        namespace = event.namespace or self._default_namespace
        if posted is not None:
            name, namespace, total = posted
            try:
                self._client.request("PATCH", f"/api/v1/namespaces/{namespace}/events/{name}",
                                     body={"count": total + count, "lastTimestamp": now}, content_type=MERGE_PATCH)
                self._buffer.posted(event, name, namespace, total + count)
                self._updated += 1
                return
            except ApiError as error:
                if error.status != 404:
                    raise
        name = f"{event.name}.{time.time_ns():x}"
        body = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {"apiVersion": "v1", "kind": event.kind, "namespace": event.namespace,
                               "name": event.name, "uid": event.uid},
            "type": event.type, "reason": event.reason, "message": event.message, "count": count,
            "firstTimestamp": now, "lastTimestamp": now,
            "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
            "reportingInstance": self._instance,
        }
        self._client.request("POST", f"/api/v1/namespaces/{namespace}/events", body=body)
        self._buffer.posted(event, name, namespace, count)
        self._written += 1

    def _write_condition(self, condition: PodCondition) -> None:
        patch = {"status": {"conditions": [{
            "type": "PodScheduled", "status": "False", "reason": condition.reason,
            "message": condition.message, "lastTransitionTime": _now()}]}}
        try:
            self._client.request("PATCH", f"/api/v1/namespaces/{condition.namespace}/pods/{condition.name}/status",
                                 body=patch, content_type=STRATEGIC_MERGE_PATCH)
            self._written += 1
        except ApiError as error:
            if error.status != 404:  # the pod is gone: nothing to tell it
                raise


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
