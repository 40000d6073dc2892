"""Persistent volumes as kube-scheduler's VolumeBinding plugin sees them, for the pods of the shim.

The shim watches claims, volumes and storage classes (:class:`VolumeCatalog`, kept by the shim
context) and reads a pod's claims before its ask goes to the core (:meth:`VolumeCatalog.resolve`):

* a claim bound to a volume: the volume's ``nodeAffinity`` joins the pod's constraints tag
  (``volumeAffinity``), so the core only considers nodes it allows ("volume node affinity conflict");
* a claim of a ``WaitForFirstConsumer`` class not bound yet: the pod is scheduled without it and the
  claim is bound once the core picked a node, before the pod is bound (:func:`bind_claims`, run by the
  binder): an available volume of the class whose node affinity allows the node is bound to the claim,
  else the claim is annotated ``volume.kubernetes.io/selected-node`` for its provisioner, and the
  binder checks the claim again (without holding a worker) until it is bound, at most
  ``service.volumeBindTimeout``;
* a missing claim, or one pending under an ``Immediate`` class: the pod is held (not submitted) with
  the reason as kube-scheduler words it, until the claim changes.

A pod already on a node (recovery) takes its volumes as given.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import orjson

from actors.base import record
from actors.shim.pods import PodRecord
from si.bounded import shown
from si.gojson import mapping, text
from si.quantity import QuantityError, from_kubernetes

SELECTED_NODE = "volume.kubernetes.io/selected-node"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
DEFAULT_BIND_TIMEOUT = 600.0
NO_PROVISIONER = "kubernetes.io/no-provisioner"


@record
class ClaimRecord:
    namespace: str
    name: str
    uid: str
    resource_version: str
    storage_class: str | None  # None: not set (the default class applies)
    volume_name: str
    phase: str
    storage: int  # requested bytes
    access_modes: tuple[str, ...]
    selected_node: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@record
class VolumeRecord:
    name: str
    resource_version: str
    storage_class: str
    storage: int
    access_modes: tuple[str, ...]
    node_affinity: tuple  # required nodeSelectorTerms (raw JSON), () when any node may use it
    claim: str  # "namespace/name" of its claimRef, "" when none
    phase: str

    @property
    def key(self) -> str:
        return self.name


@record
class StorageClassRecord:
    name: str
    resource_version: str
    binding_mode: str
    provisioner: str
    default: bool

    @property
    def key(self) -> str:
        return self.name


def _storage(resources: object) -> int:
    try:
        return from_kubernetes({"storage": mapping(resources).get("storage") or "0"}).get("storage", 0)
    except QuantityError:  # a malformed quantity asks for nothing we can compare: match on the rest
        return 0


def parse_claim(raw: Mapping) -> ClaimRecord:
    metadata, spec = mapping(raw.get("metadata")), mapping(raw.get("spec"))
    namespace, name = text(metadata.get("namespace")), text(metadata.get("name"))
    if not name or not namespace:
        raise ValueError(f"claim without a namespace or name: {shown(metadata)}")
    storage_class = spec.get("storageClassName")
    return ClaimRecord(namespace, name, text(metadata.get("uid")), text(metadata.get("resourceVersion")),
                       storage_class if storage_class is None else text(storage_class),
                       text(spec.get("volumeName")), text(mapping(raw.get("status")).get("phase")) or "Pending",
                       _storage(mapping(spec.get("resources")).get("requests")), _texts(spec.get("accessModes")),
                       text(mapping(metadata.get("annotations")).get(SELECTED_NODE)))


def parse_volume(raw: Mapping) -> VolumeRecord:
    metadata, spec = mapping(raw.get("metadata")), mapping(raw.get("spec"))
    name = text(metadata.get("name"))
    if not name:
        raise ValueError(f"volume without a name: {shown(metadata)}")
    ref = mapping(spec.get("claimRef"))
    terms = mapping(mapping(spec.get("nodeAffinity")).get("required")).get("nodeSelectorTerms") or ()
    return VolumeRecord(name, text(metadata.get("resourceVersion")), text(spec.get("storageClassName")),
                        _storage(spec.get("capacity")), _texts(spec.get("accessModes")),
                        tuple(t for t in terms if isinstance(t, Mapping)) if isinstance(terms, list) else (),
                        f"{text(ref.get('namespace'))}/{ref['name']}" if text(ref.get("name")) else "",
                        text(mapping(raw.get("status")).get("phase")) or "Available")


def parse_storage_class(raw: Mapping) -> StorageClassRecord:
    metadata = mapping(raw.get("metadata"))
    name = text(metadata.get("name"))
    if not name:
        raise ValueError(f"storage class without a name: {shown(metadata)}")
    return StorageClassRecord(name, text(metadata.get("resourceVersion")),
                              text(raw.get("volumeBindingMode")) or "Immediate", text(raw.get("provisioner")),
                              mapping(metadata.get("annotations")).get(DEFAULT_CLASS_ANNOTATION) == "true")


def _texts(value: object) -> tuple[str, ...]:
    return tuple(item for item in value if isinstance(item, str)) if isinstance(value, list | tuple) else ()


class VolumeCatalog:
    """The claims, volumes and classes the informers reported (the shim context's thread only)."""

    def __init__(self) -> None:
        self.claims: dict[str, ClaimRecord] = {}
        self.volumes: dict[str, VolumeRecord] = {}
        self.classes: dict[str, StorageClassRecord] = {}

    def remember(self, record, deleted: bool) -> None:
        cache = (self.claims if isinstance(record, ClaimRecord) else
                 self.volumes if isinstance(record, VolumeRecord) else self.classes)
        if deleted:
            cache.pop(record.key, None)
        else:
            cache[record.key] = record

    def class_of(self, claim: ClaimRecord) -> StorageClassRecord | None:
        if claim.storage_class is None:
            return next((c for c in self.classes.values() if c.default), None)
        return self.classes.get(claim.storage_class)

    def resolve(self, pod: PodRecord) -> PodRecord:
        """``pod`` with what its claims ask: the bound volumes' node affinity in its constraints, the
        claims to bind at bind time, or the reason it must wait."""
        if not pod.claims or pod.assigned:
            return pod
        if READ_WRITE_ONCE_POD not in pod.ignored and any(
                "ReadWriteOncePod" in getattr(self.claims.get(f"{pod.namespace}/{name}"), "access_modes", ())
                for name in pod.claims):
            pod = dataclasses.replace(pod, ignored=(*pod.ignored, READ_WRITE_ONCE_POD))
        terms: list = []
        choices: list = []
        late: list[str] = []
        for name in pod.claims:
            claim = self.claims.get(f"{pod.namespace}/{name}")
            if claim is None:
                return _held(pod, f'persistentvolumeclaim "{name}" not found')
            if claim.volume_name and claim.phase == "Bound":
                volume = self.volumes.get(claim.volume_name)
                if volume is None:
                    return _held(pod, f'persistentvolume "{claim.volume_name}" of claim "{name}" not found')
                if volume.node_affinity:
                    terms.append(list(volume.node_affinity))
                continue
            storage_class = self.class_of(claim)
            if storage_class is not None and storage_class.binding_mode == WAIT_FOR_FIRST_CONSUMER:
                late.append(name)
                found = self._choices(claim, storage_class)
                if found is not None:
                    choices.append(found)
                continue
            return _held(pod, "pod has unbound immediate PersistentVolumeClaims")
        constraints = pod.constraints
        if terms or choices:
            document = orjson.loads(constraints) if constraints else {}
            if terms:
                document["volumeAffinity"] = terms
            if choices:
                document["volumeChoices"] = choices
            constraints = orjson.dumps(document, option=orjson.OPT_SORT_KEYS).decode()
        return dataclasses.replace(pod, constraints=constraints, volume_wait="", late_claims=tuple(late))

    def _choices(self, claim: ClaimRecord, storage_class: StorageClassRecord) -> list | None:
        """For a claim only static volumes can serve (class without provisioner): the node affinities of
        the volumes that could be bound to it (any one will do); ``None`` when some node-free volume or a
        provisioner can serve it anywhere."""
        if storage_class.provisioner != NO_PROVISIONER:
            return None
        choices = []
        for volume in self.volumes.values():
            if _fits(claim, volume):
                if not volume.node_affinity:
                    return None
                choices.append(list(volume.node_affinity))
        return choices


READ_WRITE_ONCE_POD = "ReadWriteOncePod claims (one pod at a time: volume restrictions)"


def _held(pod: PodRecord, reason: str) -> PodRecord:
    return dataclasses.replace(pod, volume_wait=reason, late_claims=())


# ---- binding a pod's WaitForFirstConsumer claims (on a binder worker) --------------------------------

MERGE_PATCH = "application/merge-patch+json"


def bind_claims(client, namespace: str, claims: tuple[str, ...], node: str, node_matches) -> tuple[str, ...]:
    """Bind ``claims`` (WaitForFirstConsumer) for a pod going to ``node``: an available volume of the
    claim's class that fits it and whose node affinity allows ``node`` is bound to it (the volume's
    ``claimRef``, the claim's ``volumeName``, both phases ``Bound``); without one, the claim is annotated
    with the node for its provisioner. Returns the claims left to their provisioner (see
    :func:`unbound_claims`). ``node_matches(terms, node_json)`` evaluates a volume's nodeSelectorTerms."""
    node_json = client.request_retrying("GET", f"/api/v1/nodes/{node}")
    provisioned = []
    for name in claims:
        path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}"
        claim = parse_claim(client.request_retrying("GET", path))
        if claim.phase == "Bound":
            continue
        volumes, _ = client.list("/api/v1/persistentvolumes")
        chosen = _best_volume(claim, [parse_volume(v) for v in volumes], node_json, node_matches)
        if chosen is None:
            client.request_retrying("PATCH", path, body={"metadata": {"annotations": {SELECTED_NODE: node}}},
                                    content_type=MERGE_PATCH)
            provisioned.append(name)
            continue
        volume_path = f"/api/v1/persistentvolumes/{chosen.name}"
        client.request_retrying("PATCH", volume_path, body={"spec": {"claimRef": {
            "kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": namespace, "name": name,
            "uid": claim.uid}}}, content_type=MERGE_PATCH)
        client.request_retrying("PATCH", f"{volume_path}/status", body={"status": {"phase": "Bound"}},
                                content_type=MERGE_PATCH)
        client.request_retrying("PATCH", path, body={"spec": {"volumeName": chosen.name}}, content_type=MERGE_PATCH)
        client.request_retrying("PATCH", f"{path}/status", body={"status": {"phase": "Bound"}},
                                content_type=MERGE_PATCH)
    return tuple(provisioned)


def unbound_claims(client, namespace: str, claims: tuple[str, ...]) -> tuple[str, ...]:
    """Those of ``claims`` not bound yet (their provisioner has not answered)."""
    return tuple(name for name in claims if parse_claim(client.request_retrying(
        "GET", f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}")).phase != "Bound")


def _fits(claim: ClaimRecord, volume: VolumeRecord) -> bool:
    """Whether ``volume`` is available and could serve ``claim`` (class, size, access modes)."""
    return (not volume.claim and volume.phase == "Available" and volume.storage_class == (claim.storage_class or "")
            and volume.storage >= claim.storage and set(claim.access_modes) <= set(volume.access_modes))


def _best_volume(claim: ClaimRecord, volumes: list[VolumeRecord], node_json: Mapping, node_matches):
    """The smallest available volume that fits the claim on the node (as the PV controller picks)."""
    fitting = [v for v in volumes if _fits(claim, v) and (not v.node_affinity or node_matches(v.node_affinity,
                                                                                              node_json))]
    return min(fitting, key=lambda v: (v.storage, v.name), default=None)
