"""What the core benchmarks share: a 10-queue configuration, a counting callback, the SI feed."""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

from actors.cpu import CHOICES, pin_to_current_cpu
from si import si_pb2
from si.resources import Resource

# The CPUs this process may use before any is chosen for the scheduler's threads (see ``scheduler_cpus``).
EVERY_CPU = frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else frozenset()


def add_cpu_affinity(parser: argparse.ArgumentParser) -> None:
    """``--cpu-affinity``, as ``yunikorn-scheduler`` takes it (see ``scheduler_cpus``)."""
    parser.add_argument("--cpu-affinity", choices=CHOICES, default=CHOICES[0],
                        help="the scheduler's threads as yunikorn-scheduler --cpu-affinity keeps them: one (its "
                             "default), or all; the cluster and its clients use every CPU either way")


def cpus_described(choice: str) -> str:
    return f"the scheduler's threads on {'one CPU' if choice == 'one' else 'any CPU'} (--cpu-affinity {choice})"


@contextlib.contextmanager
def scheduler_cpus(choice: str) -> Iterator[None]:
    """Within: the calling thread, and the scheduler's threads it starts, kept as the scheduler command keeps
    them (``--cpu-affinity``); a process started meanwhile is given back every CPU with ``on_every_cpu``."""
    if choice != "one" or not EVERY_CPU:
        yield
        return
    pin_to_current_cpu()
    try:
        yield
    finally:
        os.sched_setaffinity(0, EVERY_CPU)


def on_every_cpu(pid: int) -> None:
    """Every CPU for each thread of process ``pid`` (started from a thread kept on one): its main thread
    first, so the threads it starts from here on inherit every CPU."""
    if not EVERY_CPU:
        return
    with contextlib.suppress(ProcessLookupError):
        os.sched_setaffinity(pid, EVERY_CPU)
    with contextlib.suppress(FileNotFoundError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(ProcessLookupError):
                os.sched_setaffinity(int(tid), EVERY_CPU)

CONFIG = "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: '*'\n        queues:\n" + "".join(
    f"          - name: q{i}\n" for i in range(10))


class CountingCallback:
    """A resource manager that counts new allocations and notes when the expected number arrived."""

    def __init__(self, expected: int) -> None:
        self.count = 0
        self.done = threading.Event()
        self.expected = expected
        self.last = 0.0

    def update_allocation(self, response):
        self.count += len(response.new)
        if self.count >= self.expected:
            self.last = time.perf_counter()
            self.done.set()

    def update_application(self, response):
        pass

    def update_node(self, response):
        pass

    def send_events(self, events):
        pass

    def update_container_scheduling_state(self, request):
        pass


ZONE_ATTRIBUTE = "kubernetes.io/label/topology.kubernetes.io/zone"


def feed(scheduler, nodes: int, asks: int, ask_tags=None) -> float:
    """Register nodes (in 10 zones: node attribute ``ZONE_ATTRIBUTE``) and 100 applications over 10
    queues, then send the asks (``ask_tags(app, i)``: each ask's tags); returns when asks began."""
    capacity = Resource.of(vcore=64_000, memory=256 * 2**30, pods=200).to_proto()
    scheduler.update_node(si_pb2.NodeRequest(rmID="bench", nodes=[
        si_pb2.NodeInfo(nodeID=f"n{i:05d}", action=si_pb2.NodeInfo.CREATE, schedulableResource=capacity,
                        attributes={ZONE_ATTRIBUTE: f"zone-{i % 10}"})
        for i in range(nodes)]))
    scheduler.update_application(si_pb2.ApplicationRequest(rmID="bench", new=[
        si_pb2.AddApplicationRequest(applicationID=f"app{i}", queueName=f"root.q{i % 10}", partitionName="default",
                                     ugi=si_pb2.UserGroupInformation(user="bench")) for i in range(100)]))
    scheduler.barrier()
    ask = Resource.of(vcore=100, memory=128 * 2**20, pods=1).to_proto()
    per_app = asks // 100
    first = time.perf_counter()
    for app in range(100):
        scheduler.update_allocation(si_pb2.AllocationRequest(rmID="bench", allocations=[
            si_pb2.Allocation(allocationKey=f"a{app}-{i}", applicationID=f"app{app}", partitionName="default",
                              resourcePerAlloc=ask, allocationTags=ask_tags(app, i) if ask_tags else None)
            for i in range(per_app)]))
    return first


def clean_heap() -> None:
    """Collect what earlier runs left, so a run does not pay for the previous scheduler's garbage
    (with the scheduler's collector thresholds, a full collection may not come on its own for minutes)."""
    gc.collect()


def create_pods(client, bodies: list[dict], threads: int) -> None:
    """Create the pods ``bodies`` in the default namespace through ``client`` (a ``KubeClient``), from
    ``threads`` threads."""
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda body: client.request_retrying("POST", "/api/v1/namespaces/default/pods", body=body),
                      bodies))


def load_client(kubeconfig: str, pool_size: int):
    """A ``KubeClient`` for a load generator: it stands in for the cluster's other users, so the
    shim's client-side rate limit (``kubernetes.qps``) does not pace it."""
    from actors.shim.client import KubeClient
    from actors.shim.ratelimit import UNLIMITED

    client = KubeClient.connect(kubeconfig, pool_size=pool_size)
    client.rate.set_rate(UNLIMITED, 0)
    return client
