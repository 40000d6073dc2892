"""Pods as the shim sees them: a ``PodRecord`` parsed once from the API's JSON.

The informer hands raw JSON dicts (no client models: they cost more than the scheduling) to
``parse_pod``, which extracts what the shim needs: who schedules the pod, its application, queue and
user, its resource request and its node constraints. Content the API server would have refused (a
malformed quantity, a bad constraint, unreadable user info) does not raise: the record carries the
reason in ``invalid`` and the shim rejects the task with that reason.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import sys
import threading
import types
from collections.abc import Mapping
from datetime import datetime

import msgspec
import orjson

from actors.base import record, slot_setter
from actors.shim import constraints, keys
from si import gojson
from si.bounded import elide, shown
from si.constants import PODS
from si.gonumber import INT32_MAX, INT32_MIN, INT64_MAX, in_range
from si.kubernetes import (
    ANNOTATION_APP_ID,
    ANNOTATION_QUEUE,
    ANNOTATION_USER_INFO,
    LABEL_DISABLE_STATE_AWARE,
    SCHEDULER_NAME,
    UNIQUE_AUTOGEN_SUFFIX,
    application_id,
    named_application_id,
    named_queue,
)
from si.quantity import QuantityError, from_kubernetes, si_name, to_si_value
from si.resources import Resource

# The kubelet's verdict on an in-place resize it cannot apply (KEP-1287; ``status.resize`` before 1.33).
RESIZE_PENDING, INFEASIBLE = "PodResizePending", "Infeasible"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
TERMINATED_PHASES = frozenset({SUCCEEDED, FAILED})
_EMPTY: Mapping[str, str] = types.MappingProxyType({})
# What walking a spec of the wrong shape raises (a string where an object belongs, a list where a
# string does), and what the constraint code refuses.
_SHAPE_ERRORS = (ValueError, TypeError, AttributeError, KeyError)


@record
class PodRecord:
    """The facts of one pod the shim acts on; immutable, so actors may pass it around."""

    uid: str
    namespace: str
    name: str
    resource_version: str
    scheduler_name: str
    node_name: str
    phase: str
    deleting: bool
    labels: Mapping[str, str]
    app_id: str
    app_id_named: bool
    queue: str
    user: str
    groups: tuple[str, ...]
    disable_state_aware: bool
    resource: Resource
    priority: int | None
    priority_class: str
    static: bool
    created: float
    constraints: str
    required_node: str
    gated: bool
    invalid: str = ""
    task_group: str = ""  # the gang's task group the pod belongs to
    task_groups: str = ""  # the gang's declaration (JSON), read by the application (see ``gang``)
    policy_parameters: str = ""
    placeholder: bool = False  # marked as a placeholder (the context checks the shim made it: ``placeholders.made``)
    owner_pod: str = ""  # the uid of the pod that owns it (a placeholder's: its application's originator)
    ignored: tuple[str, ...] = ()  # constraints the shim does not enforce (see ``constraints.ignored``)
    claims: tuple[str, ...] = ()  # its persistent volume claims, by name
    volume_wait: str = ""  # why its claims keep it from being scheduled (see ``volumes``)
    late_claims: tuple[str, ...] = ()  # WaitForFirstConsumer claims to bind once it has a node

    @property
    def namespace_selectors(self) -> bool:
        """Its pod affinity terms name namespaces by label (resolved by the shim, ``topology``)."""
        return '"nsSelector"' in self.constraints

    @property
    def held(self) -> bool:
        """Not to be scheduled yet: scheduling gates, or claims it waits for."""
        return self.gated or bool(self.volume_wait)
    allow_preemption: bool | None = None  # may be a victim (annotation; None: its PriorityClass decides)
    preempts: bool = True  # may preempt others (spec.preemptionPolicy other than Never)

    @property
    def key(self) -> str:
        return self.uid

    @property
    def yunikorn(self) -> bool:
        """Scheduled by YuniKorn (else the pod is foreign: it only takes room on its node)."""
        return self.scheduler_name == SCHEDULER_NAME

    @property
    def assigned(self) -> bool:
        return bool(self.node_name)

    @property
    def terminated(self) -> bool:
        return self.phase in TERMINATED_PHASES

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"


def parse_pod(raw: Mapping) -> PodRecord:
    """A ``PodRecord`` from a pod's JSON, whatever its content. Raises ``ValueError`` only when the pod
    has no identity (a uid, namespace and name, each a string)."""
    return _parse(raw)[0]


def _parse(raw: Mapping) -> tuple[PodRecord, _Facts | None]:
    """The pod's record, and the facts it shares with others (read without its node), when it does."""
    # Type checks first: a JSON object is a dict, and the Mapping check costs more (every pod listed passes here).
    if type(raw) is not dict:
        raw = gojson.mapping(raw)
    metadata = raw.get("metadata")
    if type(metadata) is not dict:
        metadata = gojson.mapping(metadata)
    uid, namespace, name = metadata.get("uid"), metadata.get("namespace"), metadata.get("name")
    if not (uid and namespace and name and isinstance(uid, str) and isinstance(namespace, str)
            and isinstance(name, str)):
        raise ValueError(f"pod without uid, namespace or name: {shown(metadata)}")
    spec = raw.get("spec") or {}
    node = spec.get("nodeName") if type(spec) is dict or isinstance(spec, Mapping) else None
    if node is None or isinstance(node, str):
        facts, shared = _shared_facts(metadata, spec, namespace)
        constraint_tag = _node_constraints(node, facts) if node else facts.constraints
    else:  # a node of another type, even a falsy one: read for this pod
        shared, facts = None, _read_facts(metadata, spec, namespace)
        constraint_tag = facts.constraints
    status = raw.get("status")
    phase = (status if type(status) is dict else gojson.mapping(status)).get("phase")
    version = metadata.get("resourceVersion")
    record = _make_record(
        uid, name, version if isinstance(version, str) else "",
        sys.intern(node) if node and isinstance(node, str) else "",
        sys.intern(phase) if phase and isinstance(phase, str) else "Pending",
        bool(metadata.get("deletionTimestamp")),
        facts.app_id + uid if facts.app_id_per_pod else facts.app_id,
        _timestamp(metadata.get("creationTimestamp")),
        constraint_tag,
        facts.values)
    if not facts.invalid:
        resized = _resized_resource(spec, status)
        if resized is not None:
            return dataclasses.replace(record, resource=resized), shared
    return record, shared


# The fields ``parse_pod`` reads for each pod, in ``_make_record``'s order; the others come from its facts.
_PER_POD = ("uid", "name", "resource_version", "node_name", "phase", "deleting", "app_id", "created", "constraints")
_SHARED = tuple(field.name for field in dataclasses.fields(PodRecord) if field.name not in _PER_POD)
_DEFAULTS = {field.name: field.default for field in dataclasses.fields(PodRecord)
             if field.default is not dataclasses.MISSING}


# Records are made for every pod listed or changed, and the dataclass's ``__init__`` took half of parsing
# one: it sets each frozen field through ``object.__setattr__`` by name, taking keywords. This fills a
# draft of the record's slots positionally and makes it the record (measured: 0.7 us a record, 2.3 us
# through each slot's setter, 5.2 us through the dataclass's).
_make_record = slot_setter(PodRecord, list(_PER_POD), new=True, packed=_SHARED)


@record
class _Facts:
    """What a pod's record reads from its labels, annotations, owners and spec (its node aside): the
    same for every pod of a workload, and for every version of one pod, so it is read once for all
    of them and shared (``_shared_facts``)."""

    values: tuple  # the record's fields named by ``_SHARED``, in that order
    invalid: bool
    app_id: str
    app_id_per_pod: bool  # a unique autogen id: completed with each pod's uid
    constraints: str  # without the pod's node


# The constraint tag of a pod bound to a node and constrained by nothing else, by node: most pods listed.
BOUND_TAGS_KEPT = 16384
_bound_tags: dict[str, str] = {}


def _node_constraints(node: str, facts: _Facts) -> str:
    """The constraint tag of a pod of these facts bound to ``node``."""
    if facts.constraints:
        return constraints.with_node(facts.constraints, node)
    return _bound_tags.get(node) or _bound_tag(node)


def _bound_tag(node: str) -> str:
    if len(_bound_tags) >= BOUND_TAGS_KEPT:  # a bound, not a cache policy: node names only churn slowly
        _bound_tags.clear()
    tag = _bound_tags[node] = constraints.bound_only(node)
    return tag


# Facts by the JSON of what they are read from: a workload's pods (and a pod's versions) share one.
# Bounded: when full, the oldest goes (a cache miss costs one full read).
FACTS_KEPT = 4096
_facts: dict[bytes, _Facts] = {}
_facts_lock = threading.Lock()


# The fields of a spec its pod's facts read (``_read_facts`` and all it calls; the node aside), and of each
# container, init container and volume the fields they read of it: the facts are read from these alone and
# keyed on them, so pods keyed alike have the same facts whatever else their specs say. Volumes' and mounts'
# names are not among them: the service account's token volume is named with five random letters in each
# pod of a real cluster.
_SPEC_READ: dict[str, tuple[str, ...] | None] = {  # None: the field's value whole, whatever its type
    "schedulerName": None, "priority": None, "priorityClassName": None, "preemptionPolicy": None,
    "schedulingGates": None, "nodeSelector": None, "affinity": None, "tolerations": None,
    "topologySpreadConstraints": None, "hostNetwork": None, "overhead": None, "resourceClaims": None,
    "containers": ("resources", "ports"),
    "initContainers": ("resources", "ports", "restartPolicy"),
    "volumes": ("persistentVolumeClaim", "ephemeral", *constraints.IN_TREE_DISKS),
}
# The annotations the facts read. Those of a real cluster's pods hold more, each pod's own: a CNI's pod IP and
# container id (Calico's), a Job's completion index. The facts and their key take only these, so pods that
# differ in others share facts; every annotation still counts for whether all are strings.
_ANNOTATIONS_READ = frozenset({ANNOTATION_APP_ID, ANNOTATION_QUEUE, ANNOTATION_USER_INFO, keys.ANNOTATION_TASK_GROUP_NAME,
                               keys.ANNOTATION_TASK_GROUPS, keys.ANNOTATION_SCHEDULING_POLICY,
                               keys.ANNOTATION_PLACEHOLDER, keys.ANNOTATION_ALLOW_PREEMPTION})
_WHOLE = tuple(name for name, fields in _SPEC_READ.items() if fields is None)
_ITEMS = tuple((name, fields) for name, fields in _SPEC_READ.items() if fields is not None)
_DICTS = {dict}


def _spec_facts(spec: Mapping) -> dict:
    """What the facts read of ``spec``, in its JSON shape (what ``_JsonSpec`` keeps of its text, alike). A
    list that is not one of objects, whose items the facts would fail to read, is kept whole. Loops, not
    comprehensions: each of those costs a call, and this runs for every pod changed."""
    read = {}
    for name in _WHOLE:
        if name in spec:
            read[name] = spec[name]
    for name, fields in _ITEMS:
        value = spec.get(name)
        if value is None:  # null reads as absent, as ``_JsonSpec`` decodes it
            continue
        if type(value) is list and {*map(type, value)} <= _DICTS:
            items = []
            for item in value:
                kept = {}
                for field in fields:
                    if field in item:
                        kept[field] = item[field]
                items.append(kept)
            value = items
        read[name] = value
    return read


def _annotations_read(annotations: object) -> object:
    """What the facts read of a pod's annotations, in its JSON shape: those they read (``_ANNOTATIONS_READ``, in
    the pod's order; ``None`` for none) when all are strings, else the value whole (the facts note a problem)."""
    if not annotations:  # read as none
        return None
    if type(annotations) is not dict:
        return annotations
    read = None
    for name, value in annotations.items():
        if type(value) is not str:
            return annotations
        if name in _ANNOTATIONS_READ:
            if read is None:
                read = {}
            read[name] = value
    return read


def _shared_facts(metadata: Mapping, spec: object, namespace: str) -> tuple[_Facts, _Facts]:
    """The facts of a pod read without its node (``spec.nodeName``, a string when present), and the facts of
    its workload they are (the same, but for labels of the pod's own; ``None`` when read for this pod alone)."""
    if type(spec) is dict or isinstance(spec, Mapping):
        spec = _spec_facts(spec)
    labels = metadata.get("labels")
    own = _own_labels(labels)
    try:
        annotations, owners = _annotations_read(metadata.get("annotations")), metadata.get("ownerReferences")
        key = orjson.dumps((namespace, labels if own is None else _shared_labels(own), annotations, owners, spec))
        if own is not None and _MATCH_LABEL_KEYS in key:  # its constraints may read them: keyed whole
            own, key = None, orjson.dumps((namespace, labels, annotations, owners, spec))
    except TypeError:  # not plain JSON (orjson.JSONEncodeError is a TypeError): read for this pod
        facts = _read_facts(metadata, spec, namespace)
        return facts, facts if own is None else None
    facts = _facts.get(key)
    if facts is None:
        facts = _read_facts(metadata if own is None else {**metadata, "labels": _shared_labels(own)}, spec, namespace)
        _keep(bytes(memoryview(key)), facts)  # a copy: what orjson returns holds a 4 KiB page while kept
    return (facts if own is None else _with_own_labels(facts, own)), facts


# Labels a pod carries as its own, one value for each pod of its workload: a StatefulSet's pod name and index, an
# indexed Job's completion index, a Spark executor's id, a Kubeflow job's replica index. No fact reads them but
# the labels themselves, unless the spec names labels to match (``matchLabelKeys``, ``mismatchLabelKeys``):
# the facts are keyed and read without them, and each pod's record is given its own labels.
_OWN_LABELS = frozenset({"statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index",
                         "batch.kubernetes.io/job-completion-index", "spark-exec-id",
                         "training.kubeflow.org/replica-index"})
_OWN_LABELS_QUOTED = re.compile(b"|".join(re.escape(orjson.dumps(name)) for name in _OWN_LABELS))  # as quoted in JSON
_MATCH_LABEL_KEYS = b"atchLabelKeys"
_LABELS_AT = _SHARED.index("labels")


def _own_labels(labels: object) -> dict | None:
    """``labels`` when they are a map of strings with labels of a pod's own (``_OWN_LABELS``), else ``None``."""
    if type(labels) is dict and not _OWN_LABELS.isdisjoint(labels) and gojson.string_map(labels) is not None:
        return labels
    return None


def _shared_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """``labels`` but those of a pod's own, in their order."""
    return {name: value for name, value in labels.items() if name not in _OWN_LABELS}


def _with_own_labels(facts: _Facts, labels: Mapping[str, str]) -> _Facts:
    """``facts`` of a pod whose labels, its own among them, are ``labels``."""
    values = facts.values
    return _Facts((*values[:_LABELS_AT], types.MappingProxyType(dict(labels)), *values[_LABELS_AT + 1:]),
                  facts.invalid, facts.app_id, facts.app_id_per_pod, facts.constraints)


def _keep(key: bytes, facts: _Facts) -> None:
    with _facts_lock:
        while len(_facts) >= FACTS_KEPT:
            del _facts[next(iter(_facts))]
        _facts[key] = facts


# ---- a pod read straight from its JSON --------------------------------------------------------------
# A listed pod is read from its JSON text without a dict of it: msgspec decodes, in C, only what a record
# takes from each pod, keeps its labels, annotations, owner references and what the facts read of its spec
# as their JSON text (the key of the facts its workload's pods share) and skips the rest. Whatever that typed reading refuses or
# cannot settle (a field of another type, facts not seen yet, a resize to weigh) is read as any pod is,
# from orjson's dicts through ``parse_pod``: the records are the same.

_ABSENT = msgspec.Raw(b"")  # a field the pod leaves out (a present one is never empty)


class _JsonMetadata(msgspec.Struct, gc=False):
    uid: str | None = None
    namespace: str | None = None
    name: str | None = None
    resourceVersion: str | None = None
    creationTimestamp: str | None = None
    deletionTimestamp: str | None = None
    labels: msgspec.Raw = _ABSENT
    annotations: msgspec.Raw = _ABSENT
    ownerReferences: msgspec.Raw = _ABSENT


class _JsonContainerStatus(msgspec.Struct, gc=False):
    name: msgspec.Raw = _ABSENT
    allocatedResources: msgspec.Raw = _ABSENT
    resources: msgspec.Raw = _ABSENT


class _JsonStatus(msgspec.Struct, gc=False):
    phase: str | None = None
    containerStatuses: list[_JsonContainerStatus] | None = None
    initContainerStatuses: list[_JsonContainerStatus] | None = None


class _JsonPod(msgspec.Struct, gc=False):
    metadata: _JsonMetadata | None = None
    spec: msgspec.Raw = _ABSENT
    status: _JsonStatus | None = None


def _fields_struct(name: str, fields: dict[str, object]) -> type[msgspec.Struct]:
    """A struct of these fields, each a JSON text or of the type given, written without the absent ones."""
    return msgspec.defstruct(name, [(field, msgspec.Raw, _ABSENT) if kind is None else (field, kind, None)
                                    for field, kind in fields.items()], omit_defaults=True, gc=False)


# A spec as its pod's facts read it (``_SPEC_READ``), with its node: ``nodeName`` set to None, written as
# ``_spec_facts`` writes its dict. A list field holding other than objects fails to decode: read from the dict.
_JsonSpec = _fields_struct("_JsonSpec", {"nodeName": str | None, **dict.fromkeys(_WHOLE), **{
    name: list[_fields_struct(f"_Json{name}", dict.fromkeys(fields))] | None for name, fields in _ITEMS}})


class _JsonResources(msgspec.Struct, gc=False):
    requests: msgspec.Raw = _ABSENT


class _JsonContainer(msgspec.Struct, gc=False):
    name: msgspec.Raw = _ABSENT
    resources: _JsonResources | None = None


class _JsonContainers(msgspec.Struct, gc=False):
    containers: list[_JsonContainer] | None = None
    initContainers: list[_JsonContainer] | None = None


_POD_JSON = msgspec.json.Decoder(_JsonPod)
_SPEC_JSON = msgspec.json.Decoder(_JsonSpec)
_CONTAINERS_JSON = msgspec.json.Decoder(_JsonContainers)
_RESOURCES_JSON = msgspec.json.Decoder(_JsonResources | None)


def read_pod(data: bytes | memoryview | msgspec.Raw) -> PodRecord:
    """``parse_pod`` of the pod whose JSON text is ``data``: the same record, read without decoding
    what it does not take when it can. Raises ``ValueError`` as ``parse_pod`` does, and for text that
    is no JSON (or nested deeper than orjson reads)."""
    key = None
    try:
        pod = _POD_JSON.decode(data)
        spec = _SPEC_JSON.decode(pod.spec) if pod.spec is not _ABSENT else _JsonSpec()
    except (ValueError, RecursionError):  # msgspec's DecodeError and ValidationError are ValueErrors
        pod = None
    if pod is not None and pod.metadata is not None:
        node = sys.intern(spec.nodeName) if spec.nodeName else ""
        metadata = pod.metadata
        annotations = None if metadata.annotations is _ABSENT else _json_annotations_read(metadata.annotations)
        key, own = _json_key(metadata, spec, annotations), None
        facts = _facts.get(key) if key is not None else None
        if facts is None and key is not None and (found := _json_key_without_own_labels(metadata, spec, annotations)):
            key, own = found
            facts = _facts.get(key)
        if facts is not None:
            record = _json_record(pod, node, facts if own is None else _with_own_labels(facts, own))
            status = pod.status
            if record is not None and not facts.invalid and status is not None and (
                    status.containerStatuses or status.initContainerStatuses) and not _as_asked_text(pod.spec, status):
                # The kubelet reports what it allocated and applied (every running pod's, since
                # Kubernetes 1.33) other than what the spec asks, word for word: weighed as ``_parse``
                # does, from the pod decoded whole.
                raw = orjson.loads(memoryview(data))
                resized = _resized_resource(raw.get("spec"), raw.get("status"))
                return record if resized is None else dataclasses.replace(record, resource=resized)
            if record is not None:
                return record
    record, shared = _parse(orjson.loads(memoryview(data)))
    if key is not None and shared is not None:
        _keep(key, shared)
    return record


_KEY_JSON = msgspec.json.Encoder()


def _json_key(metadata: _JsonMetadata, spec: _JsonSpec, annotations: object, labels: object = None) -> bytes | None:
    """The key of a pod's shared facts from the JSON text they are read from: its namespace, labels (or
    ``labels``, its workload's), ``annotations`` (what ``_json_annotations_read`` gives of its own; None: it
    has none) and owner references, and what the facts read of its spec (``spec``, its node left out here),
    written as ``_shared_facts`` writes the key of the pod's dict: the same key where the text is written as
    orjson writes it (the API server's compact JSON)."""
    namespace = metadata.namespace
    if not namespace:
        return None
    if labels is None and metadata.labels is not _ABSENT:
        labels = metadata.labels
    owners = metadata.ownerReferences
    spec.nodeName = None
    return _KEY_JSON.encode((namespace, labels, annotations, None if owners is _ABSENT else owners, spec))


def _json_key_without_own_labels(metadata: _JsonMetadata, spec: _JsonSpec,
                                 annotations: object) -> tuple[bytes, dict] | None:
    """Where a pod has labels of its own (``_OWN_LABELS``) and its constraints name no labels to match, the key
    of its facts without them, as ``_shared_facts`` writes it, and its labels; else ``None``. Asked only when
    ``_json_key``'s finds nothing: a pod of most workloads does not pay for it."""
    labels = metadata.labels
    if labels is _ABSENT or _OWN_LABELS_QUOTED.search(labels) is None:
        return None
    try:
        own = _LABELS_JSON.decode(labels)
    except ValueError:  # not a map of strings: keyed whole
        return None
    key = _json_key(metadata, spec, annotations, _shared_labels(own))
    return None if key is None or _MATCH_LABEL_KEYS in key else (key, own)


_ANNOTATIONS_JSON = _LABELS_JSON = msgspec.json.Decoder(dict[str, str])


def _json_annotations_read(text: msgspec.Raw) -> object:
    """``_annotations_read`` of the annotations whose JSON text is ``text``: the text whole where they are not a
    map of strings (the key a dict of them makes, written as orjson writes it)."""
    try:
        return _annotations_read(_ANNOTATIONS_JSON.decode(text))
    except ValueError:
        return text


def _json_record(pod: _JsonPod, node: str, facts: _Facts) -> PodRecord | None:
    """The record ``_parse`` makes of the pod with these shared facts, before any resize its container
    statuses may show; ``None`` where it reads the pod whole."""
    metadata, status = pod.metadata, pod.status
    uid, name = metadata.uid, metadata.name
    if not (uid and name):
        return None
    phase = status.phase if status is not None else None
    created = metadata.creationTimestamp
    return _make_record(
        uid, name, metadata.resourceVersion or "",
        node,
        sys.intern(phase) if phase else "Pending",
        bool(metadata.deletionTimestamp),
        facts.app_id + uid if facts.app_id_per_pod else facts.app_id,
        _times.get(created) or _timestamp(created),
        _node_constraints(node, facts) if node else facts.constraints,
        facts.values)


def _as_asked_text(spec: msgspec.Raw, status: _JsonStatus) -> bool:
    """Whether each container status that reports resources reports, as the same JSON text, what its
    container (the spec's at its index, of the same name) requests: allocated and applied as asked,
    which ``_resized_resource`` would find from the pod decoded whole (same text, same value). ``False``
    where the text cannot tell (other spellings, another order, fields of another type): decoded whole."""
    spec_containers = None  # decoded once a status reports resources: kubelets before 1.33 report none
    try:
        for statuses, field in ((status.containerStatuses, "containers"),
                                (status.initContainerStatuses, "initContainers")):
            for index, reported in enumerate(statuses or ()):
                if reported.allocatedResources is _ABSENT and reported.resources is _ABSENT:
                    continue
                if spec_containers is None:
                    spec_containers = _CONTAINERS_JSON.decode(spec)
                containers = getattr(spec_containers, field)
                if containers is None or index >= len(containers) or containers[index].name != reported.name:
                    return False
                asked = containers[index].resources
                asked = asked.requests if asked is not None else _ABSENT
                applied = _RESOURCES_JSON.decode(reported.resources) if reported.resources is not _ABSENT else None
                if reported.allocatedResources != asked or (applied.requests if applied is not None else _ABSENT) != asked:
                    return False
    except (ValueError, RecursionError):
        return False
    return True


def _read_facts(metadata: Mapping, spec: object, namespace: str) -> _Facts:
    problems = []
    if not isinstance(spec, Mapping):
        problems.append("spec is not an object")
        spec = {}
    labels, annotations = (_strings(metadata, field, problems) for field in ("labels", "annotations"))
    annotations = {name: value for name, value in annotations.items() if name in _ANNOTATIONS_READ}  # as keyed
    try:
        resource = pod_resource(spec)
    except (QuantityError, TypeError, AttributeError) as error:
        problems.append(f"invalid resources: {error}")
        resource = Resource({PODS: 1})
    try:
        constraint_tag = constraints.encode(spec, namespace, labels)
        required_node, ignored = constraints.required_node(spec), constraints.ignored(spec)
    except _SHAPE_ERRORS as error:
        problems.append(f"invalid constraints: {elide(str(error))}")
        constraint_tag, required_node, ignored = "", "", ()
    try:
        claims = pod_claims(spec)
        static = any(ref.get("kind") == "Node" for ref in metadata.get("ownerReferences") or ())
    except _SHAPE_ERRORS:
        problems.append("invalid volumes or owner references: not the shape of a pod's")
        claims, static = (), False
    try:
        user, groups = user_info(annotations)
    except ValueError as error:
        problems.append(str(error))
        user, groups = keys.DEFAULT_USER, ()
    priority = spec.get("priority")
    if priority is not None and not in_range(priority, INT32_MIN, INT32_MAX):
        problems.append(f"priority must be a whole number of {INT32_MIN} to {INT32_MAX}, not {shown(priority)}")
        priority = None
    named = named_application_id(labels, annotations)
    fields = dict(
        namespace=sys.intern(namespace),
        scheduler_name=sys.intern(gojson.text(spec.get("schedulerName")) or "default-scheduler"),
        labels=types.MappingProxyType(dict(labels)) if labels else _EMPTY,
        app_id_named=bool(named),
        queue=sys.intern(named_queue(labels, annotations)),
        user=sys.intern(user),
        groups=groups,
        disable_state_aware=labels.get(LABEL_DISABLE_STATE_AWARE) == "true",
        resource=resource,
        priority=priority,
        priority_class=gojson.text(spec.get("priorityClassName")),
        static=static,
        required_node=required_node,
        ignored=ignored,
        claims=claims,
        gated=bool(spec.get("schedulingGates")),
        invalid="; ".join(problems),
        task_group=annotations.get(keys.ANNOTATION_TASK_GROUP_NAME) or "",
        task_groups=annotations.get(keys.ANNOTATION_TASK_GROUPS) or "",
        policy_parameters=annotations.get(keys.ANNOTATION_SCHEDULING_POLICY) or "",
        placeholder=annotations.get(keys.ANNOTATION_PLACEHOLDER) == "true",
        owner_pod=next((ref.get("uid") or "" for ref in metadata.get("ownerReferences") or ()
                        if ref.get("kind") == "Pod" and ref.get("apiVersion") == "v1"), ""),
        allow_preemption=keys.allow_preemption(annotations),
        preempts=spec.get("preemptionPolicy") != "Never",
    )
    values = tuple(fields[name] if name in fields else _DEFAULTS[name] for name in _SHARED)
    return _Facts(values, bool(problems), sys.intern(application_id(labels, annotations, namespace, "")),
                  named.endswith(UNIQUE_AUTOGEN_SUFFIX), constraint_tag)


def user_info(annotations: Mapping[str, str]) -> tuple[str, tuple[str, ...]]:
    """User and groups from the ``user.info`` annotation (upstream's ``UserGroupInformation``, decoded
    by Go's rules); ``nobody`` without one."""
    text = annotations.get(ANNOTATION_USER_INFO)
    if not text:
        return keys.DEFAULT_USER, ()
    try:
        info = gojson.go_fields(gojson.loads(text, f"annotation {ANNOTATION_USER_INFO}"), ("user", "groups"),
                                f"annotation {ANNOTATION_USER_INFO}")
        user = gojson.go_string(info.get("user", ""), f"annotation {ANNOTATION_USER_INFO}: user")
        groups = gojson.go_string_list(info.get("groups", []), f"annotation {ANNOTATION_USER_INFO}: groups")
    except gojson.JSONError as error:
        raise ValueError(str(error)) from None
    return user or keys.DEFAULT_USER, tuple(groups)


def pod_claims(spec: Mapping) -> tuple[str, ...]:
    """The names of the persistent volume claims the pod's volumes use."""
    return tuple(claim for volume in spec.get("volumes") or ()
                 if isinstance(claim := (volume.get("persistentVolumeClaim") or {}).get("claimName"), str) and claim)


def pod_resource(spec: Mapping, status: object = None) -> Resource:
    """What the pod occupies while it runs, in SI units: the larger of the containers' sum and the
    biggest init container (sidecars, i.e. init containers that keep running, count in both),
    plus the pod overhead and one ``pods``. A container counts the larger of its requests and what
    its kubelet allocated and applied (an in-place resize, upstream's ``GetPodResource``), or what was
    applied alone once the kubelet found the resize infeasible."""
    statuses = _container_statuses(status)
    running: dict[str, int] = {}
    for container in spec.get("containers") or ():
        _add(running, _container_usage(container, statuses))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for container in spec.get("initContainers") or ():
        request = _container_usage(container, statuses)
        if container.get("restartPolicy") == "Always":
            _add(sidecars, request)
            _raise_to(init_peak, sidecars)
        else:
            _raise_to(init_peak, _sum(request, sidecars))
    total = _sum(running, sidecars)
    _raise_to(total, init_peak)
    _add(total, from_kubernetes(spec.get("overhead")))
    total[PODS] = total.get(PODS, 0) + 1
    too_large = sorted(name for name, value in total.items() if value > INT64_MAX)
    if too_large:
        raise QuantityError(f"the pod asks more {', '.join(too_large)} than an int64 holds")
    return Resource(total)


def _container_statuses(status: object) -> tuple[Mapping[str, dict], Mapping]:
    """The container statuses that report resources, by container name, and the pod's status; nothing from a
    status of the wrong shape (the kubelet's report, not the tenant's). JSON objects are dicts: checking
    for ``dict`` rather than ``Mapping`` keeps this cheap on every update of a running pod."""
    if not isinstance(status, dict):
        return _EMPTY, _EMPTY
    found = {}
    for field in ("containerStatuses", "initContainerStatuses"):
        entries = status.get(field)
        if type(entries) is list:
            for entry in entries:
                if type(entry) is dict and ("allocatedResources" in entry or "resources" in entry):
                    found[entry.get("name")] = entry
    return found, status


def _resized_resource(spec: object, status: object) -> Resource | None:
    """The pod's size when its container statuses report other resources than its spec asks (an in-place
    resize under way); None in the usual case, where the size read from the spec (and shared) stands. Run on
    every update of a running pod, so it looks no further than it must."""
    if type(status) is not dict or not isinstance(spec, dict) or (
            "containerStatuses" not in status and "initContainerStatuses" not in status):
        return None
    for field, statuses in (("containers", status.get("containerStatuses")),
                            ("initContainers", status.get("initContainerStatuses"))):
        if not statuses or type(statuses) is not list:
            continue
        containers = spec.get(field) or ()
        for i, entry in enumerate(statuses):
            if type(entry) is not dict or ("allocatedResources" not in entry and "resources" not in entry):
                continue
            name = entry.get("name")  # the kubelet reports its containers in the spec's order
            container = containers[i] if i < len(containers) and isinstance(containers[i], dict) \
                and containers[i].get("name") == name else next(
                (c for c in containers if isinstance(c, dict) and c.get("name") == name), {})
            if not _as_asked(container, entry):
                try:
                    return pod_resource(spec, status)
                except (QuantityError, TypeError, AttributeError):  # the spec's size stands; this status does not
                    return None
    return None


def _as_asked(container: Mapping, status: dict | None) -> bool:
    """The container's status reports what its spec requests (or nothing)."""
    if status is None:
        return True
    asked = (container.get("resources") or {}).get("requests")
    applied = status.get("resources")
    applied_requests = applied.get("requests") if isinstance(applied, dict) else None
    return status.get("allocatedResources") == asked and applied_requests == asked


def _container_usage(container: Mapping, statuses: tuple[Mapping[str, dict], Mapping]) -> dict[str, int]:
    """computeContainerResource: the container's request, raised to what its status says was allocated and
    applied; only what was applied when the resize is infeasible."""
    request = container_request(container)
    by_name, pod_status = statuses
    status = by_name.get(container.get("name")) if by_name else None
    if _as_asked(container, status):  # no resize under way: the usual case, read no further
        return request
    applied = status.get("resources")
    applied_requests = applied.get("requests") if isinstance(applied, dict) else None
    allocated = status.get("allocatedResources")
    if isinstance(applied, dict) and _infeasible(pod_status):
        return _quantities(applied_requests if isinstance(applied_requests, dict) else {})
    for reported in (allocated, applied_requests):
        if isinstance(reported, dict):
            _raise_to(request, _quantities(reported))
    return request


def _infeasible(status: Mapping) -> bool:
    """The kubelet found the pod's resize infeasible (the condition, or ``status.resize`` before 1.33)."""
    conditions = status.get("conditions")
    return status.get("resize") == INFEASIBLE or any(
        isinstance(c, dict) and c.get("type") == RESIZE_PENDING and c.get("reason") == INFEASIBLE
        for c in (conditions if isinstance(conditions, list) else ()))


def container_request(container: Mapping) -> dict[str, int]:
    """A container's requests; a resource with a limit and no request requests its limit (as the
    API server's defaulting does)."""
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    return _quantities({**limits, **requests} if limits else requests)


def _quantities(values: Mapping) -> dict[str, int]:
    result: dict[str, int] = {}
    for name, text in values.items():
        key = si_name(name)
        result[key] = result.get(key, 0) + _quantity(key, text)
    return result


@functools.lru_cache(maxsize=8192)
def _quantity(name: str, text: str | int | float) -> int:
    """Quantities repeat (every pod of a workload asks the same): parse each spelling once."""
    return to_si_value(name, text)


def _add(target: dict[str, int], more: Mapping[str, int]) -> None:
    for name, value in more.items():
        target[name] = target.get(name, 0) + value


def _sum(left: Mapping[str, int], right: Mapping[str, int]) -> dict[str, int]:
    result = dict(left)
    _add(result, right)
    return result


def _raise_to(target: dict[str, int], floor: Mapping[str, int]) -> None:
    for name, value in floor.items():
        if value > target.get(name, 0):
            target[name] = value


def _strings(metadata: Mapping, field: str, problems: list[str]) -> Mapping[str, str]:
    """The pod's labels or annotations; none, and a problem, when they are not a map of strings."""
    value = metadata.get(field) or _EMPTY
    if gojson.string_map(value) is None:
        problems.append(f"{field} must be a map of strings")
        return _EMPTY
    return value


# Creation times repeat (whole seconds, many pods created in each): each parsed once, looked up after.
TIMES_KEPT = 1024
_times: dict[str, float] = {}


def _timestamp(text: object) -> float:
    if not text or not isinstance(text, str):
        return 0.0
    seconds = _times.get(text)
    if seconds is None:
        try:
            seconds = datetime.fromisoformat(text).timestamp()
        except ValueError:
            seconds = 0.0
        if len(_times) >= TIMES_KEPT:
            _times.clear()
        _times[text] = seconds
    return seconds
