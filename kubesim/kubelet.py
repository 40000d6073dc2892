"""Simulated kubelets: a pod on a node runs after a delay (and its init containers' sleeps), ends when its
containers would, and a pod deleted gracefully goes when its grace period is over.

A container ends after N seconds when its command is ``sleep N`` (also ``sh -c "sleep N"``; N may carry
an ``s``, ``m``, ``h`` or ``d`` suffix, as ``sleep`` takes it), or the pod's ``kubesim/run-seconds``
annotation gives N; a pod ends with its longest container. A container that ends under restartPolicy
``Always`` is restarted (its restartCount grows) and the pod keeps running; otherwise the pod turns
Succeeded. Run times and grace periods are multiplied by ``time_factor``, so a suite can shorten them.
A running pod that is deleted gets the kubelet's ``Killing`` event for each of its containers.
"""

from __future__ import annotations

import re
import time
from pathlib import PurePosixPath

from kubesim import errors
from kubesim.resources import BY_PLURAL, NAMESPACE, POD
from kubesim.store import Event, Store, clone, now_rfc3339
from kubesim.worker import Worker

RUN_SECONDS = "kubesim/run-seconds"
_SLEEP_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_SLEEP_ARG = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)([smhd]?)$")
_SHELL_SLEEP = re.compile(r"^\s*(?:exec\s+)?sleep\s+(\S+)\s*;?\s*$")
_SHELLS = {"sh", "bash", "ash", "dash"}
EVENT = BY_PLURAL["events"]


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
    def __init__(self, store: Store, delay: float, time_factor: float = 1.0) -> None:
        super().__init__("kubesim-kubelets")
        self._store = store
        self._delay = delay
        self._time_factor = time_factor

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
        if event.type == "DELETED":
            return
        if event.new["spec"].get("nodeName") and not old.get("spec", {}).get("nodeName"):
            self.schedule(("start", *key), self._delay + init_seconds(event.new) * self._time_factor)
        deadline = meta.get("deletionTimestamp")
        if deadline and deadline != old.get("metadata", {}).get("deletionTimestamp"):
            self.schedule(("remove", *key), meta.get("deletionGracePeriodSeconds", 0) * self._time_factor)

    def handle(self, item) -> None:
        if item[0] == "kill":
            self._record_killing(*item[1:])
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
        statuses.append({"name": name, "image": container.get("image", ""), "imageID": "",
                         "containerID": f"kubesim://{pod['metadata']['uid']}/{name}", "ready": running,
                         "started": running, "restartCount": before.get("restartCount", 0) + (1 if restarted else 0),
                         "state": state})
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
