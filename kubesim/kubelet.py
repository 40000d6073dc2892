"""Simulated kubelets: a bound pod starts running after a delay; pods finish when told to."""

from __future__ import annotations

import heapq
import threading
import time

from kubesim import errors
from kubesim.resources import POD
from kubesim.store import Event, Store, clone, now_rfc3339


class Kubelets:
    def __init__(self, store: Store, delay: float) -> None:
        self._store = store
        self._delay = delay
        self._due: list[tuple[float, str, str, str]] = []
        self._wake = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="kubesim-kubelets", daemon=True)

    def start(self) -> None:
        self._store.listeners.append(self._on_event)
        self._thread.start()

    def stop(self) -> None:
        with self._wake:
            self._stopped = True
            self._wake.notify()
        self._thread.join(timeout=5)

    def _on_event(self, event: Event) -> None:
        """Called under the store lock: note pods that just got a node."""
        if event.kind is not POD or event.type != "MODIFIED":
            return
        if event.old.get("spec", {}).get("nodeName") or not event.new.get("spec", {}).get("nodeName"):
            return
        meta = event.new["metadata"]
        with self._wake:
            heapq.heappush(self._due, (time.monotonic() + self._delay, meta["namespace"], meta["name"], meta["uid"]))
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._stopped and (not self._due or self._due[0][0] > time.monotonic()):
                    self._wake.wait(timeout=None if not self._due else self._due[0][0] - time.monotonic())
                if self._stopped:
                    return
                _, namespace, name, uid = heapq.heappop(self._due)
            set_phase(self._store, namespace, name, "Running", uid=uid)


def set_phase(store: Store, namespace: str, name: str, phase: str, uid: str | None = None) -> dict | None:
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
        conditions = [c for c in status.get("conditions", []) if c.get("type") not in ("Ready", "ContainersReady")]
        conditions += [{"type": "Ready", "status": ready, "lastTransitionTime": now},
                       {"type": "ContainersReady", "status": ready, "lastTransitionTime": now}]
        status["conditions"] = conditions
        return store.replace(POD, namespace, name, updated, None)
