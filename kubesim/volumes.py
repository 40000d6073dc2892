"""The PersistentVolume controller of kube-controller-manager, for statically provisioned volumes, and the
API server's DefaultStorageClass admission.

A new volume turns ``Available``. A pending claim is bound to the volume it names (``volumeName``), else
to a volume pre-bound to it (``claimRef``), else to the smallest available volume of its class that
holds its request and offers its access modes; a claim of a ``WaitForFirstConsumer`` class waits for its
pod's scheduler, which binds it (or annotates it for a provisioner). Binding writes the volume's
``claimRef`` and phase ``Bound``, then the claim's ``volumeName``, capacity, access modes and phase
``Bound``, with the controller's ``pv.kubernetes.io/*`` annotations. A volume whose claim is deleted turns
``Released``; a claim whose volume is deleted turns ``Lost``. Nothing is provisioned, recycled or deleted.
"""

from __future__ import annotations

import logging

from kubesim.resources import BY_PLURAL
from kubesim.store import Event, Store, clone
from kubesim.worker import Worker
from si.quantity import parse_quantity

log = logging.getLogger(__name__)
VOLUME, CLAIM = BY_PLURAL["persistentvolumes"], BY_PLURAL["persistentvolumeclaims"]
STORAGE_CLASS = BY_PLURAL["storageclasses"]
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
BIND_COMPLETED, BOUND_BY_CONTROLLER = "pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller"


def default_claim_class(store: Store, claim: dict) -> None:
    """DefaultStorageClass admission: a new claim that names no class gets the default one (if any)."""
    spec = claim.get("spec")
    if not isinstance(spec, dict) or spec.get("storageClassName") is not None:
        return
    defaults = [c for c in store.list(STORAGE_CLASS)[0]
                if ((c["metadata"].get("annotations") or {}).get(DEFAULT_CLASS)) == "true"]
    if defaults:  # the newest default wins, as the plugin picks
        spec["storageClassName"] = max(defaults, key=lambda c: c["metadata"].get("creationTimestamp", ""))[
            "metadata"]["name"]


def _storage(resources) -> object:
    try:
        return parse_quantity((resources or {}).get("storage"))
    except (TypeError, ValueError, ArithmeticError, AttributeError):
        return None


def _refers(volume: dict, claim: dict) -> bool:
    ref = volume["spec"].get("claimRef") or {}
    meta = claim["metadata"]
    return (ref.get("namespace"), ref.get("name")) == (meta["namespace"], meta["name"]) \
        and ref.get("uid") in (None, "", meta["uid"])


class PersistentVolumeController(Worker):
    def __init__(self, store: Store) -> None:
        super().__init__("kubesim-pv-controller")
        self._store = store

    def start(self) -> None:
        with self._store.lock:
            for volume in self._store.list(VOLUME)[0]:
                self.schedule(("volume", "", volume["metadata"]["name"]))
            for claim in self._store.list(CLAIM)[0]:
                self.schedule(("claim", claim["metadata"]["namespace"], claim["metadata"]["name"]))
            self._store.listeners.append(self._on_event)
        super().start()

    def _on_event(self, event: Event) -> None:
        """Called under the store lock: note the volumes and claims to sync."""
        meta = event.new["metadata"]
        if event.kind is VOLUME:
            ref = (event.new.get("spec") or {}).get("claimRef") or {}
            if event.type != "DELETED":
                self.schedule(("volume", "", meta["name"]))
            if ref.get("namespace") and ref.get("name"):
                self.schedule(("claim", ref["namespace"], ref["name"]))
        elif event.kind is CLAIM:
            if event.type != "DELETED":
                self.schedule(("claim", meta["namespace"], meta["name"]))
            volume = (event.new.get("spec") or {}).get("volumeName")
            if volume:
                self.schedule(("volume", "", volume))

    def handle(self, item) -> None:
        what, namespace, name = item
        with self._store.lock:
            if what == "volume":
                volume = self._store.find(VOLUME, "", name)
                if volume is not None:
                    self._sync_volume(volume)
            else:
                claim = self._store.find(CLAIM, namespace, name)
                if claim is not None:
                    self._sync_claim(claim)

    def _sync_volume(self, volume: dict) -> None:
        ref = volume["spec"].get("claimRef") or {}
        phase = (volume.get("status") or {}).get("phase")
        if phase == "Bound" and ref.get("uid"):  # a volume pre-bound by name waits for its claim
            claim = self._store.find(CLAIM, ref.get("namespace", ""), ref.get("name", ""))
            if claim is None or claim["metadata"]["uid"] != ref.get("uid"):
                self._set_phase(VOLUME, volume, "Released")
        elif phase in (None, "", "Pending"):
            self._set_phase(VOLUME, volume, "Available")

    def _sync_claim(self, claim: dict) -> None:
        spec = claim.get("spec") or {}
        phase = (claim.get("status") or {}).get("phase")
        if (claim["metadata"].get("annotations") or {}).get(BIND_COMPLETED) == "yes":
            volume = self._store.find(VOLUME, "", spec.get("volumeName") or "")
            if phase == "Bound" and (volume is None or not _refers(volume, claim)):
                self._set_phase(CLAIM, claim, "Lost")
            return
        if phase not in (None, "", "Pending"):
            return  # bound by someone else (a scheduler's volume binder or a provisioner)
        if spec.get("volumeName"):
            volume = self._store.find(VOLUME, "", spec["volumeName"])
            if volume is not None and self._fits(volume, claim, named=True):
                self._bind(volume, claim)
            return
        if self._delayed(claim):
            return
        candidates = [v for v in self._store.list(VOLUME)[0] if self._fits(v, claim, named=False)]
        prebound = [v for v in candidates if v["spec"].get("claimRef")]
        if prebound or candidates:
            self._bind(prebound[0] if prebound else min(candidates, key=lambda v: (
                _storage(v["spec"].get("capacity")), v["metadata"]["name"])), claim)

    def _delayed(self, claim: dict) -> bool:
        """Whether the claim's class binds when its pod is scheduled (the scheduler's part)."""
        storage_class = self._store.find(STORAGE_CLASS, "", (claim.get("spec") or {}).get("storageClassName") or "")
        return storage_class is not None and storage_class.get("volumeBindingMode") == "WaitForFirstConsumer"

    def _fits(self, volume: dict, claim: dict, named: bool) -> bool:
        spec, wanted = volume.get("spec") or {}, claim.get("spec") or {}
        if spec.get("claimRef"):
            if not _refers(volume, claim):
                return False
        elif not named and (volume.get("status") or {}).get("phase") != "Available":
            return False  # a claim naming the volume takes it whatever its phase, as the controller does
        size, request = _storage(spec.get("capacity")), _storage((wanted.get("resources") or {}).get("requests"))
        return (spec.get("storageClassName") or "") == (wanted.get("storageClassName") or "") \
            and size is not None and (request is None or size >= request) \
            and set(wanted.get("accessModes") or ()) <= set(spec.get("accessModes") or ())

    def _bind(self, volume: dict, claim: dict) -> None:
        meta = claim["metadata"]
        bound_volume = clone(volume)
        if not volume["spec"].get("claimRef"):
            bound_volume["metadata"].setdefault("annotations", {})[BOUND_BY_CONTROLLER] = "yes"
        bound_volume["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": meta["namespace"],
                                            "name": meta["name"], "uid": meta["uid"], "apiVersion": "v1",
                                            "resourceVersion": meta["resourceVersion"]}
        bound_volume["status"] = {"phase": "Bound"}
        self._store.replace(VOLUME, "", volume["metadata"]["name"], bound_volume, None)
        bound_claim = clone(claim)
        annotations = bound_claim["metadata"].setdefault("annotations", {})
        annotations[BIND_COMPLETED] = "yes"
        if not claim["spec"].get("volumeName"):
            annotations[BOUND_BY_CONTROLLER] = "yes"
        bound_claim["spec"]["volumeName"] = volume["metadata"]["name"]
        bound_claim["status"] = {"phase": "Bound", "accessModes": list(volume["spec"].get("accessModes") or ()),
                                 "capacity": dict(volume["spec"].get("capacity") or {})}
        self._store.replace(CLAIM, meta["namespace"], meta["name"], bound_claim, None)

    def _set_phase(self, kind, obj: dict, phase: str) -> None:
        updated = clone(obj)
        updated["status"] = {**(obj.get("status") or {}), "phase": phase}
        meta = obj["metadata"]
        self._store.replace(kind, meta.get("namespace", ""), meta["name"], updated, None)
