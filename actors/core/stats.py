"""What the core measures about itself, as plain numbers; ``rest.metrics`` gives them upstream's names.

Everything here is written by one partition actor's thread and copied into its snapshots. Nothing is
measured per ask on the scheduling path where a batch figure does: counters are added once per batch
(allocations, rejections, applications accepted), and a timing taken many times in one scheduling batch
(sorting, node evaluation) is summed there and observed once, as ``times`` observations of its mean.
A histogram's count and sum are exact that way; only the spread of a batch's samples over the buckets
is lost, which the buckets' factor of ten hides anyway.
"""

from __future__ import annotations

from bisect import bisect_left

from actors.base import record

# Upstream's buckets for every latency histogram: ExponentialBuckets(0.0001, 10, 8), in seconds.
LATENCY_BUCKETS = tuple(round(0.0001 * 10**i, 4) for i in range(8))


@record
class HistogramSnapshot:
    bounds: tuple[float, ...]
    buckets: tuple[int, ...]  # observations per bucket, not cumulative; the last one is +Inf
    count: int
    total: float

    def cumulative(self) -> list[tuple[float, int]]:
        """``(upper bound, observations at most that)`` pairs, ``+Inf`` last, as Prometheus reads them."""
        running, pairs = 0, []
        for bound, count in zip((*self.bounds, float("inf")), self.buckets, strict=True):
            running += count
            pairs.append((bound, running))
        return pairs

    def __add__(self, other: HistogramSnapshot) -> HistogramSnapshot:
        return HistogramSnapshot(self.bounds, tuple(a + b for a, b in zip(self.buckets, other.buckets, strict=True)),
                                 self.count + other.count, self.total + other.total)


def empty_histogram(bounds: tuple[float, ...] = LATENCY_BUCKETS) -> HistogramSnapshot:
    return HistogramSnapshot(bounds, (0,) * (len(bounds) + 1), 0, 0.0)


class Histogram:
    __slots__ = ("bounds", "buckets", "count", "total")

    def __init__(self, bounds: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        self.bounds = bounds
        self.buckets = [0] * (len(bounds) + 1)
        self.count = 0
        self.total = 0.0

    def observe(self, seconds: float, times: int = 1) -> None:
        """``times`` observations of ``seconds`` each (a batch's mean, weighted by its size)."""
        if times <= 0:
            return
        self.buckets[bisect_left(self.bounds, seconds)] += times
        self.count += times
        self.total += seconds * times

    def observe_total(self, seconds: float, times: int) -> None:
        """``times`` observations that took ``seconds`` together."""
        if times > 0:
            self.observe(seconds / times, times)

    def snapshot(self) -> HistogramSnapshot:
        return HistogramSnapshot(self.bounds, tuple(self.buckets), self.count, self.total)


# The partition's counters, by name; rest.metrics maps them to upstream's families and labels.
COUNTERS = (
    "allocated",  # allocations the scheduler decided
    "rejected",  # asks and allocations refused
    "errors",  # asks or allocations naming an application or node the partition does not have
    "released",  # allocations released (by the resource manager or the core)
    "apps_new",  # application submissions
    "apps_accepted",
    "apps_rejected",
    "apps_completed",  # applications that reached Completed (cumulative)
    "apps_failed",  # applications that reached Failed (cumulative)
    "nodes_decommissioned",
    "nodes_failed",  # nodes refused (negative capacity)
)
HISTOGRAMS = ("scheduling_latency", "scheduling_cycle", "sort_apps", "sort_queues", "trynode_latency",
              "trynode_evaluation", "trypreemption_latency")


@record
class StatsSnapshot:
    counters: dict[str, int]
    histograms: dict[str, HistogramSnapshot]

    def __add__(self, other: StatsSnapshot) -> StatsSnapshot:
        return StatsSnapshot({k: v + other.counters.get(k, 0) for k, v in self.counters.items()},
                             {k: v + other.histograms[k] for k, v in self.histograms.items()})


def empty_stats() -> StatsSnapshot:
    return StatsSnapshot(dict.fromkeys(COUNTERS, 0), {name: empty_histogram() for name in HISTOGRAMS})


class PartitionStats:
    """The live counters and histograms of one partition (its actor's thread only)."""

    __slots__ = ("counters", "histograms")

    def __init__(self) -> None:
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.histograms = {name: Histogram() for name in HISTOGRAMS}

    def add(self, name: str, amount: int = 1) -> None:
        self.counters[name] += amount

    def snapshot(self) -> StatsSnapshot:
        return StatsSnapshot(dict(self.counters), {k: h.snapshot() for k, h in self.histograms.items()})
