"""The Kubernetes node filters, as the core's ``NodePredicates`` (see ``actors.core.plugins``).

The shim puts a pod's constraints in one ask tag (``constraints``) and a node's labels, taints and
cordon flag in its attributes (``nodes``); the core calls ``check`` only for a constrained ask or a
restricted node, so an unconstrained pod on an untainted node costs nothing per node. Host ports and
pod anti-affinity read the tags of the pods already on the node (YuniKorn's and foreign); a pod with
anti-affinity guards its node (``allocation_guards``), so every ask placed there is checked against it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from actors.shim import constraints as c
from actors.shim.keys import ATTR_TAINTS, ATTR_UNSCHEDULABLE, TAG_CONSTRAINTS
from si.constants import TAG_LABEL_PREFIX, TAG_NAMESPACE

UNSCHEDULABLE = "node(s) were unschedulable"
NODE_NAME = "node(s) didn't match the requested node name"
NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
HOST_PORTS = "node(s) didn't have free ports for the requested pod ports"
ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
_ANY_IP = ("", "0.0.0.0", "::")


class KubernetesPredicates:
    """Evaluates the node filters the shim supports; stateless and safe to call from any thread."""

    def ask_constrained(self, tags: Mapping[str, str]) -> bool:
        text = tags.get(TAG_CONSTRAINTS)
        if not text:
            return False
        try:
            return c.decode(text).restricts_nodes
        except c.ConstraintError:
            return True  # let check() report it

    def node_restricted(self, attributes: Mapping[str, str]) -> bool:
        return bool(attributes.get(ATTR_TAINTS)) or attributes.get(ATTR_UNSCHEDULABLE) == "true"

    def allocation_guards(self, tags: Mapping[str, str]) -> bool:
        text = tags.get(TAG_CONSTRAINTS)
        if not text:
            return False
        try:
            return bool(c.decode(text).anti_affinity)
        except c.ConstraintError:
            return False

    def check(self, ask_tags: Mapping[str, str], node_id: str, node_attributes: Mapping[str, str],
              node_allocation_tags: Iterable[Mapping[str, str]]) -> str | None:
        """``None`` when the ask may go on the node, else the reason, worded like kube-scheduler."""
        try:
            wanted = c.decode(ask_tags.get(TAG_CONSTRAINTS, ""))
        except c.ConstraintError as error:
            return str(error)
        if node_attributes.get(ATTR_UNSCHEDULABLE) == "true":
            return UNSCHEDULABLE
        if wanted.node_name and wanted.node_name != node_id:
            return NODE_NAME
        if not _node_affinity_matches(wanted, node_id, node_attributes):
            return NODE_AFFINITY
        taint = untolerated_taint(wanted.tolerations, c.parse_taints(node_attributes.get(ATTR_TAINTS, "")))
        if taint is not None:
            return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
        return _existing_pods_conflict(wanted, ask_tags, node_allocation_tags)


def _node_affinity_matches(wanted: c.Constraints, node_id: str, attributes: Mapping[str, str]) -> bool:
    for key, value in wanted.node_selector:
        if attributes.get(TAG_LABEL_PREFIX + key) != value:
            return False
    if wanted.node_affinity:
        return any(_term_matches(term, node_id, attributes) for term in wanted.node_affinity)
    return True


def _term_matches(term: c.NodeSelectorTerm, node_id: str, attributes: Mapping[str, str]) -> bool:
    if not term.expressions and not term.fields:
        return False  # an empty term selects no node
    for requirement in term.expressions:
        if not requirement_matches(requirement, attributes.get(TAG_LABEL_PREFIX + requirement.key)):
            return False
    return all(requirement_matches(field, node_id) for field in term.fields)


def requirement_matches(requirement: c.Requirement, value: str | None) -> bool:
    """Whether a label ``value`` (``None`` = the label is absent) satisfies ``requirement``."""
    operator = requirement.operator
    if operator == "In":
        return value is not None and value in requirement.values
    if operator == "NotIn":
        return value is None or value not in requirement.values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if value is None:
        return False
    try:
        actual, bound = int(value), int(next(iter(requirement.values)))
    except ValueError:
        return False
    return actual > bound if operator == "Gt" else actual < bound


def untolerated_taint(tolerations: tuple[c.Toleration, ...], taints: tuple[c.Taint, ...]) -> c.Taint | None:
    """The first filtering taint that no toleration tolerates."""
    for taint in taints:
        if not any(_tolerates(t, taint) for t in tolerations):
            return taint
    return None


def _tolerates(toleration: c.Toleration, taint: c.Taint) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.operator == "Exists":
        return not toleration.key or toleration.key == taint.key
    return toleration.key == taint.key and toleration.value == taint.value


def label_selector_matches(selector: c.LabelSelector, tags: Mapping[str, str]) -> bool:
    """Whether the pod whose allocation tags are ``tags`` has labels matching ``selector``."""
    for key, value in selector.match_labels:
        if tags.get(TAG_LABEL_PREFIX + key) != value:
            return False
    return all(requirement_matches(r, tags.get(TAG_LABEL_PREFIX + r.key)) for r in selector.expressions)


def _selects(term: c.AntiAffinityTerm, pod_tags: Mapping[str, str]) -> bool:
    in_namespace = c.ALL_NAMESPACES in term.namespaces or pod_tags.get(TAG_NAMESPACE) in term.namespaces
    return in_namespace and label_selector_matches(term.selector, pod_tags)


def _ports_conflict(wanted: tuple[c.HostPort, ...], used: tuple[c.HostPort, ...]) -> bool:
    for mine in wanted:
        for theirs in used:
            if mine.port == theirs.port and mine.protocol == theirs.protocol and (
                    mine.host_ip == theirs.host_ip or mine.host_ip in _ANY_IP or theirs.host_ip in _ANY_IP):
                return True
    return False


def _existing_pods_conflict(wanted: c.Constraints, ask_tags: Mapping[str, str],
                            node_allocation_tags: Iterable[Mapping[str, str]]) -> str | None:
    for tags in node_allocation_tags:
        if wanted.anti_affinity and any(_selects(term, tags) for term in wanted.anti_affinity):
            return ANTI_AFFINITY
        text = tags.get(TAG_CONSTRAINTS)
        if not text:
            continue
        try:
            theirs = c.decode(text)
        except c.ConstraintError:
            continue  # their own check already reported it
        if wanted.host_ports and _ports_conflict(wanted.host_ports, theirs.host_ports):
            return HOST_PORTS
        if any(_selects(term, ask_tags) for term in theirs.anti_affinity):
            return EXISTING_ANTI_AFFINITY
    return None
