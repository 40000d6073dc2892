"""The Kubernetes node filters, as the core's ``NodePredicates`` (see ``actors.core.plugins``).

The shim puts a pod's constraints in one ask tag (``constraints``) and a node's labels, taints and
cordon flag in its attributes (``nodes``); the core calls ``check`` only for a constrained ask, a
restricted node, or a node inside a domain an existing pod's anti-affinity protects, so an
unconstrained pod on a plain node costs nothing per node. Host ports read the tags of the pods already
on the node (YuniKorn's and foreign); inter-pod affinity, anti-affinity and topology spread read the
partition's :class:`~actors.shim.topology.TopologyIndex` (its ``view``). ``score`` ranks the nodes that
take an ask with preferences (preferred affinities, ScheduleAnyway spread).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from actors.shim import constraints as c
from actors.shim.keys import ATTR_TAINTS, ATTR_UNSCHEDULABLE, TAG_CONSTRAINTS
from actors.shim.nodes import parse_node
from actors.shim.topology import (  # noqa: F401 (the reasons are part of this module's interface)
    AFFINITY,
    ANTI_AFFINITY,
    EXISTING_ANTI_AFFINITY,
    SPREAD,
    SPREAD_LABEL,
    TopologyIndex,
    requirement_matches,
)
from si.constants import TAG_LABEL_PREFIX
from si.kubernetes import tolerates

UNSCHEDULABLE = "node(s) were unschedulable"
NODE_NAME = "node(s) didn't match the requested node name"
NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
VOLUME_AFFINITY = "node(s) had volume node affinity conflict"
NO_VOLUME = "node(s) didn't find available persistent volumes to bind"
HOST_PORTS = "node(s) didn't have free ports for the requested pod ports"
_ANY_IP = ("", "0.0.0.0", "::")


class KubernetesPredicates:
    """Evaluates the node filters the shim supports; holds no state (each partition's topology index
    is its ``view``), so one instance serves every partition."""

    def ask_constrained(self, tags: Mapping[str, str]) -> bool:
        text = tags.get(TAG_CONSTRAINTS)
        if not text:
            return False
        try:
            wanted = c.decode(text)
        except c.ConstraintError:
            return True  # let check() report it
        return wanted.restricts_nodes or wanted.prefers_nodes

    def ask_prefers(self, tags: Mapping[str, str]) -> bool:
        try:
            return c.decode(tags.get(TAG_CONSTRAINTS, "")).prefers_nodes
        except c.ConstraintError:
            return False

    def score(self, ask_tags: Mapping[str, str], node_id: str, node_attributes: Mapping[str, str],
              view: TopologyIndex) -> float:
        """Preferred node affinity weights that match, plus the topology preferences (``view.score``)."""
        wanted = c.decode(ask_tags.get(TAG_CONSTRAINTS, ""))
        score = float(sum(weight for weight, term in wanted.preferred_node_affinity
                          if _term_matches(term, node_id, node_attributes)))
        return score + view.score(ask_tags, wanted, node_id)

    def node_restricted(self, attributes: Mapping[str, str]) -> bool:
        return bool(attributes.get(ATTR_TAINTS)) or attributes.get(ATTR_UNSCHEDULABLE) == "true"

    def view(self) -> TopologyIndex:
        return TopologyIndex(node_admits)

    def check(self, ask_tags: Mapping[str, str], node_id: str, node_attributes: Mapping[str, str],
              node_allocation_tags: Iterable[Mapping[str, str]], view: TopologyIndex) -> str | None:
        """``None`` when the ask may go on the node, else the reason, worded like kube-scheduler."""
        try:
            wanted = c.decode(ask_tags.get(TAG_CONSTRAINTS, ""))
        except c.ConstraintError as error:
            return str(error)
        if node_attributes.get(ATTR_UNSCHEDULABLE) == "true":
            return UNSCHEDULABLE
        if wanted.node_name and wanted.node_name != node_id:
            return NODE_NAME
        if not node_affinity_matches(wanted, node_id, node_attributes):
            return NODE_AFFINITY
        for terms in wanted.volume_affinity:
            if not any(_term_matches(t, node_id, node_attributes) for t in terms):
                return VOLUME_AFFINITY
        for choices in wanted.volume_choices:
            if not any(any(_term_matches(t, node_id, node_attributes) for t in terms) for terms in choices):
                return NO_VOLUME
        taint = untolerated_taint(wanted.tolerations, c.parse_taints(node_attributes.get(ATTR_TAINTS, "")))
        if taint is not None:
            return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
        if wanted.host_ports and _ports_conflict(wanted.host_ports, node_allocation_tags):
            return HOST_PORTS
        return view.filter(ask_tags, wanted, node_id)


def volume_allows(raw_terms, node: Mapping) -> bool:
    """Whether a volume's ``nodeSelectorTerms`` (JSON) allow ``node`` (a node's JSON)."""
    record = parse_node(node)
    attributes = record.attributes()
    return any(_term_matches(c.node_selector_term(t), record.name, attributes) for t in raw_terms)


def node_admits(wanted: c.Constraints, node_id: str, attributes: Mapping[str, str], affinity: bool,
                taints: bool) -> bool:
    """The node filters a topology spread honours (see ``topology.NodeAdmits``)."""
    if affinity and not node_affinity_matches(wanted, node_id, attributes):
        return False
    return not taints or untolerated_taint(wanted.tolerations, c.parse_taints(attributes.get(ATTR_TAINTS, ""))) is None


def node_affinity_matches(wanted: c.Constraints, node_id: str, attributes: Mapping[str, str]) -> bool:
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


def untolerated_taint(tolerations: tuple[c.Toleration, ...], taints: tuple[c.Taint, ...]) -> c.Taint | None:
    """The first filtering taint that no toleration tolerates."""
    for taint in taints:
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def _ports_conflict(wanted: tuple[c.HostPort, ...], node_allocation_tags: Iterable[Mapping[str, str]]) -> bool:
    for tags in node_allocation_tags:
        text = tags.get(TAG_CONSTRAINTS)
        if not text:
            continue
        try:
            used = c.decode(text).host_ports
        except c.ConstraintError:
            continue  # their own check already reported it
        for mine in wanted:
            for theirs in used:
                if mine.port == theirs.port and mine.protocol == theirs.protocol and (
                        mine.host_ip == theirs.host_ip or mine.host_ip in _ANY_IP or theirs.host_ip in _ANY_IP):
                    return True
    return False
