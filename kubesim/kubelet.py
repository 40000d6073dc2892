"""Simulated kubelets: a pod on a node runs after a delay (and its init containers' sleeps), ends when its
containers would, and a pod deleted gracefully goes when its grace period is over.

A container ends after N seconds when its command is ``sleep N`` (also ``sh -c "sleep N"``; N may carry
an ``s``, ``m``, ``h`` or ``d`` suffix, as ``sleep`` takes it), or the pod's ``kubesim/run-seconds``
annotation gives N; a pod ends with its longest container. A container that ends under restartPolicy
``Always`` is restarted (its restartCount grows) and the pod keeps running; otherwise the pod turns
Succeeded. Run times and grace periods are multiplied by ``time_factor``, so a suite can shorten them.
A running pod that is deleted gets the kubelet's ``Killing`` event for each of its containers.

A running pod whose resources were resized (``pods/{name}/resize``) is resized in place after the delay, as
a 1.33 kubelet does: a resize larger than the node's allocatable is ``Infeasible``, one the other pods on the
node leave no room for is ``Deferred`` (a ``PodResizePending`` condition; retried when a pod on the node
goes or shrinks); one that fits is allocated (``allocatedResources``, ``PodResizeInProgress``) and, after
the delay again, actuated (the container statuses' ``resources``).
"""

from __future__ import annotations

import re
import time
from pathlib import PurePosixPath

from kubesim import errors
from kubesim.resources import BY_PLURAL, NAMESPACE, NODE, POD
from kubesim.store import Event, Store, clone, now_rfc3339
from kubesim.worker import Worker
from si.quantity import parse_quantity

RUN_SECONDS = "kubesim/run-seconds"
_SLEEP_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_SLEEP_ARG = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)([smhd]?)$")
_SHELL_SLEEP = re.compile(r"^\s*(?:exec\s+)?sleep\s+(\S+)\s*;?\s*$")
_SHELLS = {"sh", "bash", "ash", "dash"}
EVENT = BY_PLURAL["events"]
RESIZE_PENDING, RESIZE_IN_PROGRESS = "PodResizePending", "PodResizeInProgress"
_RESIZED = ("cpu", "memory")


def sleep_seconds(argument: str) -> float | None:
    matched = _SLEEP_ARG.match(argument)
    return float(matched.group(1)) * _SLEEP_UNITS[matched.group(2)] if matched else None


def container_seconds(container: dict) -> float | None:
    """How long the container runs, when its command says (None: until stopped)."""
    command, args = container.get("command") or [], container.get("args") or []
    if not isinstance(command, list) or not isinstance(args, list):
        return None
    argv = command + args
    if not all(isinstance(arg, str) for arg in argv) or not argv:
        return None
    program = PurePosixPath(argv[0]).name
    if program == "sleep" and len(argv) == 2:
        return sleep_seconds(argv[1])
    if program in _SHELLS and len(argv) == 3 and argv[1] == "-c":
        matched = _SHELL_SLEEP.match(argv[2])
        return sleep_seconds(matched.group(1)) if matched else None
    return None


def run_seconds(pod: dict) -> tuple[float | None, bool]:
    """(how long the pod runs, whether it then ends whatever its restart policy): None runs until stopped."""
    annotated = ((pod.get("metadata") or {}).get("annotations") or {}).get(RUN_SECONDS)
    if isinstance(annotated, str) and sleep_seconds(annotated) is not None:
        return sleep_seconds(annotated), True
    containers = (pod.get("spec") or {}).get("containers") or ()
    times = [container_seconds(c) if isinstance(c, dict) else None for c in containers]
    if not times or None in times:
        return None, False
    return max(times), False


def init_seconds(pod: dict) -> float:
    """How long the pod's init containers run, one after the other (one of unknown length ends at once)."""
    containers = (pod.get("spec") or {}).get("initContainers") or ()
    return sum(container_seconds(c) or 0.0 for c in containers if isinstance(c, dict))


class Kubelets(Worker):
    def __init__(self, store: Store, delay: float, time_factor: float = 1.0, resize: bool = True) -> None:
        super().__init__("kubesim-kubelets")
        self._store = store
        self._delay = delay
        self._time_factor = time_factor
        self._resize = resize
        self._deferred: dict[str, set[tuple[str, str, str]]] = {}  # node -> pods whose resize waits for room

    def start(self) -> None:
        self._store.listeners.append(self._on_event)
        super().start()

    def _on_event(self, event: Event) -> None:
        """Called under the store lock: note pods that just got a node, a deletion deadline, or containers to stop."""
        if event.kind is not POD:
            return
        meta, old = event.new["metadata"], event.old or {}
        key = (meta["namespace"], meta["name"], meta["uid"])
        if _stopping(event):
            containers = tuple(c.get("name") for c in event.new["spec"].get("containers") or () if isinstance(c, dict))
            self.schedule(("kill", *key, event.new["spec"].get("nodeName") or "", containers))
        if self._resize:
            self._note_resize(event, key)
        if event.type == "DELETED":
            return
        if event.new["spec"].get("nodeName") and not old.get("spec", {}).get("nodeName"):
            self.schedule(("start", *key), self._delay + init_seconds(event.new) * self._time_factor)
        deadline = meta.get("deletionTimestamp")
        if deadline and deadline != old.get("metadata", {}).get("deletionTimestamp"):
            self.schedule(("remove", *key), meta.get("deletionGracePeriodSeconds", 0) * self._time_factor)

    def _note_resize(self, event: Event, key: tuple[str, str, str]) -> None:
        """Under the store lock: a running pod resized, or room made on a node where a resize waits."""
        node = event.new["spec"].get("nodeName")
        if not node:
            return
        old = event.old or {}
        if event.type == "MODIFIED" and old["metadata"].get("generation") != event.new["metadata"].get("generation") \
                and _requested(old["spec"]) != _requested(event.new["spec"]):  # a spec change: compare requests
            self.schedule(("resize", *key), self._delay)
        waiting = self._deferred.get(node)
        if not waiting or event.old is None:
            return
        if event.type == "DELETED":
            waiting.discard(key)
        gone = event.type == "DELETED" or (event.new.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        if gone or _allocated(event.new) != _allocated(event.old):
            for other in waiting - {key}:
                self.schedule(("resize", *other))

    def handle(self, item) -> None:
        if item[0] == "kill":
            self._record_killing(*item[1:])
            return
        if item[0] in ("resize", "actuate"):
            self._resize_pod(*item)
            return
        action, namespace, name, uid = item
        with self._store.lock:
            pod = self._store.find(POD, namespace, name)
            if pod is None or pod["metadata"]["uid"] != uid:
                return
            if action == "remove":
                self._store.delete(POD, namespace, name)
                return
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed") or (action == "finish" and phase != "Running"):
                return
            seconds, ends = run_seconds(pod)
            restarts = action == "finish" and not ends and pod["spec"].get("restartPolicy", "Always") == "Always"
            if action == "start" or restarts:
                set_phase(self._store, namespace, name, "Running", uid, restarted=restarts)
                if seconds is not None:
                    self.schedule(("finish", namespace, name, uid), seconds * self._time_factor)
            else:
                set_phase(self._store, namespace, name, "Succeeded", uid)

    def _resize_pod(self, action: str, namespace: str, name: str, uid: str) -> None:
        with self._store.lock:
            pod = self._store.find(POD, namespace, name)
            if pod is None or pod["metadata"]["uid"] != uid:
                return
            node = pod["spec"].get("nodeName", "")
            self._deferred.get(node, set()).discard((namespace, name, uid))
            if (pod.get("status") or {}).get("phase") != "Running":
                return
            updated = clone(pod)
            status = updated["status"]
            if action == "actuate":
                for container_status in status.get("containerStatuses") or ():
                    container = _container(pod, container_status.get("name"))
                    if container is not None:
                        container_status["resources"] = _applied(container)
                _set_condition(status, RESIZE_IN_PROGRESS, None)
            elif _requested(pod["spec"]) == _allocated(pod):
                _set_condition(status, RESIZE_PENDING, None)
            else:
                refusal = self._refusal(pod, node)
                if refusal is not None:
                    reason, message = refusal
                    _set_condition(status, RESIZE_PENDING, reason, message)
                    if reason == "Deferred":
                        self._deferred.setdefault(node, set()).add((namespace, name, uid))
                else:
                    for container_status in status.get("containerStatuses") or ():
                        container = _container(pod, container_status.get("name"))
                        if container is not None:
                            container_status["allocatedResources"] = clone(_resources(container, "requests"))
                    _set_condition(status, RESIZE_PENDING, None)
                    _set_condition(status, RESIZE_IN_PROGRESS, "")
                    self.schedule(("actuate", namespace, name, uid), self._delay)
            self._store.replace(POD, namespace, name, updated, None)

    def _refusal(self, pod: dict, node_name: str) -> tuple[str, str] | None:
        """Why the node cannot take the pod's resize now, as the kubelet words it (None: it can)."""
        node = self._store.find(NODE, "", node_name)
        allocatable = ((node or {}).get("status") or {}).get("allocatable") or {}
        capacity = {name: _units(name, allocatable.get(name)) for name in _RESIZED}
        wanted = _pod_request(_requested(pod["spec"]))
        for name in ("memory", "cpu"):  # the kubelet names memory first
            if capacity[name] is not None and wanted[name] > capacity[name]:
                return "Infeasible", (f"Node didn't have enough capacity: {name}, requested: {wanted[name]}, "
                                      f"capacity: {capacity[name]}")
        used = dict.fromkeys(_RESIZED, 0)
        for other in self._store.list(POD, None, None)[0]:
            if other["spec"].get("nodeName") == node_name and other["metadata"]["uid"] != pod["metadata"]["uid"] \
                    and (other.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                for name, amount in _pod_request(_allocated(other)).items():
                    used[name] += amount
        for name in _RESIZED:
            if capacity[name] is not None and used[name] + wanted[name] > capacity[name]:
                return "Deferred", (f"Node didn't have enough resource: {name}, requested: {wanted[name]}, "
                                    f"used: {used[name]}, capacity: {capacity[name]}")
        return None

    def _record_killing(self, namespace: str, name: str, uid: str, node: str, containers: tuple[str, ...]) -> None:
        """The kubelet's ``Killing`` events, as its recorder writes them."""
        with self._store.lock:
            if self._store.find(NAMESPACE, "", namespace) is None:
                return
            now = now_rfc3339()
            for container in containers:
                self._store.create(EVENT, namespace, {
                    "apiVersion": "v1", "kind": "Event",
                    "metadata": {"name": f"{name}.{time.time_ns():x}", "namespace": namespace},
                    "involvedObject": {"kind": "Pod", "namespace": namespace, "name": name, "uid": uid,
                                       "apiVersion": "v1", "fieldPath": f"spec.containers{{{container}}}"},
                    "reason": "Killing", "message": f"Stopping container {container}",
                    "source": {"component": "kubelet", "host": node}, "firstTimestamp": now, "lastTimestamp": now,
                    "count": 1, "type": "Normal", "eventTime": None, "reportingComponent": "kubelet",
                    "reportingInstance": node})


def _stopping(event: Event) -> bool:
    """Whether the kubelet now stops the running containers of the pod (deleted, or its deletion begun)."""
    before = event.old or {}
    if (before.get("status") or {}).get("phase") != "Running" or before["metadata"].get("deletionTimestamp"):
        return False
    return event.type == "DELETED" or bool(event.new["metadata"].get("deletionTimestamp"))


def _resources(container: dict, key: str) -> dict:
    resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
    values = resources.get(key)
    return values if isinstance(values, dict) else {}


def _requested(spec: dict) -> dict[str, dict]:
    """The requests of the pod's containers, by name (what a resize changes)."""
    return {c.get("name"): _resources(c, "requests") for c in spec.get("containers") or () if isinstance(c, dict)}


def _allocated(pod: dict) -> dict[str, dict]:
    """What the kubelet allocated to each container (its requests until the kubelet reported)."""
    allocated = _requested(pod.get("spec") or {})
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        if status.get("name") in allocated and status.get("allocatedResources") is not None:
            allocated[status["name"]] = status["allocatedResources"]
    return allocated


def _units(name: str, quantity) -> int | None:
    """A quantity in the kubelet's units: millicores for cpu, bytes otherwise (None: absent or unreadable)."""
    if quantity is None:
        return None
    try:
        amount = parse_quantity(quantity)
    except (TypeError, ValueError, ArithmeticError):
        return None
    return int(amount * 1000) if name == "cpu" else int(amount)


def _pod_request(requests: dict[str, dict]) -> dict[str, int]:
    totals = dict.fromkeys(_RESIZED, 0)
    for values in requests.values():
        for name in _RESIZED:
            totals[name] += _units(name, values.get(name)) or 0
    return totals


def _container(pod: dict, name) -> dict | None:
    return next((c for c in pod["spec"].get("containers") or () if isinstance(c, dict) and c.get("name") == name),
                None)


def _applied(container: dict) -> dict:
    """A container status's ``resources``: the requests and limits the runtime applied (the kubelet reads cpu
    and memory back from the runtime and copies the others from what it allocated)."""
    return {key: clone(values) for key in ("requests", "limits") if (values := _resources(container, key))}


def _set_condition(status: dict, kind: str, reason: str | None, message: str = "") -> None:
    """Set (reason not None; "" for none) or drop the pod condition ``kind``, keeping its transition time
    when it stays the same, so that a repeated verdict writes nothing."""
    conditions = status.get("conditions") or []
    before = next((c for c in conditions if c.get("type") == kind), None)
    kept = [c for c in conditions if c.get("type") != kind]
    if reason is not None:
        condition = {"type": kind, "status": "True", "lastProbeTime": None,
                     "lastTransitionTime": now_rfc3339(), **({"reason": reason} if reason else {}),
                     **({"message": message} if message else {})}
        if before is not None and {**before, "lastTransitionTime": None} == {**condition, "lastTransitionTime": None}:
            condition = before
        kept.append(condition)
    status["conditions"] = kept


def _container_statuses(pod: dict, phase: str, now: str, restarted: bool) -> list[dict]:
    previous = {s.get("name"): s for s in (pod.get("status") or {}).get("containerStatuses") or ()}
    statuses = []
    for container in pod["spec"].get("containers") or ():
        name = container.get("name")
        before = previous.get(name) or {}
        started = ((before.get("state") or {}).get("running") or {}).get("startedAt", now)
        if phase == "Running":
            state = {"running": {"startedAt": now if restarted else started}}
        else:
            code = 0 if phase == "Succeeded" else 1
            state = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                                    "startedAt": started, "finishedAt": now,
                                    "containerID": f"kubesim://{pod['metadata']['uid']}/{name}"}}
        running = phase == "Running"
        # what the kubelet allocated stays as it was: a resize not yet applied does not change it
        allocated = before.get("allocatedResources", clone(_resources(container, "requests")))
        statuses.append({"name": name, "image": container.get("image", ""), "imageID": "",
                         "containerID": f"kubesim://{pod['metadata']['uid']}/{name}", "ready": running,
                         "started": running, "restartCount": before.get("restartCount", 0) + (1 if restarted else 0),
                         "state": state, **({"allocatedResources": allocated} if allocated else {}),
                         "resources": before.get("resources", _applied(container))})
    return statuses


def set_phase(store: Store, namespace: str, name: str, phase: str, uid: str | None = None,
              restarted: bool = False) -> dict | None:
    """Move a pod to ``phase`` as its kubelet would report it; None if it is gone (or replaced)."""
    with store.lock:
        try:
            pod = store.get(POD, namespace, name)
        except errors.ApiError:
            return None
        if uid is not None and pod["metadata"]["uid"] != uid:
            return None
        updated = clone(pod)
        status = updated.setdefault("status", {})
        status["phase"] = phase
        now = now_rfc3339()
        status.setdefault("startTime", now)
        ready = "True" if phase == "Running" else "False"
        reason = {} if phase in ("Running", "Pending") else {"reason": "PodCompleted"}
        conditions = [c for c in status.get("conditions", [])
                      if c.get("type") not in ("Initialized", "Ready", "ContainersReady")]
        conditions += [{"type": "Initialized", "status": "True", "lastTransitionTime": now, **reason},
                       {"type": "Ready", "status": ready, "lastTransitionTime": now, **reason},
                       {"type": "ContainersReady", "status": ready, "lastTransitionTime": now, **reason}]
        status["conditions"] = conditions
        status["containerStatuses"] = _container_statuses(pod, phase, now, restarted)
        return store.replace(POD, namespace, name, updated, None)
