"""Snapshots as YuniKorn's REST API spells them: field names of upstream's DAOs; a node's foreign pods
under upstream's ``foreignAllocations`` and, the same list, under the seed's ``foreign_allocations``.

Fields this core has nothing for are documented in the README ("Fields with nothing behind them").
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

import orjson

from actors.core.history import HistorySample
from actors.core.nodejson import allocation, foreign_allocation, node_identity, node_state, node_usage
from actors.core.snapshot import (
    ApplicationSnapshot,
    AskSnapshot,
    HealthReport,
    NodeSnapshot,
    PartitionSnapshot,
    QueueSnapshot,
    abs_used_capacity,
)
from si.states import ApplicationState as AppState


def go_duration(seconds: float) -> str:
    """Seconds as Go's ``time.Duration.String()`` writes them (``30s``, ``1m30s``, ``1h0m0s``)."""
    if not seconds:
        return "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs:.9f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{int(hours)}h{int(minutes)}m{text}"
    return f"{int(minutes)}m{text}" if minutes else text


GO_ZERO_TIME = "0001-01-01T00:00:00Z"


def resource(value) -> dict | None:
    return None if value is None else value.as_dict()


def ask(a: AskSnapshot) -> dict:
    log = [{"message": reason, "lastOccurrence": when, "count": count} for reason, when, count in a.failure_log]
    return {"allocationKey": a.allocation_key, "allocationTags": dict(a.allocation_tags), "requestTime": a.request_time,
            "resource": resource(a.resource), "priority": str(a.priority), "requiredNodeId": a.required_node_id,
            "applicationId": a.application_id, "placeholder": a.placeholder, "taskGroupName": a.task_group_name,
            "allocationLog": log, "triggeredPreemption": a.triggered_preemption, "originator": a.originator,
            "schedulingAttempted": a.scheduling_attempted, "triggeredScaleUp": a.triggered_scale_up}


def placeholder_data(app: ApplicationSnapshot) -> list[dict]:
    """Per task group: placeholders asked for or found, replaced by real pods, ended otherwise."""
    return [{"taskGroupName": d.task_group_name, "count": d.count, "minResource": resource(d.min_resource),
             "replaced": d.replaced, "timedout": d.timed_out} for d in app.placeholder_data]


def start_time(app: ApplicationSnapshot) -> int:
    """When the application started running (its first allocation), 0 before."""
    return next((t for t, state in app.state_log if state in (AppState.STARTING, AppState.RUNNING)), 0)


def application(app: ApplicationSnapshot, allocations: orjson.Fragment | None = None) -> dict:
    """``allocations``: the JSON of its allocations, serialized already (rest.fragments); else rendered here."""
    if allocations is None:
        allocations = [allocation(a) for a in app.allocations]
    return {"applicationID": app.application_id, "usedResource": resource(app.used_resource),
            "maxUsedResource": resource(app.max_used_resource), "pendingResource": resource(app.pending_resource),
            "partition": app.partition, "queueName": app.queue_name, "submissionTime": app.submission_time,
            "finishedTime": app.finished_time or None, "requests": [ask(r) for r in app.requests],
            "allocations": allocations, "applicationState": app.state,
            "user": app.user, "groups": list(app.groups), "rejectedMessage": app.rejected_message,
            "stateLog": [{"time": t, "applicationState": s} for t, s in app.state_log],
            "placeholderData": placeholder_data(app), "hasReserved": bool(app.reservations),
            "reservations": list(app.reservations),
            "maxRequestPriority": max((r.priority for r in app.requests), default=0), "startTime": start_time(app),
            "backoffDeadline": go_time(app.backoff_deadline)}


def go_time(ns: int) -> str:
    """A time as Go's JSON writes a ``time.Time`` (RFC 3339, UTC, nanoseconds; Go's zero time when unset)."""
    if not ns:
        return GO_ZERO_TIME
    seconds, fraction = divmod(ns, 1_000_000_000)
    stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{fraction:09d}".rstrip("0").rstrip(".") + "Z"


def queue(q: QueueSnapshot, subtree: bool = True) -> dict:
    template = None
    if q.template is not None:
        template = {"maxApplications": q.template["maxApplications"],
                    "maxResource": resource(q.template["maxResource"]),
                    "guaranteedResource": resource(q.template["guaranteedResource"]),
                    "properties": dict(q.template["properties"])}
    body = {"queuename": q.queue_name, "status": q.status, "partition": q.partition,
            "pendingResource": resource(q.pending_resource), "maxResource": resource(q.max_resource),
            "guaranteedResource": resource(q.guaranteed_resource), "allocatedResource": resource(q.allocated_resource),
            "preemptingResource": resource(q.preempting_resource), "headroom": resource(q.headroom), "isLeaf": q.is_leaf, "isManaged": q.is_managed,
            "properties": dict(q.properties), "parent": q.parent, "template": template,
            "childNames": [c.queue_name.rsplit(".", 1)[-1] for c in q.children],
            "absUsedCapacity": dict(q.abs_used_capacity), "maxRunningApps": q.max_running_apps,
            "runningApps": q.running_apps, "currentPriority": q.current_priority, "allocatingAcceptedApps": [],
            "sortingPolicy": q.sorting_policy, "prioritySorting": q.priority_sorting,
            "preemptionEnabled": q.preemption_enabled, "isPreemptionFence": q.is_preemption_fence,
            "preemptionDelay": go_duration(q.preemption_delay),
            "quotaPreemptionDelay": go_duration(q.quota_preemption_delay),
            "isPriorityFence": q.properties.get("priority.policy", "default") == "fence",
            "priorityOffset": int(q.properties.get("priority.offset", 0))}
    if subtree:
        body["children"] = [queue(c) for c in q.children]
    return body


def node(n: NodeSnapshot, allocations: orjson.Fragment | None = None) -> dict:
    """``allocations``: the JSON of its allocations, serialized already (rest.fragments); else rendered here."""
    if allocations is None:
        allocations = [allocation(a) for a in n.allocations]
    return {**node_identity(n), **usage(n), "allocations": allocations, **state(n)}


def usage(n: NodeSnapshot) -> dict:
    utilization = n.utilized
    return node_usage(n.allocated, n.occupied, n.available, utilization if type(utilization) is dict else dict(utilization))


def state(n: NodeSnapshot) -> dict:
    return node_state([foreign_allocation(a) for a in n.foreign_allocations], n.schedulable, n.reservations)


def partition(p: PartitionSnapshot) -> dict:
    return {"clusterId": p.cluster_id, "name": p.name,
            "capacity": {"capacity": resource(p.capacity), "usedCapacity": resource(p.used_capacity),
                         "utilization": dict(p.utilization)},
            "nodeSortingPolicy": {"type": p.node_sort_policy, "resourceWeights": dict(p.resource_weights)},
            "preemptionEnabled": p.preemption_enabled, "quotaPreemptionEnabled": p.quota_preemption_enabled,
            "totalNodes": p.total_nodes,
            "applications": {**dict(p.applications_by_state), "total": p.total_applications},
            "totalContainers": p.total_containers, "state": p.state,
            "lastStateTransitionTime": p.last_state_transition_time}


def health(report: HealthReport) -> dict:
    return {"Healthy": report.healthy, "HealthChecks": [
        {"Name": c.name, "Succeeded": c.succeeded, "Description": c.description,
         "DiagnosisMessage": c.diagnosis_message} for c in report.checks]}


def app_history(sample: HistorySample) -> dict:
    """Upstream's ApplicationHistoryDAOInfo: nanoseconds, and the count as a string."""
    return {"timestamp": sample.timestamp, "totalApplications": str(sample.total_applications)}


def container_history(sample: HistorySample) -> dict:
    return {"timestamp": sample.timestamp, "totalContainers": str(sample.total_containers)}


def event(event_id: int, record) -> dict:
    return {"id": event_id, "type": int(record.type), "objectID": record.objectID, "message": record.message,
            "timestampNano": record.timestampNano, "eventChangeType": int(record.eventChangeType),
            "eventChangeDetail": int(record.eventChangeDetail), "referenceID": record.referenceID,
            "resource": {"resources": {k: {"value": v.value} for k, v in record.resource.resources.items()}}}


def utilizations(p: PartitionSnapshot) -> dict:
    """Upstream's ``getPartitionNodesUtilJSON``: per resource type a node has, the nodes in ten buckets
    of the share of it their allocations use (foreign pods not counted). A share, truncated to a whole
    percent, is in the bucket above whose lower bound it is, up to its upper one (10.9% is in 0-10%,
    11% in 10-20%); 0% and a type the allocations do not name go to the first, more than 100% to the
    last. As upstream, an empty count or list is left out."""
    buckets: dict[str, list[list[str]]] = {}
    for n in p.nodes:
        shares = abs_used_capacity(n.capacity, n.allocated)
        for kind in n.capacity:
            share = shares.get(kind, 0)
            index = min(max(math.ceil(share / 10) - 1, 0), 9)
            buckets.setdefault(kind, [[] for _ in range(10)])[index].append(n.node_id)
    result = []
    for kind, names in sorted(buckets.items()):
        util = []
        for i, nodes in enumerate(names):
            bucket = {"bucketName": f"{i * 10}-{(i + 1) * 10}%"}
            if nodes:
                bucket.update(numOfNodes=len(nodes), nodeNames=nodes)
            util.append(bucket)
        result.append({"type": kind, "utilization": util})
    body = {"clusterId": p.cluster_id, "partition": p.name}
    if result:
        body["utilizations"] = result
    return body
