"""Test doubles at the shim's actor boundaries: a core that records the SI requests it receives and an
actor that records every message told to it, plus a deadline-polling wait."""

from __future__ import annotations

import threading
from typing import Any

import pykka

from actors.shim.messages import BindOutcomes
from si import si_pb2
from tests.waiting import wait_for  # noqa: F401 - re-exported for the shim tests


class RecordingCore:
    """A ``CoreLink`` that keeps every request in order; ``refuse_config`` makes config updates fail."""

    def __init__(self, refuse_registration: str = "", refuse_config_with: str = "",
                 accept_applications: bool = True) -> None:
        self._lock = threading.Lock()
        self.requests: list[tuple[str, Any]] = []
        self.callback = None
        self.refuse_config = ""
        self.refuse_registration = refuse_registration
        self.refuse_config_with = refuse_config_with  # a registration whose queues YAML holds this is refused
        self.accept_applications = accept_applications  # answer each new application as accepted
        self.barriers = 0
        self.held = False

    def _record(self, method: str, message: Any) -> None:
        copy = type(message)()
        copy.CopyFrom(message)
        with self._lock:
            self.requests.append((method, copy))

    def register(self, request: si_pb2.RegisterResourceManagerRequest, callback: Any) -> None:
        if self.refuse_registration:
            raise RuntimeError(self.refuse_registration)
        if self.refuse_config_with and self.refuse_config_with in request.config:
            raise ValueError(f"bad configuration: {self.refuse_config_with}")
        self.callback = callback
        self._record("register", request)

    def hold(self, held: bool) -> None:
        self.held = held

    def update_node(self, request: si_pb2.NodeRequest) -> None:
        self._record("node", request)

    def update_application(self, request: si_pb2.ApplicationRequest) -> None:
        """Recorded; every new application is accepted (unless told not to), as the core accepts one it
        can place."""
        self._record("application", request)
        if request.new and self.callback is not None and self.accept_applications:
            self.callback.update_application(si_pb2.ApplicationResponse(accepted=[
                si_pb2.AcceptedApplication(applicationID=app.applicationID) for app in request.new]))

    def update_allocation(self, request: si_pb2.AllocationRequest) -> None:
        self._record("allocation", request)

    def update_configuration(self, request: si_pb2.UpdateConfigurationRequest) -> str | None:
        self._record("configuration", request)
        return self.refuse_config or None

    def barrier(self) -> None:
        with self._lock:
            self.barriers += 1

    def of(self, method: str) -> list[Any]:
        with self._lock:
            return [message for kind, message in self.requests if kind == method]

    def methods(self) -> list[str]:
        with self._lock:
            return [kind for kind, _ in self.requests]

    def allocations(self) -> list[si_pb2.Allocation]:
        return [a for request in self.of("allocation") for a in request.allocations]

    def releases(self) -> list[si_pb2.AllocationRelease]:
        return [r for request in self.of("allocation") for r in request.releases.allocationsToRelease]

    def sequence(self) -> list[tuple]:
        """Every item the core received, in order: ``("node", id, action)``, ``("app", id)``,
        ``("remove-app", id)``, ``("alloc", key, node)`` and ``("release", key)``."""
        items: list[tuple] = []
        with self._lock:
            requests = list(self.requests)
        for method, request in requests:
            if method == "node":
                items += [("node", info.nodeID, info.action) for info in request.nodes]
            elif method == "application":
                items += [("app", a.applicationID) for a in request.new]
                items += [("remove-app", a.applicationID) for a in request.remove]
            elif method == "allocation":
                items += [("alloc", a.allocationKey, a.nodeID) for a in request.allocations]
                items += [("release", r.allocationKey) for r in request.releases.allocationsToRelease]
        return items

    def node_actions(self) -> list[tuple[str, int]]:
        return [(info.nodeID, info.action) for request in self.of("node") for info in request.nodes]


class Inbox(pykka.ThreadingActor):
    """Records every message told to it; ``ask(Inbox.ALL)`` returns them."""

    ALL = "all"

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[Any] = []

    def on_receive(self, message: Any) -> Any:
        if message == Inbox.ALL:
            return list(self.messages)
        self.messages.append(message)
        return None


def inbox_messages(ref: pykka.ActorRef, kind: type | None = None) -> list[Any]:
    """What ``ref`` was told, of ``kind``; the outcomes a binder sends together count one by one."""
    messages = [o for m in ref.ask(Inbox.ALL) for o in (m.outcomes if isinstance(m, BindOutcomes) else (m,))]
    return [m for m in messages if kind is None or isinstance(m, kind)]
