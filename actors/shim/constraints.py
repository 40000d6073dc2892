"""A pod's node constraints: read from its spec, carried as one compact JSON ask tag, compiled back.

Only the filters the shim supports are kept: ``nodeName``, ``nodeSelector``, required node affinity
(``matchExpressions`` and ``matchFields`` on ``metadata.name``), tolerations of ``NoSchedule`` and
``NoExecute`` taints, host ports, and required pod anti-affinity on ``kubernetes.io/hostname``. A pod
with none of them gets no tag at all, so the core never asks about it. Decoding is cached by the tag
text: the pods of one workload share one text and are compiled once.

Anti-affinity terms with another topology key and ``namespaceSelector`` with content are not
supported; they are dropped here (logged once per pod at debug level).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass

import orjson

from actors.shim.keys import HOSTNAME_LABEL

log = logging.getLogger(__name__)

NODE_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})
FILTERING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
ALL_NAMESPACES = "*"


class ConstraintError(ValueError):
    """A constraint in a pod spec that the Kubernetes API would have refused."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One node selector requirement or label selector expression: ``key op values``."""

    key: str
    operator: str
    values: frozenset[str]


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Requirements that must all hold; the terms of a node affinity are alternatives."""

    expressions: tuple[Requirement, ...]
    fields: tuple[Requirement, ...]


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class HostPort:
    port: int
    protocol: str
    host_ip: str


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """``match_labels`` and ``expressions`` must all hold; the empty selector selects everything."""

    match_labels: tuple[tuple[str, str], ...]
    expressions: tuple[Requirement, ...]


@dataclass(frozen=True, slots=True)
class AntiAffinityTerm:
    """No pod matching ``selector`` in ``namespaces`` (or every namespace: ``"*"``) may share the node."""

    selector: LabelSelector
    namespaces: frozenset[str]


@dataclass(frozen=True, slots=True)
class Constraints:
    """The compiled form of a constraints tag."""

    node_name: str = ""
    node_selector: tuple[tuple[str, str], ...] = ()
    node_affinity: tuple[NodeSelectorTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    anti_affinity: tuple[AntiAffinityTerm, ...] = ()

    @property
    def restricts_nodes(self) -> bool:
        """True when some node may be refused whatever its taints (tolerations alone only matter on
        tainted nodes, which the core checks anyway)."""
        return bool(self.node_name or self.node_selector or self.node_affinity or self.host_ports
                    or self.anti_affinity)


NONE = Constraints()


# ---- from a pod spec to the tag ------------------------------------------------------------------

def encode(spec: Mapping, namespace: str) -> str:
    """The constraints tag of a pod spec (Kubernetes JSON), or ``""`` when it has no constraints.

    Raises ``ConstraintError`` for a constraint the API server would have rejected.
    """
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
    anti = _anti_affinity_json(affinity, namespace)
    if anti:
        document["antiAffinity"] = anti
    if not document:
        return ""
    text = orjson.dumps(document, option=orjson.OPT_SORT_KEYS).decode()
    decode(text)  # refuse now what could not be compiled later
    return text


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
    for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        for port in container.get("ports") or ():
            if port.get("hostPort"):
                ports.append([int(port["hostPort"]), port.get("protocol") or "TCP", port.get("hostIP") or ""])
    return ports


def _anti_affinity_json(affinity: Mapping, namespace: str) -> list:
    anti = affinity.get("podAntiAffinity") or {}
    terms = []
    for term in anti.get("requiredDuringSchedulingIgnoredDuringExecution") or ():
        if term.get("topologyKey") != HOSTNAME_LABEL:
            log.debug("anti-affinity term with topology key %r ignored", term.get("topologyKey"))
            continue
        namespaces: list | str = list(term.get("namespaces") or ())
        ns_selector = term.get("namespaceSelector")
        if ns_selector is not None and not ns_selector:
            namespaces = ALL_NAMESPACES
        elif ns_selector:
            log.debug("anti-affinity namespaceSelector %r ignored", ns_selector)
        if term.get("labelSelector") is None:
            continue  # a null selector matches no pod: the term can never refuse a node
        terms.append({"selector": term["labelSelector"], "namespaces": namespaces or [namespace]})
    return terms


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
    try:
        return Constraints(
            node_name=str(document.get("nodeName", "")),
            node_selector=tuple(sorted((document.get("nodeSelector") or {}).items())),
            node_affinity=tuple(_term(t) for t in document.get("affinity", ())),
            tolerations=tuple(_toleration(t) for t in document.get("tolerations", ())),
            host_ports=tuple(HostPort(int(p), str(proto), str(ip)) for p, proto, ip in document.get("hostPorts", ())),
            anti_affinity=tuple(_anti_term(t) for t in document.get("antiAffinity", ())),
        )
    except (TypeError, AttributeError, KeyError) as error:
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
        int(text)
    except ValueError:
        return False
    return True


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


def _anti_term(raw: Mapping) -> AntiAffinityTerm:
    namespaces = raw.get("namespaces")
    return AntiAffinityTerm(label_selector(raw["selector"]),
                            frozenset([ALL_NAMESPACES]) if namespaces == ALL_NAMESPACES else frozenset(namespaces))


def parse_taints(text: str) -> tuple[Taint, ...]:
    """Taints from the node attribute (see ``nodes``); cached like ``decode``."""
    return _parse_taints(text) if text else ()


@functools.lru_cache(maxsize=4096)
def _parse_taints(text: str) -> tuple[Taint, ...]:
    return tuple(Taint(t.get("key", ""), t.get("value", ""), t["effect"]) for t in orjson.loads(text))
