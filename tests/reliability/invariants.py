"""The invariants every reliability scenario (and the soak) ends with, read from the two sides that
must agree: the cluster (kubesim's objects and request log) and the scheduler (its REST API).

- every pod of the scheduler is bound exactly once, pending with a reason event, or refused (phase
  Failed with a reason, e.g. its application rejected);
- no node holds more than its allocatable, no queue more than its max;
- the core places each running pod where the cluster has it, and holds nothing else;
- the core's health checks pass.
"""

from __future__ import annotations

import json
import urllib.request
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from si.quantity import from_kubernetes
from tests.waiting import wait_for

SCHEDULER = "yunikorn"
# The scheduler's extra configuration for a scenario: health checks on every read (not every 30 s), so
# the invariants see the core as it is now.
HEALTH_ON_READ = {"health.checkInterval": "0"}
PENDING_REASONS = frozenset({"FailedScheduling", "TaskRejected"})  # why a pod waits, told on the pod
_DONE = ("Succeeded", "Failed")


@dataclass
class Findings:
    """What one look at the cluster and the scheduler found; ``ok`` when nothing is wrong."""

    pods: int = 0
    bound: int = 0
    pending: int = 0
    refused: int = 0
    lost: list[str] = field(default_factory=list)  # neither bound, nor pending with a reason, nor refused
    double_bound: dict[str, int] = field(default_factory=dict)  # pod -> successful binds
    over_committed: list[str] = field(default_factory=list)  # nodes and queues beyond their limit
    view_mismatch: list[str] = field(default_factory=list)  # the core's placements that differ from the cluster's
    unhealthy: list[str] = field(default_factory=list)  # failed health checks

    @property
    def ok(self) -> bool:
        return not (self.lost or self.double_bound or self.over_committed or self.view_mismatch or self.unhealthy)

    def __str__(self) -> str:
        return (f"{self.pods} pods ({self.bound} bound, {self.pending} pending, {self.refused} refused); "
                f"lost {self.lost[:10]}; "
                f"double-bound {dict(list(self.double_bound.items())[:10])}; over-committed "
                f"{self.over_committed[:10]}; core/cluster mismatch {self.view_mismatch[:10]}; "
                f"unhealthy {self.unhealthy}")


def get_json(url: str, timeout: float = 10.0):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


def survey(sim, rest_url: str, partition: str = "default") -> Findings:
    """One look at both sides (no waiting: a scheduler still catching up shows as findings)."""
    pods = [p for p in sim.objects("pods") if p["spec"].get("schedulerName") == SCHEDULER]
    live = [p for p in pods if p.get("status", {}).get("phase") not in _DONE]
    reasons = defaultdict(set)
    for event in sim.objects("events"):
        involved = event.get("involvedObject") or {}
        reasons[(involved.get("namespace"), involved.get("name"))].add(event.get("reason"))
    found = Findings(pods=len(pods))
    for pod in pods:
        meta = pod["metadata"]
        status = pod.get("status") or {}
        if pod["spec"].get("nodeName"):
            found.bound += 1
        elif status.get("phase") == "Failed" and status.get("reason"):
            found.refused += 1
        elif reasons[(meta["namespace"], meta["name"])] & PENDING_REASONS:
            found.pending += 1
        else:
            found.lost.append(f"{meta['namespace']}/{meta['name']}")
    binds = Counter((r.namespace, r.name) for r in list(sim.request_log) if r.subresource == "binding" and r.code == 201)
    found.double_bound = {f"{ns}/{name}": n for (ns, name), n in binds.items() if n > 1}
    found.over_committed = _over_committed_nodes(sim) + _over_committed_queues(rest_url, partition)
    found.view_mismatch = _view_mismatch(live, rest_url, partition)
    health = get_json(f"{rest_url}/ws/v1/scheduler/healthcheck")
    found.unhealthy = [f"{c['Name']}: {c['DiagnosisMessage']}" for c in health["HealthChecks"] if not c["Succeeded"]]
    return found


def _over_committed_nodes(sim) -> list[str]:
    used: dict[str, Counter] = defaultdict(Counter)
    for pod in sim.objects("pods"):
        node = pod["spec"].get("nodeName")
        if node and pod.get("status", {}).get("phase") not in _DONE:
            for container in pod["spec"]["containers"]:  # (a tenant's pod may hold null where a map belongs)
                used[node].update(from_kubernetes((container.get("resources") or {}).get("requests") or {}))
    found = []
    for node in sim.objects("nodes"):
        name = node["metadata"]["name"]
        if name not in used:  # (a hostile node's allocatable may not even parse)
            continue
        allocatable = from_kubernetes(node["status"]["allocatable"])
        found += [f"node {name}: {kind} {amount} > {allocatable.get(kind, 0)}"
                  for kind, amount in used[name].items() if amount > allocatable.get(kind, 0)]
    return found


def _over_committed_queues(rest_url: str, partition: str) -> list[str]:
    found, todo = [], [get_json(f"{rest_url}/ws/v1/partition/{partition}/queues")]
    while todo:
        queue = todo.pop()
        todo += queue.get("children") or []
        limit, used = queue.get("maxResource") or {}, queue.get("allocatedResource") or {}
        found += [f"queue {queue['queuename']}: {kind} {used[kind]} > {limit[kind]}"
                  for kind in limit if used.get(kind, 0) > limit[kind]]
    return found


def _view_mismatch(live_pods: list[dict], rest_url: str, partition: str) -> list[str]:
    cluster = {p["metadata"]["uid"]: (p["metadata"]["name"], p["spec"]["nodeName"])
               for p in live_pods if p["spec"].get("nodeName")}
    core = {a["allocationKey"]: a["nodeId"] for node in get_json(f"{rest_url}/ws/v1/partition/{partition}/nodes")
            for a in node.get("allocations") or []}
    found = [f"{name}: on {node}, the core has {core.get(uid)}" for uid, (name, node) in cluster.items()
             if core.get(uid) != node]
    return found + [f"allocation {key} on {node} of no running pod" for key, node in core.items() if key not in cluster]


def assert_invariants(sim, rest_url: str, timeout: float = 30.0, partition: str = "default") -> Findings:
    """Wait (up to ``timeout``) for every invariant to hold; fail naming what still breaks one."""
    last: list[Findings] = []

    def settled() -> bool:
        last[:] = [survey(sim, rest_url, partition)]
        return last[0].ok
    try:
        wait_for(settled, timeout=timeout, interval=0.2, message="the invariants")
    except AssertionError:
        raise AssertionError(f"invariants broken after {timeout} s: {last[0]}") from None
    return last[0]
