"""Plumbing of the shim context's routing: mail collected per actor and sent in one go, and the core's
answers cut into the parts each application is told.

The context decides who is told what; ``Mail`` keeps the order it must arrive in (each application's
task updates, then the stops of applications whose last pod went, then each node's messages, pod
messages of one kind joined), and the ``split_*`` functions group SI answers by application id.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pykka

from actors.base import tell_if_alive
from actors.shim.messages import CoreEvents, PodsLeft, PodsOnNode, TaskUpdate, TaskUpdates
from si import si_pb2

STOP_WAIT = 30.0  # seconds an application id seen again waits for its ended actor to stop
STOPPING_KEPT = 256  # stops remembered before the finished ones are forgotten


class Mail:
    """Messages for application and node actors, collected while the context's inbox is busy."""

    def __init__(self) -> None:
        self._apps: dict[str, tuple[pykka.ActorRef, list[TaskUpdate]]] = {}  # by actor urn
        self._ended: dict[str, pykka.ActorRef] = {}  # by application id
        self._stopping: dict[str, pykka.Future] = {}  # by application id: stops sent, maybe not done
        self._nodes_stopping: dict[str, pykka.Future] = {}  # by actor urn: likewise, of node actors
        self._nodes: dict[str, list[Any]] = {}
        self._count = 0  # messages collected (read after every message the context handles)

    def __len__(self) -> int:
        return self._count

    def to_app(self, ref: pykka.ActorRef, update: TaskUpdate) -> None:
        mail = self._apps.get(ref.actor_urn)
        if mail is None:  # not a ``setdefault``: its default would be made for every pod
            mail = self._apps[ref.actor_urn] = (ref, [])
        mail[1].append(update)
        self._count += 1

    def end_app(self, app_id: str, ref: pykka.ActorRef) -> None:
        """Stop the application's actor once it has its last updates."""
        self._ended[app_id] = ref

    def wait_stopped(self, app_id: str, node_actors: dict[str, pykka.ActorRef]) -> None:
        """Send what waits, then return once the ended actor of ``app_id`` has stopped: whatever it
        still sends the core (its removal) is then sent before anything a new actor of that id sends."""
        if app_id in self._ended:
            self.send(node_actors)
        stopping = self._stopping.pop(app_id, None)
        if stopping is not None:
            stopping.get(timeout=STOP_WAIT)

    def stop_node(self, ref: pykka.ActorRef) -> None:
        """Stop a node actor that has nothing left to watch (it has had all its messages)."""
        self._nodes_stopping[ref.actor_urn] = ref.stop(block=False)
        if len(self._nodes_stopping) > STOPPING_KEPT:
            self._nodes_stopping = {urn: f for urn, f in self._nodes_stopping.items() if not _done(f)}

    def stop_ended(self) -> list[pykka.Future]:
        """Stop the ended application actors not stopped yet; return the stops of every ended application
        actor and gone node actor, maybe not done: the context waits for them as it stops, so that no
        actor it started outlives it."""
        for app_id, ref in self._ended.items():
            self._stopping[app_id] = ref.stop(block=False)
        self._ended = {}
        return [*self._stopping.values(), *self._nodes_stopping.values()]

    def to_node(self, name: str, message: Any) -> None:
        self._nodes.setdefault(name, []).append(message)
        self._count += 1

    def send(self, node_actors: dict[str, pykka.ActorRef]) -> None:
        """Applications first: a node reporting a pod of ours needs its application in the core."""
        for ref, updates in self._apps.values():
            tell_if_alive(ref, TaskUpdates(tuple(updates)))  # one stopped by a failure is the supervisor's
        for app_id, ref in self._ended.items():  # queued behind their last updates
            self._stopping[app_id] = ref.stop(block=False)
        if len(self._stopping) > STOPPING_KEPT:
            self._stopping = {app_id: f for app_id, f in self._stopping.items() if not _done(f)}
        for name, mail in self._nodes.items():
            ref = node_actors.get(name)
            if ref is not None:
                for message in _joined(mail):
                    tell_if_alive(ref, message)
        self._apps, self._ended, self._nodes, self._count = {}, {}, {}, 0


def _done(future: pykka.Future) -> bool:
    try:
        future.get(timeout=0)
    except pykka.Timeout:
        return False
    return True


def _joined(mail: list[Any]) -> list[Any]:
    """A node's messages of one step, consecutive pod messages of one kind joined into one."""
    joined: list[Any] = []
    for message in mail:
        last = joined[-1] if joined else None
        if isinstance(message, PodsOnNode) and isinstance(last, PodsOnNode):
            joined[-1] = PodsOnNode(last.pods + message.pods)
        elif isinstance(message, PodsLeft) and isinstance(last, PodsLeft):
            joined[-1] = PodsLeft(last.pods + message.pods)
        else:
            joined.append(message)
    return joined


def split_allocations(response: si_pb2.AllocationResponse) -> dict[str, si_pb2.AllocationResponse]:
    parts: dict[str, si_pb2.AllocationResponse] = defaultdict(si_pb2.AllocationResponse)
    for allocation in response.new:
        parts[allocation.applicationID].new.append(allocation)
    for release in response.released:
        parts[release.applicationID].released.append(release)
    for rejected in response.rejectedAllocations:
        parts[rejected.applicationID].rejectedAllocations.append(rejected)
    return parts


def split_applications(response: si_pb2.ApplicationResponse) -> dict[str, si_pb2.ApplicationResponse]:
    parts: dict[str, si_pb2.ApplicationResponse] = defaultdict(si_pb2.ApplicationResponse)
    for accepted in response.accepted:
        parts[accepted.applicationID].accepted.append(accepted)
    for rejected in response.rejected:
        parts[rejected.applicationID].rejected.append(rejected)
    for updated in response.updated:
        parts[updated.applicationID].updated.append(updated)
    return parts


def split_request_events(events: CoreEvents) -> dict[str, CoreEvents]:
    """The core's events about asks (other than their allocation), by the application they concern."""
    parts: dict[str, list[si_pb2.EventRecord]] = defaultdict(list)
    for record in events.events:
        if record.type == si_pb2.EventRecord.REQUEST and record.eventChangeDetail != si_pb2.EventRecord.REQUEST_ALLOC:
            parts[record.referenceID].append(record)
    return {app_id: CoreEvents(tuple(records)) for app_id, records in parts.items()}

