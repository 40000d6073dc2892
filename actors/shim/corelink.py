"""The shim's two ends of the SI: ``CoreLink`` (what the shim calls on the core) and ``ShimCallback``
(the core's RM callback, which only tells the shim context).

The shim never reaches into core objects: every call carries an SI protobuf message, and every answer
comes back as one through the callback.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

import pykka

from actors.base import tell_if_alive
from actors.shim.messages import CoreEvents
from si import si_pb2

log = logging.getLogger(__name__)


class CoreLink(Protocol):
    """What the shim needs of the scheduler core."""

    def register(self, request: si_pb2.RegisterResourceManagerRequest, callback: ShimCallback) -> None:
        """Register the resource manager (raises on refusal)."""

    def update_node(self, request: si_pb2.NodeRequest) -> None: ...

    def update_application(self, request: si_pb2.ApplicationRequest) -> None: ...

    def update_allocation(self, request: si_pb2.AllocationRequest) -> None: ...

    def update_configuration(self, request: si_pb2.UpdateConfigurationRequest) -> str | None:
        """``None`` when the configuration was applied, else why it was refused."""

    def barrier(self) -> None:
        """Return once the core has processed every request sent before."""

    def hold(self, held: bool) -> None:
        """Let the core book what it is told but decide nothing until ``hold(False)``."""



class ShimCallback:
    """The core's ``ResourceManagerCallback``: forwards each SI message to the shim context by ``tell``,
    so the core's threads never wait on the shim."""

    def __init__(self, context: pykka.ActorRef) -> None:
        self._context = context

    def _tell(self, message: object) -> None:
        tell_if_alive(self._context, message)

    def update_allocation(self, response: si_pb2.AllocationResponse) -> None:
        self._tell(response)

    def update_application(self, response: si_pb2.ApplicationResponse) -> None:
        self._tell(response)

    def update_node(self, response: si_pb2.NodeResponse) -> None:
        self._tell(response)

    def send_events(self, events: Sequence[si_pb2.EventRecord]) -> None:
        self._tell(CoreEvents(tuple(events)))

    def update_container_scheduling_state(self, request: si_pb2.UpdateContainerSchedulingStateRequest) -> None:
        self._tell(request)
