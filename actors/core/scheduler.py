"""The core's actors and the handle the resource manager holds.

``CoreScheduler`` (one actor) registers the resource manager, validates and hot-reloads the
configuration and routes SI requests to one ``PartitionActor`` per partition. A partition actor owns
its :class:`~actors.core.partition.Partition` and schedules in bounded batches, telling itself to
continue so that requests keep being served between batches. Answers go to the resource manager's
callback: one response of each kind per processed message or batch.

:class:`Scheduler` is what callers hold: SI calls in, snapshots and events out.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
import time
from collections import defaultdict

import pykka

from actors.base import Actor, Supervisor, message, tell_if_alive
from actors.core import config as cfg
from actors.core import health
from actors.core import settings as core_settings
from actors.core.accounting import Accounts
from actors.core.buildinfo import core_build_info
from actors.core.config import ConfigError, PartitionConfig
from actors.core.events import EventRing
from actors.core.history import RING_SIZE, SAMPLE_PERIOD, MetricsHistory
from actors.core.ledger import Outbox
from actors.core.messages import (
    AllocationUpdates,
    AppUpdates,
    Barrier,
    CheckHealth,
    Counts,
    CurrentSettings,
    Hold,
    NodeUpdates,
    Reconfigure,
    Register,
    ScheduleCycle,
    TakeSnapshot,
    Tick,
)
from actors.core.partition import Partition, Timing
from actors.core.plugins import NodePredicates, ResourceManagerCallback
from actors.core.readbudget import ReadBudget
from actors.core.settings import CoreSettings, SettingsError, UnsupportedReport, unsupported
from actors.core.snapshot import ALL_AREAS, HEALTH, CoreSnapshot, HealthReport
from actors.core.views import partition_snapshot, running_applications
from si import si_pb2
from si.clock import REAL_CLOCK, Clock, ns
from si.constants import DEFAULT_PARTITION, NODE_ATTR_PARTITION
from si.goduration import parse_duration
from si.history import ClusterSample, HistorySink, QueueSample

log = logging.getLogger(__name__)
HEALTH_INTERVAL_KEY = "health.checkInterval"
DEFAULT_HEALTH_INTERVAL = 30.0  # seconds, as upstream
NEVER = 2**63


@message
class Tuning:
    """Knobs of the scheduling loop (tests shorten the timers)."""

    timing: Timing = Timing()
    batch_allocations: int = 2000
    batch_seconds: float = 0.05


class Changes:
    """What the core's actors publish for any thread to read, never their own state.

    How often each part of the core (a partition by its name, ``CoreScheduler`` as ``""``) changed
    what a snapshot shows: each part is counted by the one actor that owns it; any thread reads
    :meth:`version`, so a snapshot is reused while the version it was taken at is still current.
    ``partitions``: the partition actors the core routes to, a new tuple whenever it starts or stops one
    (whose inboxes the resource manager's handle measures)."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self.partitions: tuple[pykka.ActorRef, ...] = ()

    def bump(self, part: str) -> None:
        self._counts[part] = self._counts.get(part, 0) + 1

    def version(self) -> tuple[tuple[str, int], ...]:
        return tuple(sorted(self._counts.copy().items()))


class PartitionActor(Actor):
    kind = "partition"
    contain_failures = True  # a message that raises is dropped: the partition schedules on

    def __init__(self, config: PartitionConfig, rm_id: str, callback: ResourceManagerCallback, ring: EventRing,
                 predicates: NodePredicates | None, tuning: Tuning, changes: Changes,
                 supervisor: Supervisor | None = None, clock: Clock = REAL_CLOCK,
                 history: HistorySink | None = None) -> None:
        super().__init__(supervisor)
        self.partition = Partition(config, rm_id, predicates, tuning.timing, clock)
        self.changes = changes
        self.history = history
        if history is not None:
            self.partition.history = Accounts()
        self.callback = callback
        self.ring = ring
        self.tuning = tuning
        self.cycle_queued = False
        self.held = False

    def on_NodeUpdates(self, msg: NodeUpdates) -> None:
        self.partition.update_nodes(msg.nodes)
        self._after()

    def on_AppUpdates(self, msg: AppUpdates) -> None:
        self.partition.add_applications(msg.new)
        self.partition.remove_applications(msg.remove)
        self._after()

    def on_AllocationUpdates(self, msg: AllocationUpdates) -> None:
        self.partition.update_allocations(msg.allocations, msg.releases)
        self._after()

    def on_Reconfigure(self, msg: Reconfigure) -> None:
        self.partition.apply_config(msg.config)
        self._after()

    def on_Hold(self, msg: Hold) -> None:
        self.held = msg.held
        self._after()

    def on_Tick(self, msg: Tick) -> None:
        if not self.held:
            self.partition.tick()
        self._after(changed=False)  # a tick that changed what readers see has told someone

    def on_ScheduleCycle(self, msg: ScheduleCycle) -> None:
        self.cycle_queued = False
        if self.held:
            return  # queued before the hold: the cycle runs once it is let go
        try:
            self.partition.schedule(self.tuning.batch_allocations, self.tuning.batch_seconds)
        except Exception:
            # A bug must not stop the partition: it is counted (the "Scheduling errors" health check
            # turns red) and the loop waits for the next change instead of failing again at once.
            log.exception("scheduling cycle of partition %s failed", self.partition.name)
            self.partition.stats.add("errors")
            self.partition.dirty = False
        self._after()

    def on_TakeSnapshot(self, msg: TakeSnapshot):
        began = time.thread_time()
        snapshot = partition_snapshot(self.partition, msg.areas)
        return dataclasses.replace(snapshot, cost=time.thread_time() - began)

    def on_CheckHealth(self, msg: CheckHealth):
        counters = self.partition.stats.counters
        return health.findings(self.partition), counters["errors"], counters["nodes_failed"]

    def on_Counts(self, msg: Counts) -> tuple[int, int]:
        """Running applications and allocations (the history's sample)."""
        partition = self.partition
        return running_applications(partition), sum(len(a.allocations) for a in partition.apps.values())

    def on_Barrier(self, msg: Barrier) -> None:
        return None

    def _after(self, changed: bool = True) -> None:
        out = self.partition.take_outbox()
        if changed or out:
            # Before anyone hears of the change: a reader that follows it sees a new version.
            self.changes.bump(self.partition.name)
        self._flush(out)
        if self.partition.dirty and not self.cycle_queued and not self.held:
            self.cycle_queued = True
            self.actor_ref.tell(ScheduleCycle())

    def _flush(self, out: Outbox) -> None:
        callback = self.callback
        counters = self.partition.stats.counters  # counted per batch: one addition each
        response = out.allocations
        counters["allocated"] += len(response.new)
        counters["rejected"] += len(out.rejected_allocations)
        counters["apps_accepted"] += len(out.accepted_apps)
        counters["apps_rejected"] += len(out.rejected_apps)
        if response.new or out.released or out.rejected_allocations:
            response.released.extend(out.released)
            response.rejectedAllocations.extend(out.rejected_allocations)
            callback.update_allocation(response)
        if out.accepted_apps or out.rejected_apps or out.updated_apps:
            callback.update_application(si_pb2.ApplicationResponse(
                accepted=out.accepted_apps, rejected=out.rejected_apps, updated=out.updated_apps))
        if out.accepted_nodes or out.rejected_nodes:
            callback.update_node(si_pb2.NodeResponse(accepted=out.accepted_nodes, rejected=out.rejected_nodes))
        for state in out.scheduling_states:
            callback.update_container_scheduling_state(state)
        if out.finished:
            self.history(tuple(out.finished))
        if out.events:
            told = self.ring.add(out.events)
            if told:
                callback.send_events(told)


class CoreScheduler(Actor):
    """Registers the resource manager, owns the configuration, routes requests to partitions."""

    kind = "core"

    def __init__(self, ring: EventRing, predicates: NodePredicates | None = None, tuning: Tuning | None = None,
                 supervisor: Supervisor | None = None, changes: Changes | None = None,
                 clock: Clock = REAL_CLOCK, history: HistorySink | None = None) -> None:
        super().__init__(supervisor)
        self.clock = clock
        self.changes = changes or Changes()
        self.ring = ring
        self.history = history
        self.predicates = predicates
        self.tuning = tuning or Tuning()
        self.rm_id = ""
        self.callback: ResourceManagerCallback | None = None
        self.config: cfg.SchedulerConfig | None = None
        self.extra: dict[str, str] = {}
        self.build_info: dict[str, str] = {}
        self.settings = CoreSettings()
        self.unsupported: tuple[str, ...] = ()
        self._unsupported_report = UnsupportedReport()
        self.partitions: dict[str, pykka.ActorRef] = {}
        # What the core counts itself: requests naming a partition it does not have.
        self.counters = {"errors": 0, "failed_nodes": 0}
        self.held = False

    def on_stop(self) -> None:
        self._stop_partitions()

    def _stop_partitions(self) -> None:
        for ref in self.partitions.values():
            ref.stop()
        self.partitions.clear()
        self.changes.partitions = ()

    def on_Hold(self, msg: Hold) -> None:
        """Hold every partition's decisions (see :class:`~actors.core.messages.Hold`), or let them go."""
        self.held = msg.held
        for ref in self.partitions.values():
            tell_if_alive(ref, msg)

    def on_Register(self, msg: Register) -> None:
        request, callback = msg.request, msg.callback
        config = cfg.parse(request.config)  # a bad configuration refuses the registration
        settings = core_settings.parse(request.extraConfig)  # so do bad settings
        if self.partitions:
            log.info("resource manager %s registers again: the core's state is reset", request.rmID)
            self._stop_partitions()
        self.rm_id, self.callback, self.config = request.rmID, callback, config
        self._take_settings(settings, dict(request.extraConfig))
        self.build_info = {**core_build_info(), **request.buildInfo}
        for partition in config.partitions:
            self._start_partition(partition)

    def _start_partition(self, partition: PartitionConfig) -> None:
        self.partitions[partition.name] = ref = PartitionActor.start(
            partition, self.rm_id, self.callback, self.ring, self.predicates, self.tuning, self.changes, self._supervisor,
            self.clock, self.history)
        self.changes.partitions = tuple(self.partitions.values())
        if self.held:
            ref.tell(Hold(True))

    def on_UpdateConfigurationRequest(self, request: si_pb2.UpdateConfigurationRequest) -> str | None:
        """None when applied; otherwise why the configuration was refused (the old one stays)."""
        if self.callback is None:
            return "no resource manager is registered"
        extra = dict(request.extraConfig) or self.extra
        try:
            config = cfg.parse(request.config)
            settings = core_settings.parse(extra)
        except (ConfigError, SettingsError) as error:
            log.warning("configuration refused: %s", error)
            return str(error)
        removed = set(self.partitions) - {p.name for p in config.partitions}
        if removed:
            return f"removing partitions is not supported while they run: {', '.join(sorted(removed))}"
        for partition in config.partitions:
            if partition.name in self.partitions:
                tell_if_alive(self.partitions[partition.name], Reconfigure(partition))
            else:
                self._start_partition(partition)
        self.config = config
        self._take_settings(settings, extra)
        return None

    def _take_settings(self, settings: CoreSettings, extra: dict[str, str]) -> None:
        self.changes.bump("")
        self.extra, self.settings = extra, settings
        self.unsupported = tuple(unsupported(extra))
        self._unsupported_report.report(self.unsupported)
        self.ring.configure(settings.event_tracking, settings.event_ring_capacity, settings.event_request_capacity,
                            settings.event_max_streams, settings.event_max_streams_per_host,
                            settings.event_rest_response_size)

    def on_CurrentSettings(self, msg: CurrentSettings) -> CoreSettings:
        return self.settings

    def _unregistered(self, request) -> bool:
        """Whether ``request`` came before any resource manager registered: nobody to answer, dropped."""
        if self.callback is not None:
            return False
        log.warning("%s before a resource manager registered: dropped", type(request).__name__)
        return True

    def on_NodeRequest(self, request: si_pb2.NodeRequest) -> None:
        if self._unregistered(request):
            return
        grouped = defaultdict(list)
        for node in request.nodes:
            grouped[node.attributes.get(NODE_ATTR_PARTITION) or DEFAULT_PARTITION].append(node)
        for name, nodes in grouped.items():
            ref = self.partitions.get(name)
            if ref is None:
                self.counters["failed_nodes"] += len(nodes)
                self.changes.bump("")
                self.callback.update_node(si_pb2.NodeResponse(rejected=[
                    si_pb2.RejectedNode(nodeID=n.nodeID, reason=f"partition {name} not found") for n in nodes]))
                continue
            tell_if_alive(ref, NodeUpdates(tuple(nodes)))

    def on_ApplicationRequest(self, request: si_pb2.ApplicationRequest) -> None:
        if self._unregistered(request):
            return
        new, remove = defaultdict(list), defaultdict(list)
        for app in request.new:
            new[app.partitionName or DEFAULT_PARTITION].append(app)
        for app in request.remove:
            remove[app.partitionName or DEFAULT_PARTITION].append(app)
        for name in new.keys() | remove.keys():
            ref = self.partitions.get(name)
            if ref is None:
                self.callback.update_application(si_pb2.ApplicationResponse(rejected=[
                    si_pb2.RejectedApplication(applicationID=a.applicationID, reason=f"partition {name} not found")
                    for a in new[name]]))
                continue
            tell_if_alive(ref, AppUpdates(tuple(new[name]), tuple(remove[name])))

    def on_AllocationRequest(self, request: si_pb2.AllocationRequest) -> None:
        if self._unregistered(request):
            return
        allocations, releases = defaultdict(list), defaultdict(list)
        for allocation in request.allocations:
            allocations[allocation.partitionName or DEFAULT_PARTITION].append(allocation)
        for release in request.releases.allocationsToRelease:
            releases[release.partitionName or DEFAULT_PARTITION].append(release)
        for name in allocations.keys() | releases.keys():
            ref = self.partitions.get(name)
            if ref is None:
                self.counters["errors"] += len(allocations[name])
                self.changes.bump("")
                self.callback.update_allocation(si_pb2.AllocationResponse(rejectedAllocations=[
                    si_pb2.RejectedAllocation(allocationKey=a.allocationKey, applicationID=a.applicationID,
                                              reason=f"partition {name} not found") for a in allocations[name]]))
                continue
            tell_if_alive(ref, AllocationUpdates(tuple(allocations[name]), tuple(releases[name])))

    def on_Tick(self, msg: Tick) -> None:
        for ref in self.partitions.values():
            tell_if_alive(ref, msg)

    def on_Barrier(self, msg: Barrier) -> None:
        for future in [ref.ask(msg, block=False) for ref in self.partitions.values()]:
            future.get()

    def on_TakeSnapshot(self, msg: TakeSnapshot) -> CoreSnapshot:
        areas = msg.areas
        futures = [ref.ask(msg, block=False) for ref in self.partitions.values()]
        partitions = tuple(f.get() for f in futures)
        report = None
        if HEALTH in areas:
            report = health.report((p.health_findings for p in partitions),
                                   self.counters["errors"] + sum(p.stats.counters["errors"] for p in partitions),
                                   self.counters["failed_nodes"]
                                   + sum(p.stats.counters["nodes_failed"] for p in partitions))
        config = self.config
        return CoreSnapshot(self.clock.now_ns(), self.rm_id, partitions, config.text if config else "",
                            config.checksum if config else "", dict(self.extra), report, areas,
                            dict(self.build_info), dict(self.counters), self.unsupported)

    def on_CheckHealth(self, msg: CheckHealth) -> HealthReport | None:
        """Run the health checks now (None while no resource manager is registered)."""
        if not self.partitions:
            return None
        futures = [ref.ask(msg, block=False) for ref in self.partitions.values()]
        results = [f.get() for f in futures]
        return health.report((r[0] for r in results), self.counters["errors"] + sum(r[1] for r in results),
                             self.counters["failed_nodes"] + sum(r[2] for r in results))

    def on_Counts(self, msg: Counts) -> tuple[int, int] | None:
        """Running applications and allocations over all partitions (None while none run)."""
        if not self.partitions:
            return None
        futures = [ref.ask(msg, block=False) for ref in self.partitions.values()]
        results = [f.get() for f in futures]
        return sum(r[0] for r in results), sum(r[1] for r in results)


def health_interval(extra: dict[str, str]) -> float:
    """``health.checkInterval`` in seconds, as upstream reads it: a Go duration, 30s when absent or
    malformed, 0 (periodic checks off) when zero or negative."""
    text = (extra.get(HEALTH_INTERVAL_KEY) or "").strip()
    if not text:
        return DEFAULT_HEALTH_INTERVAL
    try:
        seconds = parse_duration(text)
    except ValueError:
        log.warning("%s: %r is not a duration such as 30s; using %ss", HEALTH_INTERVAL_KEY, text,
                    DEFAULT_HEALTH_INTERVAL)
        return DEFAULT_HEALTH_INTERVAL
    return max(seconds, 0.0)


class _SnapshotRound:
    """Readers sharing one snapshot: the areas all of them read, and what the core answered."""

    __slots__ = ("areas", "readers", "urgent", "done", "snapshot", "error")

    def __init__(self) -> None:
        self.areas: frozenset[str] = frozenset()
        self.readers = 0
        self.urgent = False  # a reader that must not wait for the readers' budget joined
        self.done = False
        self.snapshot: CoreSnapshot | None = None
        self.error: BaseException | None = None


class Scheduler:
    """The core as the resource manager (and REST) use it: SI requests in, snapshots and events out.

    Requests are ``tell``s (they return at once); ``register``, ``update_configuration``, ``barrier`` and
    ``snapshot`` wait for the core's answer. The core's actors report failures to ``supervisor``.
    Snapshots of a changed core are taken within ``read_budget``, a share of the core's time
    (:mod:`actors.core.readbudget`, 5% unless given).

    A housekeeping thread drives the core's timers every ``service.schedulingInterval`` of the extra
    configuration (``tick_interval`` when it sets none), samples the web UI's history every
    ``history_period`` (upstream: a minute, 1,440 samples kept) and runs the health checks every
    ``health.checkInterval`` (upstream's 30 s by default; 0 or less: only on demand). ``last_health`` is
    the latest periodic report.

    At most ``service.eventChannelCapacity`` requests wait in the core's actors: a request arriving
    when they are full waits for room, up to ``service.dispatchTimeout``, and is then dropped with an
    error (upstream's dispatcher does the same with its event channel).
    """

    def __init__(self, predicates: NodePredicates | None = None, tuning: Tuning | None = None,
                 tick_interval: float = 1.0, event_capacity: int = 100_000, history_period: float = SAMPLE_PERIOD,
                 history_size: int = RING_SIZE, supervisor: Supervisor | None = None,
                 clock: Clock = REAL_CLOCK, history_store: HistorySink | None = None,
                 read_budget: ReadBudget | None = None) -> None:
        self.clock = clock
        self.events = EventRing(capacity=event_capacity)
        self._changes = Changes()
        self._core = CoreScheduler.start(self.events, predicates, tuning or Tuning(), supervisor, self._changes,
                                         clock, history_store)
        self.history_store = history_store  # finished applications and the samples go there, if set
        self.settings = CoreSettings()
        self.dropped_requests = 0
        self.history = MetricsHistory(history_size)
        self.last_health: HealthReport | None = None
        self.health_interval = DEFAULT_HEALTH_INTERVAL
        self._health_due = NEVER  # clock.monotonic_ns() of the next periodic check (none before registration)
        self._history_period = history_period
        self._tick_interval = self._default_tick = tick_interval
        self._tick_due = clock.monotonic_ns() + ns(tick_interval)
        self._sample_due = clock.monotonic_ns() + ns(history_period)
        self._stopped = threading.Event()
        self._housekeeper = clock.every(lambda: min(self._tick_interval, self._default_tick), self._housekeeping,
                                        "core-ticker")
        self._snapshots: dict[frozenset[str], tuple[tuple, CoreSnapshot]] = {}  # areas -> (version, snapshot)
        self._told = itertools.count(1)
        self._last_told = 0  # the number of the request told last
        self._snapshot_turn = threading.Condition()
        self._taking = False  # a reader is taking a snapshot for its round
        self._next_snapshot: _SnapshotRound | None = None  # the round readers arriving now join
        self.read_budget = read_budget or ReadBudget()
        self.read_seconds = 0.0  # the core's CPU its snapshots took, in all

    def _housekeeping(self) -> bool:
        """One round of the core's timers; False ends them (the core is gone)."""
        try:
            now = self.clock.monotonic_ns()
            if now >= self._tick_due:
                self._tick_due = now + ns(self._tick_interval)
                self._core.tell(Tick())
            if now >= self._sample_due:
                self._sample_due = now + ns(self._history_period)
                counts = self._core.ask(Counts())
                if counts is not None:
                    self.history.store(*counts, timestamp=self.clock.now_ns())
                    if self.history_store is not None:
                        self.history_store(self._samples(*counts))
            if self.health_interval > 0 and now >= self._health_due:
                self.check_health()
        except pykka.ActorDeadError:
            return False
        except Exception:  # the timers must keep running whatever one round met
            log.exception("core housekeeping failed")
        return True

    def _samples(self, applications: int, containers: int) -> tuple:
        """The history store's sample: the cluster's counts and every queue's usage."""
        now = self.clock.now_ns()
        samples: list = [ClusterSample(now, applications, containers)]
        for partition in self.snapshot(frozenset(), budgeted=False).partitions:  # the timers' thread: no wait
            pending = [partition.root_queue]
            while pending:
                queue = pending.pop()
                samples.append(QueueSample(now, partition.name, queue.queue_name,
                                           queue.allocated_resource.as_dict(), queue.running_apps))
                pending.extend(queue.children)
        return tuple(samples)

    def check_health(self) -> HealthReport | None:
        """Run the health checks now; the report becomes ``last_health`` (None before registration)."""
        report = self._core.ask(CheckHealth())
        if report is None:
            return None
        self._health_due = self.clock.monotonic_ns() + ns(self.health_interval)
        self.last_health = report
        for check in report.checks:
            if not check.succeeded:
                log.warning("scheduler is not healthy: %s (%s): %s", check.name, check.description,
                            check.diagnosis_message)
        return report

    def _configure(self, extra, registering: bool = False) -> None:
        if not extra and not registering:
            return  # the core keeps the extra configuration it has
        self.settings = self._core.ask(CurrentSettings())
        tick = self.settings.scheduling_interval if core_settings.SCHEDULING_INTERVAL in extra else self._default_tick
        if tick != self._tick_interval:
            log.info("core timers every %ss", tick)
            self._tick_interval = tick
            self._tick_due = self.clock.monotonic_ns() + ns(tick)
        interval = health_interval(dict(extra))
        if interval != self.health_interval:
            log.info("periodic health checks %s", f"every {interval}s" if interval > 0 else "disabled")
            self.health_interval = interval
            self._health_due = self.clock.monotonic_ns() + ns(interval)

    def stop(self) -> None:
        self._stopped.set()
        self._housekeeper.stop()
        try:
            self._core.stop()
        except pykka.ActorDeadError:
            pass

    # The SI.
    def register(self, request: si_pb2.RegisterResourceManagerRequest, callback: ResourceManagerCallback) -> None:
        self._core.ask(Register(request, callback))
        self._configure(request.extraConfig, registering=True)
        if self.health_interval > 0:
            self.check_health()  # as upstream, the first check runs when the checker starts

    def update_node(self, request: si_pb2.NodeRequest) -> None:
        self._tell(request)

    def update_application(self, request: si_pb2.ApplicationRequest) -> None:
        self._tell(request)

    def update_allocation(self, request: si_pb2.AllocationRequest) -> None:
        self._tell(request)

    def _tell(self, request) -> None:
        if self._admit(request):
            self._core.tell(request)
            # Numbered once told: a snapshot read from here on is not one taken before the core had it.
            self._last_told = next(self._told)

    def _backlog(self) -> int:
        """Requests and batches waiting in the core's actors."""
        refs = (self._core, *self._changes.partitions)
        return sum(ref.actor_inbox.qsize() for ref in refs)

    def _admit(self, request) -> bool:
        """Whether there is room for ``request`` within the dispatch timeout (see the class docstring)."""
        capacity = self.settings.event_channel_capacity
        if self._backlog() < capacity:
            return True
        # Real time, whatever the clock: the wait is for the core's threads to drain their inboxes.
        deadline = time.monotonic() + self.settings.dispatch_timeout
        while time.monotonic() < deadline:
            if self._stopped.wait(0.005):
                return False
            if self._backlog() < capacity:
                return True
        self.dropped_requests += 1
        log.error("the core's %d waiting requests reached service.eventChannelCapacity for "
                  "service.dispatchTimeout (%ss): %s dropped", capacity, self.settings.dispatch_timeout,
                  type(request).__name__)
        return False

    def update_configuration(self, request: si_pb2.UpdateConfigurationRequest) -> str | None:
        refused = self._core.ask(request)
        if refused is None:
            self._configure(request.extraConfig)
        return refused

    def hold(self, held: bool) -> None:
        """``True``: the core books what it is told but decides nothing (no allocation, preemption or
        timeout) until ``hold(False)``; a warm standby keeps its core so. Returns once every partition
        has been told."""
        self._core.ask(Hold(held))

    def barrier(self) -> None:
        """Return once every request sent before has been processed (and its answers sent)."""
        self._core.ask(Barrier())

    def settle(self) -> None:
        """Return once the core is idle: every request sent before processed and no scheduling cycle
        pending (what a simulation waits for before it moves the core's virtual clock on)."""
        while True:
            version = self._changes.version()
            self.barrier()
            if self._changes.version() == version and not self._backlog():
                return

    # Readers.
    def snapshot(self, areas: frozenset[str] = ALL_AREAS, budgeted: bool = True) -> CoreSnapshot:
        """The core as it is now, holding at least the optional ``areas`` (see :mod:`actors.core.snapshot`):
        a reader of queues alone does not make the core picture every node and application. A snapshot
        taken since the core last changed is shared; otherwise one is taken between scheduling batches,
        once the readers' budget allows (:mod:`actors.core.readbudget`; not ``budgeted``: at once)."""
        with self._snapshot_turn:
            version = self._snapshot_version()
            current = [s for v, s in self._snapshots.values() if v == version and areas <= s.areas]
            if current:
                return max(current, key=lambda s: s.taken_at)
            # Readers arriving while a snapshot is being taken share the next one: it is asked for after
            # all of them arrived, so it shows every change they followed, and a burst of polls costs one.
            if self._next_snapshot is None:
                self._next_snapshot = _SnapshotRound()
            turn = self._next_snapshot
            turn.areas |= areas
            turn.readers += 1
            if not budgeted:
                turn.urgent = True
                self._snapshot_turn.notify_all()  # a reader waiting for the budget takes it now
            while not turn.done:
                if self._taking or self._next_snapshot is not turn:
                    self._snapshot_turn.wait()
                    continue
                delay = 0.0 if turn.urgent else self.read_budget.wait()
                if delay > 0:  # readers arriving meanwhile join this round
                    self._snapshot_turn.wait(delay)
                    continue
                self._taking, self._next_snapshot = True, None
                version = self._snapshot_version()  # before taking: a change meanwhile makes the next read retake
                self._snapshot_turn.release()
                try:
                    turn.snapshot = self._core.ask(TakeSnapshot(turn.areas))
                except BaseException as error:
                    turn.error = error
                    raise
                finally:
                    self._snapshot_turn.acquire()
                    self._taking, turn.done = False, True
                    self._snapshot_turn.notify_all()
                self._snapshots[turn.areas] = (version, turn.snapshot)
                cost = sum(p.cost for p in turn.snapshot.partitions)
                self.read_budget.spend(cost)
                self.read_seconds += cost
            if turn.error is not None:
                raise turn.error
            return turn.snapshot

    def _snapshot_version(self) -> tuple:
        """What a kept snapshot must have been taken at to be current: the core's changes, and the last
        request told to it (which may still wait in its inbox, unseen by the version its actors count)."""
        return self._last_told, self._changes.version()

    @staticmethod
    def validate(text: str) -> str | None:
        """None when ``text`` is a valid queues configuration, else the reason it is not."""
        try:
            cfg.validate(text)
        except ConfigError as error:
            return str(error)
        return None
