"""Random pods with required pod (anti-)affinity and topology spread on random clusters: every decision
the core takes with the shim's predicates holds each required constraint, judged by a naive checker
written from the Kubernetes documentation (no index, every pod looked at)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.core import config as cfg
from actors.core.partition import Partition
from actors.shim.nodes import parse_node
from actors.shim.pods import parse_pod
from actors.shim.predicates import KubernetesPredicates
from actors.shim.translate import allocation_tags
from si import si_pb2
from si.resources import Resource
from tests.shim.factories import node_json, pod_json

CONFIG = cfg.parse("""
partitions:
  - name: default
    placementrules: [{name: provided, create: true}]
    queues: [{name: root, submitacl: '*', queues: [{name: a}]}]
""").partitions[0]
KEYS = ("zone", "kubernetes.io/hostname")

nodes = st.lists(st.sampled_from(["z0", "z1", "z2", None]), min_size=1, max_size=6)
constraint = st.one_of(
    st.none(),
    st.tuples(st.sampled_from(["anti", "affinity"]), st.sampled_from(KEYS), st.sampled_from("ab")),
    st.tuples(st.just("spread"), st.sampled_from(KEYS), st.sampled_from("ab"), st.integers(1, 2)),
)
pods = st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from(["default", "other"]), constraint, st.booleans()),
                min_size=1, max_size=14)


def spec_of(constraint) -> dict:
    if constraint is None:
        return {}
    kind, key, app = constraint[:3]
    selector = {"matchLabels": {"app": app}}
    if kind == "spread":
        return {"topologySpreadConstraints": [{"maxSkew": constraint[3], "topologyKey": key,
                                               "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}]}
    section = "podAntiAffinity" if kind == "anti" else "podAffinity"
    return {"affinity": {section: {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": selector, "topologyKey": key}]}}}


class Placed:
    def __init__(self, app: str, namespace: str, constraint, node: str) -> None:
        self.app, self.namespace, self.constraint, self.node = app, namespace, constraint, node


def violation(pod: Placed, placed: list[Placed], labels: dict[str, dict]) -> str | None:
    """What required constraint ``pod`` on its node breaks, given the pods placed before it."""
    here = labels[pod.node]
    for other in placed:  # existing pods' anti-affinity: symmetric
        if other.constraint and other.constraint[0] == "anti":
            _, key, app = other.constraint
            if (pod.app == app and other.namespace == pod.namespace and key in here
                    and labels[other.node].get(key) == here[key]):
                return f"joins the {key} domain of a pod repelling it"
    if pod.constraint is None:
        return None
    kind, key, app = pod.constraint[:3]
    matching = [o for o in placed if o.app == app and o.namespace == pod.namespace]
    if kind == "anti":
        if key in here and any(labels[o.node].get(key) == here[key] for o in matching):
            return f"anti-affinity on {key} broken"
    elif kind == "affinity":
        if key not in here:
            return "affinity on a node without the key"
        if not any(labels[o.node].get(key) == here[key] for o in matching):
            # The first pod of a group that matches itself may go anywhere (pods on nodes without the
            # key are in no domain and do not count), as kube-scheduler allows.
            if any(key in labels[o.node] for o in matching) or pod.app != app:
                return f"affinity on {key} broken"
    else:
        domains = {node_labels[key] for node_labels in labels.values() if key in node_labels}
        if key not in here:
            return "spread on a node without the key"
        counts = {d: sum(1 for o in matching if labels[o.node].get(key) == d) for d in domains}
        skew = counts[here[key]] + (pod.app == app) - min(counts.values())
        if skew > pod.constraint[3]:
            return f"spread on {key}: skew {skew} above {pod.constraint[3]}"
    return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes, pods, st.lists(st.integers(0, 13), max_size=3))
def test_no_decision_breaks_a_required_constraint(zones, wanted, releases):
    partition = Partition(CONFIG, "rm", KubernetesPredicates())
    partition.add_applications([si_pb2.AddApplicationRequest(applicationID="app", queueName="root.a",
                                                             ugi=si_pb2.UserGroupInformation(user="u"))])
    labels = {}
    for index, zone in enumerate(zones):
        record = parse_node(node_json(f"n{index}", labels={"zone": zone} if zone else {}))
        labels[record.name] = {"kubernetes.io/hostname": record.name, **({"zone": zone} if zone else {})}
        partition.update_nodes([si_pb2.NodeInfo(nodeID=record.name, action=si_pb2.NodeInfo.CREATE,
                                                attributes=record.attributes(),
                                                schedulableResource=record.allocatable.to_proto())])
    asks = {}
    for index, (app, namespace, constraint, foreign) in enumerate(wanted):
        tags = allocation_tags(parse_pod(pod_json(namespace=namespace, labels={"app": app},
                                                  spec=spec_of(constraint))), foreign=foreign)
        key = f"p{index}"
        if foreign:  # another scheduler's pod, already on a node: counted, never judged
            node = f"n{index % len(zones)}"
            partition.update_allocations([si_pb2.Allocation(
                allocationKey=key, nodeID=node, allocationTags=tags,
                resourcePerAlloc=Resource.of(vcore=1).to_proto())], [])
            asks[key] = Placed(app, namespace, constraint, node)
            continue
        asks[key] = Placed(app, namespace, constraint, "")
        partition.update_allocations([si_pb2.Allocation(
            allocationKey=key, applicationID="app", allocationTags=tags,
            resourcePerAlloc=Resource.of(vcore=100).to_proto())], [])
    placed = [p for p in asks.values() if p.node]
    released = set()
    for step in range(len(wanted) + len(releases) + 1):
        if step in releases and placed:
            gone = next((k for k, p in asks.items() if p in placed and k not in released and p.constraint is None
                         and not any(f"p{i}" == k and w[3] for i, w in enumerate(wanted))), None)
            if gone is not None:
                partition.update_allocations([], [si_pb2.AllocationRelease(applicationID="app", allocationKey=gone)])
                placed.remove(asks[gone])
                released.add(gone)
        partition.schedule(max_allocations=1)
        for decision in partition.take_outbox().allocations.new:
            pod = asks[decision.allocationKey]
            pod.node = decision.nodeID
            why = violation(pod, placed, labels)
            assert why is None, f"{decision.allocationKey} on {decision.nodeID}: {why}"
            placed.append(pod)
