"""The shim assembled: context, binder, event recorder and one informer per kind, wired to a core.

``SchedulerService(client, core).start()`` starts the actors in dependency order (context first, the
core outlet before any node actor, the informers last, so no event is told to an actor that is not there yet). ``stop()`` shuts down
gracefully: the context stops taking changes (``Draining``), the informers stop, the binder finishes
the binds it accepted, the recorder writes what the rate allows, and every actor stops (``Stopped``).

Every actor reports a failure to the service's ``supervision`` (given, or its own), which a health check
reads. In plugin mode the binder is an ``AllocationHandoff`` and ``extender`` answers kube-scheduler's
extender calls (served by the REST app).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import pykka

from actors.base import Supervision, tell_if_alive
from actors.shim.binder import Binder
from actors.shim.client import KubeClient
from actors.shim.context import ContextSettings, ShimContext
from actors.shim.corelink import CoreLink
from actors.shim.extender import Extender
from actors.shim.handoff import AllocationHandoff
from actors.shim.informer import Informer, InformerStatus, WatchSettings
from actors.shim.kinds import watched_kinds
from actors.shim.lifecycle import SchedulerState
from actors.shim.messages import (
    Connect,
    Drain,
    InformerStatusRequest,
    Lead,
    RecorderStatsRequest,
    SendMail,
    ShimStateRequest,
    Shutdown,
    Stopped,
)
from actors.shim.outlet import CoreOutlet
from actors.shim.recorder import EventRecorder, RecorderStats
from actors.shim.settings import SettingsApplier
from actors.shim.state import ShimStateSnapshot, StateBoard, recovered
from actors.shim.ticker import Alarms, Ticker
from si.clock import REAL_CLOCK, Clock

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ServiceSettings:
    """``namespace``: where the scheduler's configmaps live. ``bind_workers``: concurrent binds.
    ``event_qps``/``event_burst``: the API write budget of events and pod conditions.
    ``publish_period``: how old the state readers see may be (and how often waiting mail is sent).
    ``node_lost_after``: seconds a node may stay NotReady before its pods are taken out of the scheduler
    (it is lost).
    ``plugin_mode``: kube-scheduler binds YuniKorn's decisions (see ``actors.shim.handoff``).
    ``await_lead``: leader election; the shim lists, watches and recovers into a held core, and runs only
    at ``lead()``."""

    namespace: str = "default"
    bind_workers: int = 16
    event_qps: float = 50.0
    event_burst: int = 300
    publish_period: float = 1.0
    node_lost_after: float = 300.0
    watch: WatchSettings = field(default_factory=WatchSettings)
    plugin_mode: bool = False
    await_lead: bool = False


class SchedulerService:
    """See the module docstring."""

    def __init__(self, client: KubeClient, core: CoreLink, settings: ServiceSettings = ServiceSettings(),
                 supervision: Supervision | None = None, clock: Clock = REAL_CLOCK) -> None:
        self.client = client
        self.clock = clock  # the shim's timers'
        self.core = core
        self.settings = settings
        self.supervision = supervision or Supervision()
        self.board = StateBoard(max_age=settings.publish_period)
        self.context: pykka.ActorRef | None = None
        self.binder: pykka.ActorRef | None = None
        self.recorder: pykka.ActorRef | None = None
        self.outlet: pykka.ActorRef | None = None
        self.alarms: Alarms | None = None
        self.informers: list[pykka.ActorRef] = []
        self.extender: Extender | None = None
        self._mail_sender: Ticker | None = None

    def start(self) -> SchedulerService:
        s, supervisor = self.settings, self.supervision
        applier = SettingsApplier(self.client)
        self.context = ShimContext.start(self.core, self.board, ContextSettings(
            s.namespace, plugin_mode=s.plugin_mode, node_lost_after=s.node_lost_after, apply_settings=applier,
            await_lead=s.await_lead),
            supervisor)
        if s.plugin_mode:
            self.binder = AllocationHandoff.start(self.client, self.context, s.bind_workers, supervisor)
            self.extender = Extender(self.client, self.binder)
        else:
            self.binder = applier.binder = Binder.start(self.client, self.context, s.bind_workers, supervisor)
        self.recorder = EventRecorder.start(self.client, s.event_qps, s.event_burst, supervisor=supervisor)
        self.outlet = applier.outlet = CoreOutlet.start(self.core, supervisor, self.clock)
        self.alarms = Alarms("node-alarms", self.clock)
        self.context.tell(Connect(self.binder, self.recorder, self.outlet, self.alarms))
        self._mail_sender = Ticker(self.context, SendMail(), s.publish_period, "shim-mail-sender", self.clock).start()
        self.informers = [Informer.start(self.client, kind, self.context, s.watch, supervisor)
                          for kind in watched_kinds(s.namespace)]
        return self

    def lead(self) -> None:
        """This scheduler now leads: its core is let go and, once its recovery is done, it runs."""
        tell_if_alive(self.context, Lead())  # a context stopped meanwhile (shutdown) has nothing to lead

    def scheduler_state(self) -> str:
        """``New`` ... ``Running`` (cheap: no views are pictured)."""
        current = self.board.scheduler_state()
        return current[0] if current else SchedulerState.NEW

    def recovered(self) -> bool:
        """Every node recovered: running, or a standby that recovered ahead of leading."""
        current = self.board.scheduler_state()
        return current is not None and recovered(*current)

    def latest_state(self) -> ShimStateSnapshot | None:
        """The last published state; never waits on the shim."""
        return self.board.latest()

    def state(self, timeout: float = 10.0) -> ShimStateSnapshot:
        """A fresh state (asks the context)."""
        return self.context.ask(ShimStateRequest(), timeout=timeout)

    def wait_until(self, state: str, timeout: float) -> bool:
        return self.board.wait_for_state(state, timeout)

    def informer_status(self) -> list[InformerStatus]:
        return [ref.ask(InformerStatusRequest()) for ref in self.informers]

    def recorder_stats(self) -> RecorderStats:
        return self.recorder.ask(RecorderStatsRequest())

    def stop(self, timeout: float = 60.0) -> None:
        """Graceful shutdown (see the module docstring); idempotent."""
        if self.context is None:
            return
        try:
            self.context.ask(Shutdown(), timeout=timeout)
        except pykka.ActorDeadError:
            log.warning("shim context was already gone at shutdown")
        for informer in self.informers:
            informer.stop(timeout=timeout)
        if self._mail_sender is not None:
            self._mail_sender.stop()
        try:
            self.binder.ask(Drain(), timeout=timeout)
        except pykka.ActorDeadError:
            log.warning("binder was already gone at shutdown")
        self.binder.stop(timeout=timeout)
        self.recorder.stop(timeout=timeout)
        try:
            self.context.ask(Stopped(), timeout=timeout)
        except pykka.ActorDeadError:
            pass
        self.context.stop(timeout=timeout)
        self.outlet.stop(timeout=timeout)
        self.alarms.stop()
        self.context = None
        log.info("shim stopped")
