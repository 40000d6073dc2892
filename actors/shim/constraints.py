"""A pod's node constraints: read from its spec, carried as one compact JSON ask tag, compiled back.

Only what the shim enforces is kept: ``nodeName``, ``nodeSelector``, required and preferred node
affinity (``matchExpressions`` and ``matchFields`` on ``metadata.name``), tolerations of ``NoSchedule``
and ``NoExecute`` taints, host ports, required and preferred pod affinity and anti-affinity with any
topology key, and topology spread constraints; the shim adds its volumes' node affinity (``volumes``).
A pod with none of them gets no tag at all, so the core never asks about it. Decoding is cached by the
tag text: the pods of one workload share one text and are compiled once.

``matchLabelKeys`` and ``mismatchLabelKeys`` are merged into the label selector here, as the API server
does; a ``namespaceSelector`` with content stays in the tag until the shim resolves it against the
namespaces' labels (``topology.resolve_namespaces``). Whatever a pod asks for that the shim does not
enforce is named by :func:`ignored`, so the shim can say so on the pod (a Warning event) instead of
dropping it silently.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping

import orjson

from actors.base import record
from si.bounded import shown
from si.gonumber import in_range, parse_int

NODE_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})
FILTERING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
# Volume kinds whose conflicts and per-node limits kube-scheduler checks (VolumeRestrictions, NodeVolumeLimits).
IN_TREE_DISKS = ("gcePersistentDisk", "awsElasticBlockStore", "azureDisk", "rbd", "iscsi", "csi")
ALL_NAMESPACES = "*"


class ConstraintError(ValueError):
    """A constraint in a pod spec that the Kubernetes API would have refused."""


@record
class Requirement:
    """One node selector requirement or label selector expression: ``key op values``."""

    key: str
    operator: str
    values: frozenset[str]


@record
class NodeSelectorTerm:
    """Requirements that must all hold; the terms of a node affinity are alternatives."""

    expressions: tuple[Requirement, ...]
    fields: tuple[Requirement, ...]


@record
class Toleration:
    key: str
    operator: str
    value: str
    effect: str


@record
class Taint:
    key: str
    value: str
    effect: str


@record
class HostPort:
    port: int
    protocol: str
    host_ip: str


@record
class LabelSelector:
    """``match_labels`` and ``expressions`` must all hold; the empty selector selects everything."""

    match_labels: tuple[tuple[str, str], ...]
    expressions: tuple[Requirement, ...]


@record
class PodAffinityTerm:
    """Pods matching ``selector`` in ``namespaces`` (or every namespace: ``"*"``), counted per domain
    of ``topology_key`` (the value of that node label)."""

    selector: LabelSelector
    namespaces: frozenset[str]
    topology_key: str


@record
class WeightedTerm:
    """A preferred pod (anti-)affinity term and its weight (1-100)."""

    weight: int
    term: PodAffinityTerm


@record
class SpreadConstraint:
    """A topology spread constraint; ``hard`` is ``whenUnsatisfiable: DoNotSchedule``."""

    max_skew: int
    topology_key: str
    hard: bool
    selector: LabelSelector | None  # None: a null selector, matching no pod
    min_domains: int
    honor_node_affinity: bool  # nodeAffinityPolicy Honor (the default)
    honor_node_taints: bool  # nodeTaintsPolicy Honor (default Ignore)


@record
class Constraints:
    """The compiled form of a constraints tag."""

    node_name: str = ""
    node_selector: tuple[tuple[str, str], ...] = ()
    node_affinity: tuple[NodeSelectorTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedTerm, ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()
    preferred_node_affinity: tuple[tuple[int, NodeSelectorTerm], ...] = ()  # (weight, preference)
    volume_affinity: tuple[tuple[NodeSelectorTerm, ...], ...] = ()  # bound volumes' node affinity: each holds
    volume_choices: tuple[tuple[tuple[NodeSelectorTerm, ...], ...], ...] = ()  # per claim, a volume to bind

    @property
    def restricts_nodes(self) -> bool:
        """True when some node may be refused whatever its taints (tolerations alone only matter on
        tainted nodes, which the core checks anyway)."""
        return bool(self.node_name or self.node_selector or self.node_affinity or self.host_ports
                    or self.pod_affinity or self.anti_affinity or any(s.hard for s in self.spread)
                    or self.volume_affinity or self.volume_choices)

    @property
    def prefers_nodes(self) -> bool:
        """True when the pod ranks nodes: preferred pod (anti-)affinity, ScheduleAnyway spread."""
        return bool(self.preferred_affinity or self.preferred_anti_affinity or self.preferred_node_affinity
                    or any(not s.hard for s in self.spread))


NONE = Constraints()


# ---- from a pod spec to the tag ------------------------------------------------------------------

def encode(spec: Mapping, namespace: str, labels: Mapping[str, str] | None = None) -> str:
    """The constraints tag of a pod spec (Kubernetes JSON), or ``""`` when it has no constraints.

    ``labels`` are the pod's own (for ``matchLabelKeys``). Raises ``ConstraintError`` for a constraint
    the API server would have rejected.
    """
    labels = labels or {}
    document: dict = {}
    if spec.get("nodeName"):
        document["nodeName"] = spec["nodeName"]
    selector = spec.get("nodeSelector")
    if selector:
        document["nodeSelector"] = {str(k): str(v) for k, v in selector.items()}
    affinity = spec.get("affinity") or {}
    terms = _required_node_terms(affinity)
    if terms:
        document["affinity"] = terms
    tolerations = [_toleration_json(t) for t in spec.get("tolerations") or ()
                   if (t.get("effect") or "") in FILTERING_EFFECTS or not t.get("effect")]
    if tolerations:
        document["tolerations"] = tolerations
    ports = _host_ports_json(spec)
    if ports:
        document["hostPorts"] = ports
    for kind, name in (("podAffinity", "podAffinity"), ("podAntiAffinity", "antiAffinity")):
        section = affinity.get(kind) or {}
        required = [_pod_term_json(t, namespace, labels)
                    for t in section.get("requiredDuringSchedulingIgnoredDuringExecution") or ()]
        required = [t for t in required if t is not None]
        if required:
            document[name] = required
        preferred = []
        for weighted in section.get("preferredDuringSchedulingIgnoredDuringExecution") or ():
            term = _pod_term_json(weighted.get("podAffinityTerm") or {}, namespace, labels)
            if term is not None:
                preferred.append({**term, "weight": int(weighted.get("weight") or 0)})
        if preferred:
            document["preferred" + name[0].upper() + name[1:]] = preferred
    preferred_nodes = [{"weight": int(p.get("weight") or 0), "preference": {
        k: (p.get("preference") or {})[k] for k in ("matchExpressions", "matchFields") if (p.get("preference") or {}).get(k)}}
        for p in (affinity.get("nodeAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution") or ()]
    if preferred_nodes:
        document["preferredNodeAffinity"] = preferred_nodes
    spread = [_spread_json(c, labels) for c in spec.get("topologySpreadConstraints") or ()]
    if spread:
        document["spread"] = spread
    if not document:
        return ""
    if len(document) == 1 and "nodeName" in document:
        return bound_only(document["nodeName"])
    return _checked(document)


def _checked(document: dict) -> str:
    text = orjson.dumps(document, option=orjson.OPT_SORT_KEYS).decode()
    decode(text)  # refuse now what could not be compiled later
    return text


@functools.lru_cache(maxsize=16384)
def bound_only(node_name: str) -> str:
    """The tag of a pod whose only constraint is the node it is bound to: most pods of a recovery."""
    return _checked({"nodeName": node_name})


@functools.lru_cache(maxsize=16384)  # a workload's pods on one node share it: one string for all of them
def with_node(tag: str, node_name: str) -> str:
    """What :func:`encode` makes of a spec bound to ``node_name`` whose tag without its ``nodeName`` is
    ``tag``: the same document with the node added, written alike (every running pod of a workload with
    constraints besides its node, such as the tolerations the API server gives every pod, is read so)."""
    if not tag:
        return bound_only(node_name)
    return _checked({**_document(tag), "nodeName": node_name})


@functools.lru_cache(maxsize=4096)
def _document(tag: str) -> dict:
    return orjson.loads(tag)  # only read: ``with_node`` writes a copy


def ignored(spec: Mapping) -> tuple[str, ...]:
    """What ``spec`` asks of the scheduler that the shim does not enforce, by name (empty: nothing)."""
    found = []
    if spec.get("resourceClaims"):
        found.append("resourceClaims")
    volumes = spec.get("volumes") or ()
    if any(volume.get("ephemeral") for volume in volumes):
        found.append("ephemeral volumes (their claims are not read)")
    if any(volume.get(kind) for volume in volumes for kind in IN_TREE_DISKS):
        found.append("in-tree disk volumes (volume restrictions and node volume limits)")
    return tuple(found)


def required_node(spec: Mapping) -> str:
    """The node a DaemonSet-style pod is pinned to (``matchFields metadata.name In [one]``), or ``""``."""
    for term in _required_node_terms(spec.get("affinity") or {}):
        for field in term.get("matchFields", ()):
            values = field.get("values") or ()
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and len(values) == 1:
                return values[0]
    return ""


def _required_node_terms(affinity: Mapping) -> list:
    node_affinity = affinity.get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    return [{k: term[k] for k in ("matchExpressions", "matchFields") if term.get(k)} for term in terms]


def _toleration_json(toleration: Mapping) -> dict:
    return {k: toleration[k] for k in ("key", "operator", "value", "effect") if toleration.get(k)}


def _host_ports_json(spec: Mapping) -> list:
    ports = []
    host_network = bool(spec.get("hostNetwork"))  # the API server defaults hostPort to containerPort then
    for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        for port in container.get("ports") or ():
            number = port.get("hostPort") or (port.get("containerPort") if host_network else None)
            if number:
                if not in_range(number, 1, 65535):
                    raise ConstraintError(f"host port {shown(number)} is not a port number (1-65535)")
                ports.append([number, port.get("protocol") or "TCP", port.get("hostIP") or ""])
    return ports


def _merged_selector(raw: Mapping | None, labels: Mapping[str, str], match: Iterable[str],
                     mismatch: Iterable[str] = ()) -> dict | None:
    """A label selector with ``matchLabelKeys`` (``key In [the pod's value]``) and ``mismatchLabelKeys``
    (``NotIn``) merged in, as the API server does; keys the pod does not carry are skipped."""
    added = [{"key": k, "operator": "In", "values": [labels[k]]} for k in match if k in labels]
    added += [{"key": k, "operator": "NotIn", "values": [labels[k]]} for k in mismatch if k in labels]
    if raw is None:
        return None
    if not added:
        return dict(raw)
    return {**raw, "matchExpressions": [*(raw.get("matchExpressions") or ()), *added]}


def _pod_term_json(term: Mapping, namespace: str, labels: Mapping[str, str]) -> dict | None:
    """A pod (anti-)affinity term; ``None`` for a term that can never match (a null label selector).
    A ``namespaceSelector`` with content stays in the tag (``nsSelector``) until the shim resolves it
    to the namespaces it selects (``topology.resolve_namespaces``)."""
    if not term.get("topologyKey"):
        raise ConstraintError("a pod affinity term needs a topologyKey")
    ns_selector = term.get("namespaceSelector")
    selector = _merged_selector(term.get("labelSelector"), labels, term.get("matchLabelKeys") or (),
                                term.get("mismatchLabelKeys") or ())
    if selector is None:
        return None
    namespaces: list | str = list(term.get("namespaces") or ())
    if ns_selector:
        return {"selector": selector, "namespaces": namespaces, "key": term["topologyKey"],
                "nsSelector": ns_selector}
    if ns_selector is not None:  # the empty namespaceSelector selects every namespace
        namespaces = ALL_NAMESPACES
    return {"selector": selector, "namespaces": namespaces or [namespace], "key": term["topologyKey"]}


def _spread_json(raw: Mapping, labels: Mapping[str, str]) -> dict:
    when = raw.get("whenUnsatisfiable") or "DoNotSchedule"
    if when not in ("DoNotSchedule", "ScheduleAnyway"):
        raise ConstraintError(f"topology spread: whenUnsatisfiable {when!r} is not DoNotSchedule or ScheduleAnyway")
    policies = []
    for name, default in (("nodeAffinityPolicy", "Honor"), ("nodeTaintsPolicy", "Ignore")):
        policy = raw.get(name) or default
        if policy not in ("Honor", "Ignore"):
            raise ConstraintError(f"topology spread: {name} {policy!r} is not Honor or Ignore")
        policies.append(policy == "Honor")
    return {"maxSkew": raw.get("maxSkew"), "key": raw.get("topologyKey") or "", "hard": when == "DoNotSchedule",
            "selector": _merged_selector(raw.get("labelSelector"), labels, raw.get("matchLabelKeys") or ()),
            "minDomains": raw.get("minDomains") or 1, "affinityPolicy": policies[0], "taintsPolicy": policies[1]}


# ---- from the tag to compiled constraints --------------------------------------------------------

@functools.lru_cache(maxsize=16384)  # bound pods carry their node's name: one tag per node and shape
def decode(text: str) -> Constraints:
    """Compile a constraints tag; ``""`` is no constraint. Raises ``ConstraintError`` if malformed."""
    if not text:
        return NONE
    try:
        document = orjson.loads(text)
    except ValueError as error:
        raise ConstraintError(f"constraints tag is not JSON: {error}") from None
    if not isinstance(document, dict):
        raise ConstraintError("constraints tag must be a JSON object")
    if len(document) == 1 and "nodeName" in document:  # a bound pod's (one per node): a third of the full compile
        return Constraints(node_name=str(document["nodeName"]))
    try:
        return Constraints(
            node_name=str(document.get("nodeName", "")),
            node_selector=tuple(sorted((document.get("nodeSelector") or {}).items())),
            node_affinity=tuple(_term(t) for t in document.get("affinity", ())),
            tolerations=tuple(_toleration(t) for t in document.get("tolerations", ())),
            host_ports=tuple(HostPort(int(p), str(proto), str(ip)) for p, proto, ip in document.get("hostPorts", ())),
            pod_affinity=tuple(_pod_term(t) for t in document.get("podAffinity", ())),
            anti_affinity=tuple(_pod_term(t) for t in document.get("antiAffinity", ())),
            preferred_affinity=tuple(_weighted(t) for t in document.get("preferredPodAffinity", ())),
            preferred_anti_affinity=tuple(_weighted(t) for t in document.get("preferredAntiAffinity", ())),
            spread=tuple(_spread(t) for t in document.get("spread", ())),
            preferred_node_affinity=tuple((_weight(p), _term(p["preference"]))
                                          for p in document.get("preferredNodeAffinity", ())),
            volume_affinity=tuple(tuple(_term(t) for t in terms) for terms in document.get("volumeAffinity", ())),
            volume_choices=tuple(tuple(tuple(_term(t) for t in terms) for terms in claim)
                                 for claim in document.get("volumeChoices", ())),
        )
    except (TypeError, AttributeError, KeyError, ValueError) as error:
        if isinstance(error, ConstraintError):
            raise
        raise ConstraintError(f"constraints tag is malformed: {error}") from None


def _requirement(raw: Mapping, operators: frozenset[str], where: str) -> Requirement:
    operator = raw.get("operator")
    if operator not in operators:
        raise ConstraintError(f"{where}: operator {operator!r} is not one of {', '.join(sorted(operators))}")
    values = frozenset(str(v) for v in raw.get("values") or ())
    key = raw.get("key")
    if not key:
        raise ConstraintError(f"{where}: a requirement needs a key")
    if operator in ("In", "NotIn") and not values:
        raise ConstraintError(f"{where}: operator {operator} needs values (key {key})")
    if operator in ("Exists", "DoesNotExist") and values:
        raise ConstraintError(f"{where}: operator {operator} takes no values (key {key})")
    if operator in ("Gt", "Lt"):
        if len(values) != 1 or not _is_int(next(iter(values))):
            raise ConstraintError(f"{where}: operator {operator} needs one integer value (key {key})")
    return Requirement(str(key), operator, values)


def _is_int(text: str) -> bool:
    try:
        parse_int(text)
    except ValueError:
        return False
    return True


def node_selector_term(raw: Mapping) -> NodeSelectorTerm:
    """Compile one ``NodeSelectorTerm`` (a pod's node affinity, a volume's)."""
    return _term(raw)


def _term(raw: Mapping) -> NodeSelectorTerm:
    expressions = tuple(_requirement(r, NODE_OPERATORS, "node affinity") for r in raw.get("matchExpressions", ()))
    fields = tuple(_requirement(r, frozenset({"In", "NotIn"}), "node affinity matchFields")
                   for r in raw.get("matchFields", ()))
    for field in fields:
        if field.key != "metadata.name":
            raise ConstraintError(f"node affinity matchFields: unsupported field {field.key!r} "
                                  "(only metadata.name)")
    return NodeSelectorTerm(expressions, fields)


def _toleration(raw: Mapping) -> Toleration:
    operator = raw.get("operator") or "Equal"
    if operator not in ("Equal", "Exists"):
        raise ConstraintError(f"toleration operator {operator!r} is not Equal or Exists")
    if operator == "Exists" and raw.get("value"):
        raise ConstraintError("a toleration with operator Exists takes no value")
    if not raw.get("key") and operator != "Exists":
        raise ConstraintError("a toleration without a key needs operator Exists")
    return Toleration(str(raw.get("key", "")), operator, str(raw.get("value", "")), str(raw.get("effect", "")))


def label_selector(raw: Mapping) -> LabelSelector:
    """Compile a Kubernetes ``LabelSelector`` (``matchLabels`` plus ``matchExpressions``)."""
    return LabelSelector(
        tuple(sorted((str(k), str(v)) for k, v in (raw.get("matchLabels") or {}).items())),
        tuple(_requirement(r, LABEL_OPERATORS, "label selector") for r in raw.get("matchExpressions") or ()),
    )


def _pod_term(raw: Mapping) -> PodAffinityTerm:
    namespaces = raw.get("namespaces")
    key = str(raw.get("key") or "")
    if not key:
        raise ConstraintError("a pod affinity term needs a topologyKey")
    if raw.get("nsSelector") is not None:
        label_selector(raw["nsSelector"])  # refused now if malformed; the shim resolves it before use
    return PodAffinityTerm(label_selector(raw["selector"]),
                           frozenset([ALL_NAMESPACES]) if namespaces == ALL_NAMESPACES else frozenset(namespaces),
                           key)


def _weight(raw: Mapping) -> int:
    weight = raw.get("weight")
    if not isinstance(weight, int) or not 1 <= weight <= 100:
        raise ConstraintError(f"a preferred affinity term needs a weight in 1-100, not {weight!r}")
    return weight


def _weighted(raw: Mapping) -> WeightedTerm:
    return WeightedTerm(_weight(raw), _pod_term(raw))


def _spread(raw: Mapping) -> SpreadConstraint:
    skew, key, min_domains = raw.get("maxSkew"), raw.get("key"), raw.get("minDomains")
    if not isinstance(skew, int) or skew < 1:
        raise ConstraintError(f"topology spread: maxSkew must be an integer above 0, not {skew!r}")
    if not key:
        raise ConstraintError("topology spread: a constraint needs a topologyKey")
    if not isinstance(min_domains, int) or min_domains < 1:
        raise ConstraintError(f"topology spread: minDomains must be an integer above 0, not {min_domains!r}")
    hard = bool(raw.get("hard"))
    if min_domains != 1 and not hard:
        raise ConstraintError("topology spread: minDomains requires whenUnsatisfiable DoNotSchedule")
    selector = raw.get("selector")
    return SpreadConstraint(skew, str(key), hard, None if selector is None else label_selector(selector),
                            min_domains, bool(raw.get("affinityPolicy", True)), bool(raw.get("taintsPolicy", False)))


def parse_taints(text: str) -> tuple[Taint, ...]:
    """Taints from the node attribute (see ``nodes``); cached like ``decode``."""
    return _parse_taints(text) if text else ()


@functools.lru_cache(maxsize=4096)
def _parse_taints(text: str) -> tuple[Taint, ...]:
    return tuple(Taint(t.get("key", ""), t.get("value", ""), t["effect"]) for t in orjson.loads(text))
