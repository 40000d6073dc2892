"""``/ws/v1/metrics``: the core's figures under upstream YuniKorn's metric names, labels and types.

The core counts and times in plain numbers (:mod:`actors.core.stats`) and publishes them in its
snapshots; nothing here runs on the scheduling path. At scrape time each *provider* turns the snapshot
into metric families, and :func:`render` writes them in the Prometheus text format, followed by
prometheus-client's process and Python runtime collectors (``process_*``, ``python_*``).

Names follow upstream's Go code exactly, which the Python client's own families cannot always do (it
adds ``_total`` to every counter, while upstream names ``yunikorn_<queue>_queue_container`` a counter
without it), so families are written here. Upstream's latency histograms are named ``*_milliseconds``
but observe seconds (their help says so); both are kept, so dashboards built for YuniKorn read ours.

To add metrics, write a provider ``(MetricsInput) -> Iterable[Family]`` and append it to
:data:`PROVIDERS` (or pass ``providers=`` to :func:`render`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.utils import floatToGoString

from actors.core.snapshot import CoreSnapshot, QueueSnapshot
from actors.core.stats import HistogramSnapshot, StatsSnapshot, empty_stats
from si.states import ApplicationState as AppState

NAMESPACE = "yunikorn"
SCHEDULER = f"{NAMESPACE}_scheduler"
USAGE_RANGES = ("[0,10%]", "(10%,20%]", "(20%,30%]", "(30%,40%]", "(40%,50%]", "(50%,60%]", "(60%,70%]",
                "(70%,80%]", "(80%,90%]", "(90%,100%]")


@dataclass
class Family:
    """One metric family, named as exposed (a counter keeps exactly the name it is given)."""

    name: str
    type: str  # counter, gauge or histogram
    help: str
    labels: tuple[str, ...] = ()
    samples: list[tuple[str, tuple[str, ...], float]] = field(default_factory=list)  # (suffix, values, value)

    def add(self, values: Sequence[str], value: float) -> Family:
        self.samples.append(("", tuple(values), value))
        return self

    def add_histogram(self, values: Sequence[str], histogram: HistogramSnapshot) -> Family:
        values = tuple(values)
        for bound, count in histogram.cumulative():
            self.samples.append(("_bucket", (*values, floatToGoString(bound)), count))
        self.samples.append(("_sum", values, histogram.total))
        self.samples.append(("_count", values, histogram.count))
        return self

    def lines(self) -> Iterable[str]:
        yield f"# HELP {self.name} {_escape_help(self.help)}\n"
        yield f"# TYPE {self.name} {self.type}\n"
        for suffix, values, value in self.samples:
            names = (*self.labels, "le") if suffix == "_bucket" else self.labels
            labels = ",".join(f'{n}="{_escape_label(v)}"' for n, v in zip(names, values, strict=True))
            yield f"{self.name}{suffix}{{{labels}}} {floatToGoString(value)}\n" if labels else \
                f"{self.name}{suffix} {floatToGoString(value)}\n"


def _escape_help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


def _escape_label(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def metric_name(text: str) -> str:
    """Upstream's ``formatMetricName``: every character outside ``[a-zA-Z0-9_:]`` becomes ``_``."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "_:") else "_" for c in text)


@dataclass(frozen=True)
class EventCounts:
    """The event system's counters (:class:`actors.core.events.EventRing`)."""

    created: int = 0
    dropped: int = 0  # events a stalled stream reader lost
    not_channeled: int = 0  # events beyond ``event.requestCapacity`` in one batch
    stored: int = 0  # events told to the resource manager
    not_stored: int = 0  # events beyond ``event.requestCapacity`` in one push interval of the resource manager's


@dataclass(frozen=True)
class MetricsInput:
    snapshot: CoreSnapshot
    events: EventCounts = EventCounts()


Provider = Callable[[MetricsInput], Iterable[Family]]


def _total_stats(snapshot: CoreSnapshot) -> StatsSnapshot:
    result = empty_stats()
    for partition in snapshot.partitions:
        result = result + partition.stats
    return result


def scheduler_families(data: MetricsInput) -> Iterable[Family]:
    snapshot = data.snapshot
    stats = _total_stats(snapshot)
    counters = stats.counters
    core = snapshot.core_counters
    yield Family(f"{SCHEDULER}_container_allocation_attempt_total", "counter",
                 "Total number of attempts to allocate containers. State of the attempt includes `allocated`, "
                 "`rejected`, `error`, `released`", ("state",)) \
        .add(["allocated"], counters["allocated"]).add(["rejected"], counters["rejected"]) \
        .add(["error"], counters["errors"] + core.get("errors", 0)).add(["released"], counters["released"])
    yield Family(f"{SCHEDULER}_application_submission_total", "counter",
                 "Total number of application submissions. State of the attempt includes `new`, `accepted` and "
                 "`rejected`.", ("result",)) \
        .add(["new"], counters["apps_new"]).add(["accepted"], counters["apps_accepted"]) \
        .add(["rejected"], counters["apps_rejected"])
    live: dict[str, int] = {}
    for partition in snapshot.partitions:
        for state, count in partition.applications_by_state.items():
            label = "running" if state == AppState.STARTING else state.lower()
            live[label] = live.get(label, 0) + count
    yield Family(f"{SCHEDULER}_application_total", "gauge",
                 "Total number of applications. State of the application includes `running`, `resuming`, "
                 "`failing`, `completing`, `completed` and `failed`.", ("state",)) \
        .add(["running"], live.get("running", 0)).add(["resuming"], live.get("resuming", 0)) \
        .add(["failing"], live.get("failing", 0)).add(["completing"], live.get("completing", 0)) \
        .add(["completed"], counters["apps_completed"]).add(["failed"], counters["apps_failed"])
    active = sum(p.schedulable_nodes for p in snapshot.partitions)
    draining = sum(p.total_nodes - p.schedulable_nodes for p in snapshot.partitions)
    yield Family(f"{SCHEDULER}_node", "gauge",
                 "Total number of nodes. State of the node includes `active` and `failed`.", ("state",)) \
        .add(["active"], active).add(["draining"], draining) \
        .add(["decommissioned"], counters["nodes_decommissioned"]) \
        .add(["failed"], counters["nodes_failed"] + core.get("failed_nodes", 0))
    usage: dict[str, list[int]] = {}
    for partition in snapshot.partitions:
        for resource, buckets in (partition.node_usage or {}).items():
            summed = usage.setdefault(resource, [0] * len(USAGE_RANGES))
            for index, count in enumerate(buckets):
                summed[index] += count
    for resource, buckets in sorted(usage.items()):
        family = Family(f"{SCHEDULER}_{metric_name(resource)}_node_usage_total", "gauge",
                        "Total resource usage of node, by resource name.", ("range",))
        for label, count in zip(USAGE_RANGES, buckets, strict=True):
            family.add([label], count)
        yield family
    histograms = stats.histograms
    for name, key, text in (
            ("scheduling_latency_milliseconds", "scheduling_latency", "Latency of the main scheduling routine, in seconds."),
            ("scheduling_cycle_milliseconds", "scheduling_cycle", "Time taken for a scheduling cycle, in seconds."),
            ("trynode_latency_milliseconds", "trynode_latency",
             "Latency of node condition checks for container allocations, such as placement constraints, in seconds."),
            ("trynode_evaluation_milliseconds", "trynode_evaluation", "Time taken to evaluate nodes for a pod, in seconds."),
            ("trypreemption_latency_milliseconds", "trypreemption_latency",
             "Latency of preemption condition checks for container allocations, in seconds.")):
        yield Family(f"{SCHEDULER}_{name}", "histogram", text).add_histogram([], histograms[key])
    yield Family(f"{SCHEDULER}_node_sorting_latency_milliseconds", "histogram",
                 "Latency of all nodes sorting, in seconds.", ("level",)) \
        .add_histogram(["app"], histograms["sort_apps"]).add_histogram(["queue"], histograms["sort_queues"])


LIVE_APP_STATES = (("new", (AppState.NEW,)), ("accepted", (AppState.ACCEPTED,)),
                   ("running", (AppState.RUNNING, AppState.STARTING)), ("failing", (AppState.FAILING,)),
                   ("resuming", (AppState.RESUMING,)), ("completing", (AppState.COMPLETING,)))
TERMINAL_APP_STATES = ("rejected", "failed", "completed")


def _queues(snapshot: CoreSnapshot) -> Iterable[QueueSnapshot]:
    for partition in snapshot.partitions:
        stack = [partition.root_queue]
        while stack:
            queue = stack.pop()
            stack.extend(reversed(queue.children))
            yield queue


def queue_families(data: MetricsInput) -> Iterable[Family]:
    apps = Family(f"{NAMESPACE}_queue_app", "gauge",
                  "Queue application metrics. State of the application includes `new`, `accepted`, `rejected`, "
                  "`running`, `failing`, `failed`, `resuming`, `completing`, `completed`.", ("queue", "state"))
    totals = Family(f"{NAMESPACE}_queue_app_total", "counter",
                    "Queue applications that ended. State of the application includes `completed`, `failed`, "
                    "`rejected`.", ("queue", "state"))
    resources = Family(f"{NAMESPACE}_queue_resource", "gauge",
                       "Queue resource metrics. State of the resource includes `guaranteed`, `max`, `allocated`, "
                       "`pending`, `preempting`, `maxRunningApps`.", ("queue", "state", "resource"))
    containers = []
    for queue in _queues(data.snapshot):
        path = queue.queue_name
        states = queue.app_states or {}
        for label, names in LIVE_APP_STATES:
            apps.add([path, label], sum(states.get(name, 0) for name in names))
        for label in TERMINAL_APP_STATES:
            apps.add([path, label], queue.app_totals.get(label, 0))
            totals.add([path, label], queue.app_totals.get(label, 0))
        for state, value in (("guaranteed", queue.guaranteed_resource), ("max", queue.max_resource),
                             ("allocated", queue.allocated_resource), ("pending", queue.pending_resource),
                             ("preempting", queue.preempting_resource)):
            for resource, amount in sorted((value or {}).items()):
                resources.add([path, state, resource], amount)
        if queue.max_running_apps:
            resources.add([path, "maxRunningApps", "apps"], queue.max_running_apps)
        containers.append(Family(f"{NAMESPACE}_{metric_name(path)}_queue_container", "counter",
                                 "Queue container metrics. State of the attempt includes `allocated`, `released`.",
                                 ("state",))
                          .add(["allocated"], queue.containers.get("allocated", 0))
                          .add(["released"], queue.containers.get("released", 0)))
    yield apps
    yield totals
    yield resources
    yield from containers


def event_families(data: MetricsInput) -> Iterable[Family]:
    """The event system's counters, gauges as upstream's. Events of a batch go straight into the ring up
    to ``event.requestCapacity`` (the rest are not channeled), each one stored in the ring (the oldest
    leave a full ring), so channeled and processed are one count here; the store for the resource
    manager takes up to ``event.requestCapacity`` in one push interval (the rest are not stored), and
    what it takes is collected at once."""
    events = data.events
    channeled, refused = events.created, events.not_channeled
    for name, value in (("created", channeled + refused), ("channeled", channeled), ("not_channeled", refused),
                        ("dropped", events.dropped), ("processed", channeled), ("stored", events.stored),
                        ("not_stored", events.not_stored), ("collected", events.stored)):
        yield Family(f"{NAMESPACE}_event_total_{name}", "gauge", f"total events {name.replace('_', ' ')}") \
            .add([], value)


PROVIDERS: list[Provider] = [scheduler_families, queue_families, event_families]

_RUNTIME = CollectorRegistry(auto_describe=False)
ProcessCollector(registry=_RUNTIME)
PlatformCollector(registry=_RUNTIME)
GCCollector(registry=_RUNTIME)


def render(data: MetricsInput, providers: Iterable[Provider] | None = None) -> bytes:
    """The Prometheus text exposition (format 0.0.4) of every provider's families and the runtime's."""
    parts = []
    for provider in PROVIDERS if providers is None else providers:
        for family in provider(data):
            parts.extend(family.lines())
    return "".join(parts).encode() + generate_latest(_RUNTIME)
