"""The simulated resource manager: the real core's partition on a virtual clock, fed by a trace.

Each pod of the trace is an ask; when the core allocates it, it starts at once and ends ``duration``
seconds later (its allocation is released). A preemption victim leaves ``grace`` seconds after the
core chose it, and is submitted again (as a Job's controller would recreate it), to wait anew. A gang
gets its placeholders as the shim makes them (``minMember`` per task group, the application's
placeholder ask, timeout and style); a placeholder the core gives up is gone at once, and the real pod
waiting for it takes its place. The core's timers (completing, gang timeouts, reservations, backoff,
preemption delay) tick every ``service.schedulingInterval`` of simulated time.

Everything runs in one thread, events in time order (ties: the order they were scheduled), so a run is
a function of its inputs and seed.
"""

from __future__ import annotations

import heapq
import itertools
import random
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from actors.core import application as states
from actors.core.config import PartitionConfig
from actors.core.partition import Partition, Timing
from si import si_pb2
from si.clock import VIRTUAL_EPOCH_NS, VirtualClock
from si.constants import DEFAULT_PARTITION
from si.resources import Resource
from simulate import predicates
from simulate.inputs import Cluster, TraceApp

NS = 1_000_000_000
E = si_pb2.EventRecord
SUBMIT, END, GONE, PLACEHOLDER_GONE, TICK, SAMPLE = range(6)
RECURRING = (TICK, SAMPLE)
RM_ID = "simulator"
PREEMPTED, REPLACED, TIMED_OUT, STOPPED = (si_pb2.PREEMPTED_BY_SCHEDULER, si_pb2.PLACEHOLDER_REPLACED,
                                           si_pb2.TIMEOUT, si_pb2.STOPPED_BY_RM)


class Pod:
    """One pod (or placeholder) of the trace, as the simulated resource manager tracks it."""

    __slots__ = ("key", "app", "queue", "user", "resource", "duration", "priority", "grace", "placeholder",
                 "task_group", "submit", "start", "end", "node", "preempted", "reason", "attempt", "failed", "tags")

    def __init__(self, key, app, queue, user, resource, duration, priority, grace, placeholder, task_group, submit,
                 attempt=0) -> None:
        self.key, self.app, self.queue, self.user = key, app, queue, user
        self.resource, self.duration, self.priority, self.grace = resource, duration, priority, grace
        self.placeholder, self.task_group, self.submit, self.attempt = placeholder, task_group, submit, attempt
        self.start: float | None = None
        self.end: float | None = None
        self.node = ""
        self.preempted = False
        self.reason = ""
        self.failed = False
        self.tags: dict[str, str] = {}  # its constraints, as the ask carries them

    @property
    def wait(self) -> float | None:
        return None if self.start is None else self.start - self.submit


@dataclass
class Preemption:
    time: float
    victim: str
    victim_app: str
    victim_queue: str
    victim_user: str
    message: str  # the core's, naming the preemptor: "preempted by <ask> of application <app> in queue <queue>"

    @property
    def preemptor_queue(self) -> str:
        _, found, queue = self.message.rpartition(" in queue ")
        return queue if found else ""


@dataclass
class Gang:
    app: str
    queue: str
    user: str
    submit: float
    style: str
    running: float | None = None  # when it got all its room (Running), or None
    timed_out: float | None = None


@dataclass
class Outcome:
    """What a run observed: the pods, the core's decisions and the usage over time."""

    total: Resource
    nodes: int
    pods: list[Pod] = field(default_factory=list)
    preemptions: list[Preemption] = field(default_factory=list)
    gangs: dict[str, Gang] = field(default_factory=dict)
    reservations: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # queue -> made
    rejected_apps: dict[str, str] = field(default_factory=dict)
    samples: list[tuple[float, dict[str, tuple[int, int, int, int]]]] = field(default_factory=list)
    queue_limits: dict[str, tuple[dict, dict]] = field(default_factory=dict)  # path -> (guaranteed, max)
    placements: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # queue -> pod keys
    used_area: dict[str, float] = field(default_factory=lambda: defaultdict(float))  # resource -> amount x s
    makespan: float = 0.0
    simulated: float = 0.0
    wall: float = 0.0
    events: int = 0


@dataclass(frozen=True)
class Settings:
    tick: float = 1.0  # the core's timers (service.schedulingInterval)
    sample: float = 0.0  # usage sampling period; 0: about 300 samples over the trace
    seed: int = 0
    timing: Timing = Timing(retention=60.0)  # terminated applications need not linger in a simulation


class Simulation:
    def __init__(self, config: PartitionConfig, cluster: Cluster, trace: list[TraceApp],
                 settings: Settings = Settings(), progress: Callable[[float, float], None] | None = None) -> None:
        self.clock = VirtualClock()
        self.partition = Partition(config, RM_ID, predicates.SimPredicates(), settings.timing, self.clock)
        self.settings = settings
        self.trace = _ordered(trace, settings.seed)
        self.cluster = cluster
        self.progress = progress
        self.pods: dict[str, Pod] = {}
        self.apps: dict[str, list[Pod]] = {}
        self._heap: list = []
        self._sequence = itertools.count()
        self._live = 0  # events that are not timers: the run ends when none is left and nothing can start
        self.now = 0.0
        self.used: dict[str, int] = defaultdict(int)
        self._used_since = 0.0
        self.outcome = Outcome(Resource(), cluster.node_count)
        self._asks: list[si_pb2.Allocation] = []
        self._held: dict[str, list[tuple[Pod, dict[str, str]]]] = {}  # a reserving gang's real pods
        self._releases: list[si_pb2.AllocationRelease] = []
        self._new_apps: list[si_pb2.AddApplicationRequest] = []
        self._last_progress = 0.0
        self._answered, self._done_at, self._all_settled = 0, -1, False
        self._drain = max([a.placeholder_timeout for a in trace if a.task_groups] + [0.0]) + 120.0
        self.horizon = max((a.submit + max(p.duration for p in a.pods) for a in trace), default=1.0) or 1.0

    # The run.
    def run(self) -> Outcome:
        began = time.perf_counter()
        self._add_nodes()
        for app in self.trace:
            self._push(app.submit, SUBMIT, app)
        sample = self.settings.sample or max(1.0, round(self.horizon / 300))
        self._push(0.0, SAMPLE, sample)
        self._push(self.settings.tick, TICK, None)
        heap, partition = self._heap, self.partition
        while heap:
            due = heap[0][0]
            if not self._live and (self._done() or due / NS - self._last_progress > self._drain):
                break
            self._advance(due)
            while heap and heap[0][0] == due:
                _, _, kind, payload = heapq.heappop(heap)
                self.outcome.events += 1
                if kind not in RECURRING:
                    self._live -= 1
                self._handle(kind, payload)
            self._flush()
            guard = 0
            # Each pass places all it can; what it decided may free more, or let a gang's real pods ask.
            while (partition.dirty or self._asks or self._releases) and guard < 1000:
                self._flush()
                partition.schedule(1_000_000, 1e9)
                self._answers()
                guard += 1
            if self.progress is not None:
                self.progress(self.now, self.horizon)
        self._account_usage()
        for pod in self.pods.values():
            if pod.start is None and not pod.reason:
                pod.reason = "never tried: the run ended first"
        outcome = self.outcome
        outcome.pods = list(self.pods.values())
        outcome.simulated = self.now
        outcome.makespan = max((p.end for p in outcome.pods if p.end is not None and not p.placeholder), default=0.0)
        outcome.wall = time.perf_counter() - began
        for path, queue in partition.queues.by_path.items():
            outcome.queue_limits[path] = (dict(queue.guaranteed or {}), dict(queue.max or {}))
        return outcome

    def _done(self) -> bool:
        """Whether every pod has started or failed (checked again only after the core answered something)."""
        if self._done_at != self._answered:
            self._done_at = self._answered
            self._all_settled = all(p.start is not None or p.failed for p in self.pods.values() if p.end is None)
        return self._all_settled

    def _push(self, at: float, kind: int, payload) -> None:
        heapq.heappush(self._heap, (round(at * NS), next(self._sequence), kind, payload))
        if kind not in RECURRING:
            self._live += 1

    def _advance(self, due_ns: int) -> None:
        target = due_ns / NS
        if target > self.now:
            self._account_usage(target)
            self.clock.advance((VIRTUAL_EPOCH_NS + due_ns - self.clock.now_ns()) / NS)
            self.now = target

    def _account_usage(self, until: float | None = None) -> None:
        until = self.now if until is None else until
        span = until - self._used_since
        if span > 0:
            area = self.outcome.used_area
            for name, value in self.used.items():
                area[name] += value * span
        self._used_since = until

    # The resource manager's side.
    def _add_nodes(self) -> None:
        infos, total = [], Resource()
        for shape_index, shape in enumerate(self.cluster.shapes):
            prefix = shape.name or f"node-{shape_index}"
            attributes = predicates.node_attributes(shape.labels, shape.taints)
            for i in range(shape.count):
                infos.append(si_pb2.NodeInfo(nodeID=f"{prefix}-{i}", action=si_pb2.NodeInfo.CREATE,
                                             attributes=attributes, schedulableResource=shape.resource.to_proto()))
                total = total + shape.resource
        self.partition.update_nodes(infos)
        self.outcome.total = total
        self._answers()

    def _handle(self, kind: int, payload) -> None:
        if kind == SUBMIT:
            self._submit(payload)
        elif kind == END:
            pod, attempt = payload
            if pod.end is None and pod.attempt == attempt:
                self._finish(pod, STOPPED, "pod completed")
        elif kind == GONE:
            pod = payload
            if pod.end is None:
                self._finish(pod, PREEMPTED, "preempted pod gone")
                self._resubmit(pod)
        elif kind == PLACEHOLDER_GONE:
            pod, termination = payload
            if pod.end is None:
                self._finish(pod, termination, "placeholder removed")
        elif kind == TICK:
            self.partition.tick()
            self._push(self.now + self.settings.tick, TICK, None)
        elif kind == SAMPLE:
            self._sample()
            self._push(self.now + payload, SAMPLE, payload)

    def _submit(self, app: TraceApp) -> None:
        request = si_pb2.AddApplicationRequest(
            applicationID=app.app_id, queueName=app.queue, partitionName=DEFAULT_PARTITION,
            ugi=si_pb2.UserGroupInformation(user=app.user, groups=list(app.groups)))
        pods = self.apps.setdefault(app.app_id, [])
        if app.task_groups:
            placeholder_ask = Resource()
            for group in app.task_groups:
                placeholder_ask = placeholder_ask + Resource({n: v * group.min_member
                                                              for n, v in group.min_resource.items()})
            request.placeholderAsk.CopyFrom(placeholder_ask.to_proto())
            request.executionTimeoutMilliSeconds = round(app.placeholder_timeout * 1000)
            request.gangSchedulingStyle = app.gang_style
            self.outcome.gangs[app.app_id] = Gang(app.app_id, app.queue, app.user, self.now, app.gang_style)
            priority = app.pods[0].priority
            for group in app.task_groups:
                tags = predicates.ask_tags(group.node_selector, group.tolerations)
                for i in range(group.min_member):
                    pod = Pod(f"{app.app_id}-tg-{group.name}-{i}", app.app_id, app.queue, app.user, group.min_resource,
                              0.0, priority, 0.0, True, group.name, self.now)
                    self._ask(pod, tags)
                    pods.append(pod)
        self._new_apps.append(request)
        held = []
        for g, spec in enumerate(app.pods):
            tags = predicates.ask_tags(spec.node_selector, spec.tolerations)
            for i in range(spec.count):
                pod = Pod(f"{app.app_id}-{g}-{i}", app.app_id, app.queue, app.user, spec.resource, spec.duration,
                          spec.priority, spec.grace, False, spec.task_group, self.now)
                pods.append(pod)
                self.pods[pod.key] = pod
                if app.task_groups:
                    held.append((pod, tags))
                else:
                    self._ask(pod, tags)
        if held:  # as the shim: a gang's real pods are asked for once it holds its room, or has timed out
            self._held[app.app_id] = held

    def _ask(self, pod: Pod, tags: dict[str, str]) -> None:
        pod.tags = tags
        self.pods[pod.key] = pod
        self._asks.append(si_pb2.Allocation(
            allocationKey=pod.key, applicationID=pod.app, partitionName=DEFAULT_PARTITION, allocationTags=tags,
            resourcePerAlloc=pod.resource.to_proto(), priority=pod.priority, taskGroupName=pod.task_group,
            placeholder=pod.placeholder))

    def _resubmit(self, pod: Pod) -> None:
        again = Pod(f"{pod.key.split('~')[0]}~{pod.attempt + 1}", pod.app, pod.queue, pod.user, pod.resource,
                    pod.duration, pod.priority, pod.grace, False, "", self.now, pod.attempt + 1)
        self.apps[pod.app].append(again)
        self._ask(again, pod.tags)

    def _finish(self, pod: Pod, termination: int, message: str) -> None:
        pod.end = self.now
        self._last_progress = self.now
        if pod.start is not None:
            for name, value in pod.resource.items():
                self.used[name] -= value
        self._releases.append(si_pb2.AllocationRelease(
            partitionName=DEFAULT_PARTITION, applicationID=pod.app, allocationKey=pod.key,
            terminationType=termination, message=message))

    def _flush(self) -> None:
        partition = self.partition
        if self._new_apps:
            apps, self._new_apps = self._new_apps, []
            partition.add_applications(apps)
            for request in apps:  # the queue the placement rules chose
                placed = partition.apps.get(request.applicationID)
                if placed is not None:
                    for pod in self.apps[request.applicationID]:
                        pod.queue = placed.queue_path
                    gang = self.outcome.gangs.get(request.applicationID)
                    if gang is not None:
                        gang.queue = placed.queue_path
        if self._asks or self._releases:
            asks, releases = self._asks, self._releases
            self._asks, self._releases = [], []
            partition.update_allocations(asks, releases)
        self._answers()

    # The core's answers.
    def _answers(self) -> None:
        out = self.partition.take_outbox()
        if out:
            self._answered += 1
        now, pods = self.now, self.pods
        for allocation in out.allocations.new:
            pod = pods[allocation.allocationKey]
            pod.start, pod.node = now, allocation.nodeID
            self._last_progress = now
            for name, value in pod.resource.items():
                self.used[name] += value
            if not pod.placeholder:
                self.outcome.placements[pod.queue or "?"].append(pod.key)
                self._push(now + pod.duration, END, (pod, pod.attempt))
        for release in out.released:
            pod = pods.get(release.allocationKey)
            if pod is None or pod.end is not None:
                continue
            if release.terminationType == PREEMPTED:
                if pod.start is not None and not pod.preempted:
                    pod.preempted = True
                    self.outcome.preemptions.append(Preemption(now, pod.key, pod.app, pod.queue, pod.user,
                                                               release.message))
                    self._push(now + pod.grace, GONE, pod)
            elif pod.placeholder and pod.start is not None:
                self._push(now, PLACEHOLDER_GONE, (pod, release.terminationType))
            else:  # an ask the core dropped (a placeholder that timed out before it was placed)
                pod.end = now
                pod.failed = True
                pod.reason = release.message
        for rejected in out.rejected_allocations:
            pod = pods.get(rejected.allocationKey)
            if pod is not None:
                pod.failed, pod.reason = True, rejected.reason
        for rejected in out.rejected_apps:
            self.outcome.rejected_apps[rejected.applicationID] = rejected.reason
            for pod in self.apps.get(rejected.applicationID, ()):
                pod.failed, pod.reason = True, f"application rejected: {rejected.reason}"
        for update in out.updated_apps:
            gang = self.outcome.gangs.get(update.applicationID)
            if gang is None:
                continue
            if update.state in (states.RUNNING, states.STARTING) and gang.running is None and gang.timed_out is None:
                gang.running = now  # it holds all its room (not: runs as ordinary pods after a timeout)
            elif update.message == states.RESERVATION_TIMEOUT and gang.timed_out is None:
                gang.timed_out = now
            if update.state in (states.FAILING, states.FAILED):
                self._held.pop(update.applicationID, None)
                for pod in self.apps.get(update.applicationID, ()):
                    if pod.start is None and not pod.failed:
                        pod.failed, pod.reason = True, f"gang failed: {update.message or update.state}"
            elif update.state in (states.RUNNING, states.STARTING, states.ACCEPTED) and (
                    update.state != states.ACCEPTED or gang.timed_out is not None):
                for pod, tags in self._held.pop(update.applicationID, ()):
                    self._ask(pod, tags)
        for state in out.scheduling_states:
            pod = pods.get(state.allocationKey)
            if pod is not None:
                pod.reason = state.reason
        reservations = self.outcome.reservations
        for event in out.events:
            if event.type == E.NODE and event.detail == E.NODE_RESERVATION and event.change == E.ADD:
                pod = pods.get(event.reference)
                reservations[pod.queue if pod is not None else "?"] += 1

    def _sample(self) -> None:
        queues = {}
        for path, queue in self.partition.queues.by_path.items():
            allocated, pending = queue.allocated, queue.pending
            queues[path] = (allocated.get("vcore", 0), allocated.get("memory", 0), pending.get("vcore", 0),
                            pending.get("memory", 0))
        self.outcome.samples.append((self.now, queues))


def _ordered(trace: list[TraceApp], seed: int) -> list[TraceApp]:
    """Submission order: by time; applications submitted at the same time in an order the seed picks."""
    rng = random.Random(seed)
    ordered = []
    for _, group in itertools.groupby(sorted(trace, key=lambda a: a.submit), key=lambda a: a.submit):
        group = list(group)
        if seed and len(group) > 1:
            rng.shuffle(group)
        ordered.extend(group)
    return ordered
