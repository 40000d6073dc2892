"""``meta.k8s.io`` Tables: what ``kubectl get`` prints, with the columns kube-apiserver's printers define.

A client that sends ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io`` gets, for a list, a single
object or each watch event, a Table: ``columnDefinitions`` (priority 0 columns are shown by default, 1
with ``-o wide``) and one row per object, its ``cells`` in column order and its ``object`` as
``PartialObjectMetadata`` (the default), the whole object (``includeObject=Object``) or nothing
(``includeObject=None``). Kinds without a printer of their own get NAME and AGE.
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Callable
from typing import NamedTuple

from kubesim import errors

NONE = "<none>"


class Column(NamedTuple):
    name: str
    description: str
    cell: Callable[[dict], object]
    priority: int = 0
    type: str = "string"
    format: str = ""


# Durations.
def human_duration(seconds: float) -> str:
    """A duration as kubectl shows ages: ``45s``, ``3m20s``, ``25m``, ``5h10m``, ``20h``, ``3d4h``, ``40d``, ``2y``."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 120:
        return f"{max(whole, 0)}s"
    minutes, hours, days = whole // 60, whole // 3600, whole // 86400
    if minutes < 10:
        return _pair(minutes, "m", whole % 60, "s")
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return _pair(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return _pair(days, "d", hours % 24, "h")
    if days < 365 * 2:
        return f"{days}d"
    if days < 365 * 8:
        return _pair(days // 365, "y", days % 365, "d")
    return f"{days // 365}y"


def _pair(major: int, major_unit: str, minor: int, minor_unit: str) -> str:
    return f"{major}{major_unit}{minor}{minor_unit}" if minor else f"{major}{major_unit}"


def since(timestamp: str | None) -> str:
    """How long ago an RFC 3339 timestamp was, as an age; ``<unknown>`` without one."""
    if not timestamp:
        return "<unknown>"
    try:
        then = calendar.timegm(time.strptime(timestamp[:19], "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return "<unknown>"
    return human_duration(time.time() - then)


# Cells.
def _meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def _name(obj: dict) -> str:
    return _meta(obj).get("name", "")


def _age(obj: dict) -> str:
    return since(_meta(obj).get("creationTimestamp"))


NAME = Column("Name", "Name must be unique within a namespace.", _name, format="name")
AGE = Column("Age", "CreationTimestamp is a timestamp representing the server time when this object was created.",
             _age)


def _pod_containers(pod: dict) -> tuple[int, int, int, str]:
    """(ready, total, restarts, the reason a container gives for its state, or "")."""
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    ready = restarts = 0
    reason = ""
    for container in statuses:
        restarts += int(container.get("restartCount") or 0)
        state = container.get("state") or {}
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
        elif terminated:
            reason = terminated.get("reason") or (f"Signal:{terminated['signal']}" if terminated.get("signal")
                                                  else f"ExitCode:{terminated.get('exitCode', 0)}")
        elif container.get("ready") and "running" in state:
            ready += 1
    total = len((pod.get("spec") or {}).get("containers") or [])
    return ready, total, restarts, reason


def _pod_status(pod: dict) -> str:
    status = pod.get("status") or {}
    reason = status.get("reason") or _pod_containers(pod)[3] or status.get("phase") or "Unknown"
    if _meta(pod).get("deletionTimestamp"):
        return "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return reason


def _readiness_gates(pod: dict) -> str:
    gates = [g.get("conditionType") for g in (pod.get("spec") or {}).get("readinessGates") or []]
    if not gates:
        return NONE
    true = {c.get("type") for c in (pod.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}
    return f"{sum(1 for g in gates if g in true)}/{len(gates)}"


def _node_status(node: dict) -> str:
    conditions = {c.get("type"): c.get("status") for c in (node.get("status") or {}).get("conditions") or []}
    ready = {"True": "Ready", "False": "NotReady"}.get(conditions.get("Ready"), "Unknown")
    return ready + (",SchedulingDisabled" if (node.get("spec") or {}).get("unschedulable") else "")


def _node_roles(node: dict) -> str:
    labels = _meta(node).get("labels") or {}
    roles = sorted({key.split("/", 1)[1] for key in labels if key.startswith("node-role.kubernetes.io/")}
                   | ({labels["kubernetes.io/role"]} if labels.get("kubernetes.io/role") else set()))
    return ",".join(r for r in roles if r) or NONE


def _node_address(kind: str) -> Callable[[dict], str]:
    def cell(node: dict) -> str:
        found = [a.get("address") for a in (node.get("status") or {}).get("addresses") or [] if a.get("type") == kind]
        return found[0] if found else NONE
    return cell


def _node_info(field: str, default: str = "") -> Callable[[dict], str]:
    return lambda node: ((node.get("status") or {}).get("nodeInfo") or {}).get(field) or default


def _event_last_seen(event: dict) -> str:
    series = event.get("series") or {}
    return since(series.get("lastObservedTime") or event.get("lastTimestamp") or event.get("eventTime")
                 or event.get("firstTimestamp") or _meta(event).get("creationTimestamp"))


def _event_object(event: dict) -> str:
    involved = event.get("involvedObject") or {}
    return f"{(involved.get('kind') or '').lower()}/{involved.get('name', '')}"


def _event_source(event: dict) -> str:
    source = event.get("source") or {}
    text = source.get("component") or event.get("reportingComponent") or ""
    return f"{text}, {source['host']}" if source.get("host") else text


def _count(event: dict) -> int:
    return int((event.get("series") or {}).get("count") or event.get("count") or 1)


def _data_count(obj: dict) -> int:
    return len(obj.get("data") or {}) + len(obj.get("binaryData") or {})


def _service_ports(service: dict) -> str:
    ports = [f"{p.get('port')}{':' + str(p['nodePort']) if p.get('nodePort') else ''}/{p.get('protocol', 'TCP')}"
             for p in (service.get("spec") or {}).get("ports") or []]
    return ",".join(ports) or NONE


def _external_ips(service: dict) -> str:
    ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    addresses = [i.get("ip") or i.get("hostname") for i in ingress] + list((service.get("spec") or {})
                                                                         .get("externalIPs") or [])
    return ",".join(a for a in addresses if a) or NONE


def _epoch(timestamp: str) -> float:
    return calendar.timegm(time.strptime(timestamp[:19], "%Y-%m-%dT%H:%M:%S"))


_JOB_STATES = ("Complete", "Failed", "Suspended", "FailureTarget", "SuccessCriteriaMet")  # as kubectl ranks them


def _job_status(job: dict) -> str:
    held = {c.get("type") for c in (job.get("status") or {}).get("conditions") or () if c.get("status") == "True"}
    if _meta(job).get("deletionTimestamp") and not held & {"Complete", "Failed"}:
        return "Terminating"
    return next((condition for condition in _JOB_STATES if condition in held), "Running")


def _job_completions(job: dict) -> str:
    spec, succeeded = job.get("spec") or {}, (job.get("status") or {}).get("succeeded", 0)
    if spec.get("completions") is not None:
        return f"{succeeded}/{spec['completions']}"
    if (spec.get("parallelism") or 0) > 1:
        return f"{succeeded}/1 of {spec['parallelism']}"
    return f"{succeeded}/1"


def _job_duration(job: dict) -> str:
    status = job.get("status") or {}
    if not status.get("startTime"):
        return ""
    end = _epoch(status["completionTime"]) if status.get("completionTime") else time.time()
    return human_duration(end - _epoch(status["startTime"]))


def _template_containers(field: str) -> Callable[[dict], str]:
    def cell(obj: dict) -> str:
        containers = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or ()
        return ",".join(str(c.get(field, "")) for c in containers)
    return cell


# The wide columns of every kind with a pod template, as kubectl shows them.
TEMPLATE_CONTAINERS = Column("Containers", "Names of each container in the template.", _template_containers("name"), 1)
TEMPLATE_IMAGES = Column("Images", "Images referenced by each container in the template.",
                         _template_containers("image"), 1)


def _selector(obj: dict) -> str:
    selector = (obj.get("spec") or {}).get("selector") or {}
    parts = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    return ",".join(parts) or NONE


def _status_count(field: str) -> Callable[[dict], int]:
    return lambda obj: (obj.get("status") or {}).get(field, 0)


def _ready_of_wanted(obj: dict) -> str:
    return f"{(obj.get('status') or {}).get('readyReplicas', 0)}/{(obj.get('spec') or {}).get('replicas', 0)}"


def _job_template_containers(field: str) -> Callable[[dict], str]:
    cell = _template_containers(field)
    return lambda cron_job: cell((cron_job.get("spec") or {}).get("jobTemplate") or {})


def _node_selector(daemon_set: dict) -> str:
    selector = ((((daemon_set.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeSelector")) or {}
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or NONE


def _suspend(cron_job: dict) -> str:
    suspend = (cron_job.get("spec") or {}).get("suspend")
    return "<unset>" if suspend is None else str(bool(suspend))


def _last_schedule(cron_job: dict) -> str:
    last = (cron_job.get("status") or {}).get("lastScheduleTime")
    return since(last) if last else NONE


def _spec(field: str, default: object = NONE) -> Callable[[dict], object]:
    return lambda obj: (obj.get("spec") or {}).get(field, default) or default


def _role_ref(binding: dict) -> str:
    ref = binding.get("roleRef") if isinstance(binding.get("roleRef"), dict) else {}
    return f"{ref.get('kind', '')}/{ref.get('name', '')}"


def _subjects(kind: str) -> Callable[[dict], str]:
    def cell(binding: dict) -> str:
        subjects = [s for s in binding.get("subjects") or () if isinstance(s, dict) and s.get("kind") == kind]
        return ", ".join(f"{s.get('namespace', '')}:{s.get('name', '')}" if kind == "ServiceAccount"
                         else str(s.get("name", "")) for s in subjects)
    return cell


_ROLE = (NAME, Column("Created At", "CreationTimestamp is a timestamp representing the server time when this "
                                    "object was created.", lambda r: _meta(r).get("creationTimestamp", ""),
                      type="date"))
_BINDING = (NAME, Column("Role", "RoleRef can reference a Role in the current namespace or a ClusterRole in the "
                                 "global namespace.", _role_ref),
            AGE, Column("Users", "Users in the roleBinding", _subjects("User"), 1),
            Column("Groups", "Groups in the roleBinding", _subjects("Group"), 1),
            Column("ServiceAccounts", "ServiceAccounts in the roleBinding", _subjects("ServiceAccount"), 1))

COLUMNS: dict[str, tuple[Column, ...]] = {
    "roles": _ROLE, "clusterroles": _ROLE, "rolebindings": _BINDING, "clusterrolebindings": _BINDING,
    "pods": (
        NAME,
        Column("Ready", "The aggregate readiness state of this pod for accepting traffic.",
               lambda p: "{}/{}".format(*_pod_containers(p)[:2])),
        Column("Status", "The aggregate status of the containers in this pod.", _pod_status),
        Column("Restarts", "The number of times the containers in this pod have been restarted.",
               lambda p: str(_pod_containers(p)[2])),
        AGE,
        Column("IP", "The IP address assigned to the pod.", lambda p: (p.get("status") or {}).get("podIP") or NONE, 1),
        Column("Node", "The name of the node the pod is assigned to.", _spec("nodeName"), 1),
        Column("Nominated Node", "The node the pod is nominated for by preemption.",
               lambda p: (p.get("status") or {}).get("nominatedNodeName") or NONE, 1),
        Column("Readiness Gates", "The readiness gates of the pod that hold.", _readiness_gates, 1),
    ),
    "nodes": (
        NAME,
        Column("Status", "The status of the node.", _node_status),
        Column("Roles", "The roles of the node.", _node_roles),
        AGE,
        Column("Version", "Kubelet version reported by the node.", _node_info("kubeletVersion")),
        Column("Internal-IP", "The internal IP address of the node.", _node_address("InternalIP"), 1),
        Column("External-IP", "The external IP address of the node.", _node_address("ExternalIP"), 1),
        Column("OS-Image", "The OS image reported by the node.", _node_info("osImage", "<unknown>"), 1),
        Column("Kernel-Version", "The kernel version reported by the node.", _node_info("kernelVersion", "<unknown>"), 1),
        Column("Container-Runtime", "The container runtime reported by the node.",
               _node_info("containerRuntimeVersion", "<unknown>"), 1),
    ),
    "namespaces": (
        NAME,
        Column("Status", "The status of the namespace.", lambda ns: (ns.get("status") or {}).get("phase", "")),
        AGE,
    ),
    "events": (
        Column("Last Seen", "The time since the event was last observed.", _event_last_seen),
        Column("Type", "The type of this event (Normal, Warning).", lambda e: e.get("type", "")),
        Column("Reason", "The reason for this event.", lambda e: e.get("reason", "")),
        Column("Object", "The object this event is about.", _event_object),
        Column("Subobject", "The part of the object this event is about.",
               lambda e: (e.get("involvedObject") or {}).get("fieldPath", ""), 1),
        Column("Source", "The component reporting this event.", _event_source, 1),
        Column("Message", "A human-readable description of the event.", lambda e: e.get("message", "")),
        Column("First Seen", "The time since the event was first observed.",
               lambda e: since(e.get("firstTimestamp") or e.get("eventTime")), 1),
        Column("Count", "The number of times this event has occurred.", _count, 1, "integer"),
        Column("Name", "The name of the event.", _name, 1, format="name"),
    ),
    "configmaps": (
        NAME,
        Column("Data", "The number of keys in the configmap.", _data_count, type="integer"),
        AGE,
    ),
    "secrets": (
        NAME,
        Column("Type", "The type of the secret.", lambda s: s.get("type", "Opaque")),
        Column("Data", "The number of keys in the secret.", _data_count, type="integer"),
        AGE,
    ),
    "services": (
        NAME,
        Column("Type", "The type of the service.", _spec("type", "ClusterIP")),
        Column("Cluster-IP", "The cluster IP of the service.", _spec("clusterIP")),
        Column("External-IP", "The external addresses of the service.", _external_ips),
        Column("Port(s)", "The ports of the service.", _service_ports),
        AGE,
    ),
    "jobs": (
        NAME,
        Column("Status", "Status of the job.", _job_status),
        Column("Completions", "The number of pods which reached phase Succeeded.", _job_completions),
        Column("Duration", "Time required to complete the job.", _job_duration),
        AGE,
        TEMPLATE_CONTAINERS,
        TEMPLATE_IMAGES,
        Column("Selector", "A label query over pods that should match the pod count.", _selector, 1),
    ),
    "deployments": (
        NAME,
        Column("Ready", "Number of the pod with ready state", _ready_of_wanted),
        Column("Up-to-date", "Total number of non-terminated pods targeted by this deployment that have the desired "
                             "template spec.", _status_count("updatedReplicas"), type="integer"),
        Column("Available", "Total number of available pods (ready for at least minReadySeconds) targeted by this "
                            "deployment.", _status_count("availableReplicas"), type="integer"),
        AGE,
        TEMPLATE_CONTAINERS,
        TEMPLATE_IMAGES,
        Column("Selector", "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be "
                           "the ones affected by this deployment.", _selector, 1),
    ),
    "replicasets": (
        NAME,
        Column("Desired", "Number of desired pods.", lambda rs: (rs.get("spec") or {}).get("replicas", 0),
               type="integer"),
        Column("Current", "Number of actual pods.", _status_count("replicas"), type="integer"),
        Column("Ready", "Number of ready pods.", _status_count("readyReplicas"), type="integer"),
        AGE,
        TEMPLATE_CONTAINERS,
        TEMPLATE_IMAGES,
        Column("Selector", "Label selector for pods.", _selector, 1),
    ),
    "statefulsets": (
        NAME,
        Column("Ready", "Number of the pod with ready state", _ready_of_wanted),
        AGE,
        TEMPLATE_CONTAINERS,
        TEMPLATE_IMAGES,
    ),
    "daemonsets": (
        NAME,
        Column("Desired", "The total number of nodes that should be running the daemon pod.",
               _status_count("desiredNumberScheduled"), type="integer"),
        Column("Current", "The number of nodes that are running at least 1 daemon pod and are supposed to run the "
                          "daemon pod.", _status_count("currentNumberScheduled"), type="integer"),
        Column("Ready", "The number of nodes that should be running the daemon pod and have one or more of the "
                        "daemon pod running with a Ready Condition.", _status_count("numberReady"), type="integer"),
        Column("Up-to-date", "The total number of nodes that are running updated daemon pod",
               _status_count("updatedNumberScheduled"), type="integer"),
        Column("Available", "The number of nodes that should be running the daemon pod and have one or more of the "
                            "daemon pod running and available.", _status_count("numberAvailable"), type="integer"),
        Column("Node Selector", "NodeSelector is a selector which must be true for the pod to fit on a node.",
               _node_selector),
        AGE,
        TEMPLATE_CONTAINERS,
        TEMPLATE_IMAGES,
        Column("Selector", "A label query over pods that are managed by the daemon set.", _selector, 1),
    ),
    "cronjobs": (
        NAME,
        Column("Schedule", "The schedule in Cron format.", _spec("schedule", "")),
        Column("Timezone", "The time zone name for the given schedule.", _spec("timeZone")),
        Column("Suspend", "This flag tells the controller to suspend subsequent executions.", _suspend,
               type="boolean"),
        Column("Active", "A list of pointers to currently running jobs.",
               lambda cron_job: len((cron_job.get("status") or {}).get("active") or ()), type="integer"),
        Column("Last Schedule", "Information when was the last time the job was successfully scheduled.",
               _last_schedule),
        AGE,
        Column("Containers", "Names of each container in the template.", _job_template_containers("name"), 1),
        Column("Images", "Images referenced by each container in the template.", _job_template_containers("image"),
               1),
        Column("Selector", "A label query over pods that should match the pod count.",
               lambda cron_job: _selector((cron_job.get("spec") or {}).get("jobTemplate") or {}), 1),
    ),
    "priorityclasses": (
        NAME,
        Column("Value", "The priority of the pods of this class.", lambda pc: pc.get("value", 0), type="integer"),
        Column("Global-Default", "Whether this is the default priority class.",
               lambda pc: bool(pc.get("globalDefault")), type="boolean"),
        AGE,
        Column("PreemptionPolicy", "Whether pods of this class may preempt others.",
               lambda pc: pc.get("preemptionPolicy") or "PreemptLowerPriority"),
    ),
}
DEFAULT_COLUMNS = (NAME, AGE)
_INCLUDE = ("PartialObjectMetadata", "Object", "None")


def include_object(query: dict) -> str:
    """The ``includeObject`` query parameter (400 for a value the API does not define)."""
    value = query.get("includeObject") or "PartialObjectMetadata"
    if value not in _INCLUDE:
        raise errors.bad_request(f'includeObject: Unsupported value: "{value}": supported values: '
                                 + ", ".join(f'"{v}"' for v in _INCLUDE))
    return value


class TableMaker:
    """Turns the objects of one kind into Tables, for one request's ``includeObject`` and Table version."""

    def __init__(self, plural: str, version: str, include: str) -> None:
        self.columns = COLUMNS.get(plural, DEFAULT_COLUMNS)
        self.api_version = f"meta.k8s.io/{version}"
        self.include = include

    def of_list(self, listed: dict) -> dict:
        return self._table(dict(listed.get("metadata") or {}), listed.get("items") or [])

    def of_object(self, obj: dict) -> dict:
        return self._table({"resourceVersion": _meta(obj).get("resourceVersion", "")}, [obj])

    def empty(self, resource_version: str) -> dict:
        return self._table({"resourceVersion": resource_version}, [])

    def _table(self, metadata: dict, objects: list[dict]) -> dict:
        definitions = [{"name": c.name, "type": c.type, "format": c.format, "description": c.description,
                        "priority": c.priority} for c in self.columns]
        return {"kind": "Table", "apiVersion": self.api_version, "metadata": metadata,
                "columnDefinitions": definitions, "rows": [self._row(obj) for obj in objects]}

    def _row(self, obj: dict) -> dict:
        row: dict = {"cells": [column.cell(obj) for column in self.columns]}
        if self.include == "Object":
            row["object"] = obj
        elif self.include == "PartialObjectMetadata":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": self.api_version, "metadata": _meta(obj)}
        return row
