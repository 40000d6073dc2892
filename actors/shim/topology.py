"""Inter-pod affinity, anti-affinity and topology spread: kube-scheduler's InterPodAffinity and
PodTopologySpread filters, over an index of where pods are that the core keeps current.

kube-scheduler counts in each PreFilter, over every pod of the cluster, the pods matching the incoming
pod's terms per topology domain (a ``(topologyKey, node label value)`` pair). Here a
:class:`TopologyIndex` (one per partition: the core's ``PlacementView``) is told every node and
allocation change and keeps the pods by label, and the pods whose required anti-affinity protects
their domains. An ask's counts are computed once per scheduling attempt from the few pods its
selectors can match (:meth:`TopologyIndex.prefilter`, cached until the index changes), so each node's
filter is a handful of dictionary lookups. Pods of other schedulers count like ours.

The index is plain state of its partition's actor: it is only called from that actor's thread.
"""

from __future__ import annotations

import sys
import types
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import orjson

from actors.shim import constraints as c
from actors.shim.keys import TAG_CONSTRAINTS
from si.constants import TAG_LABEL_PREFIX, TAG_NAMESPACE
from si.gonumber import parse_int

AFFINITY = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
SPREAD = "node(s) didn't match pod topology spread constraints"
SPREAD_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"
_PREFIX = len(TAG_LABEL_PREFIX)
LABEL_SETS_KEPT = 4096

# Whether a node passes an ask's node affinity and selector (when the first flag is set) and its
# tolerations (the second): the node filters a spread's nodeAffinityPolicy / nodeTaintsPolicy honour.
NodeAdmits = Callable[[c.Constraints, str, Mapping[str, str], bool, bool], bool]


def labels_of(tags: Mapping[str, str]) -> dict[str, str]:
    """The Kubernetes labels in a pod's allocation tags or a node's attributes."""
    return {k[_PREFIX:]: v for k, v in tags.items() if k.startswith(TAG_LABEL_PREFIX)}


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
    try:  # as Kubernetes: strconv.ParseInt of both
        actual, bound = parse_int(value), parse_int(next(iter(requirement.values)))
    except ValueError:
        return False
    return actual > bound if operator == "Gt" else actual < bound


def selector_matches(selector: c.LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """A label selector against labels; ``None`` (a null selector) matches nothing."""
    if selector is None:
        return False
    for key, value in selector.match_labels:
        if labels.get(key) != value:
            return False
    return all(requirement_matches(r, labels.get(r.key)) for r in selector.expressions)


def term_selects(term: c.PodAffinityTerm, namespace: str, labels: Mapping[str, str]) -> bool:
    """Whether ``term`` selects a pod of ``namespace`` with ``labels``."""
    return ((c.ALL_NAMESPACES in term.namespaces or namespace in term.namespaces)
            and selector_matches(term.selector, labels))


def resolve_namespaces(text: str, namespace_labels: Mapping[str, Mapping[str, str]]) -> str:
    """A constraints tag whose pod affinity terms' ``namespaceSelector`` is replaced by the namespaces
    it selects now (with the term's own ``namespaces``), as kube-scheduler resolves it in PreFilter."""
    document = orjson.loads(text)
    for kind in ("podAffinity", "antiAffinity", "preferredPodAffinity", "preferredAntiAffinity"):
        for term in document.get(kind, ()):
            raw = term.pop("nsSelector", None)
            if raw is None:
                continue
            selector = c.label_selector(raw)
            term["namespaces"] = sorted(set(term["namespaces"]) | {
                name for name, labels in namespace_labels.items() if selector_matches(selector, labels)})
    return orjson.dumps(document, option=orjson.OPT_SORT_KEYS).decode()


class _Pod:
    """A pod as the index keeps it; its labels are shared with the other pods that have the same
    (``TopologyIndex._shared_labels``: read only), as are its namespace and node strings. Its labels and
    namespace are read from its ``tags`` only once an ask's inter-pod terms look for pods
    (``TopologyIndex._label_waiting``): until then ``labels`` is None; its constraints are read at once,
    as its own anti-affinity guards its node from the start."""

    __slots__ = ("key", "node_id", "tags", "namespace", "labels", "constraints")

    def __init__(self, key: str, node_id: str, tags: Mapping[str, str]) -> None:
        self.key = key
        self.node_id = node_id  # interned by the index
        self.tags: Mapping[str, str] | None = tags  # until its labels are read
        self.namespace = ""
        self.labels: Mapping[str, str] | None = None
        self.constraints = c.NONE  # most pods have none: no call to decode (a recovery adds 100,000)
        raw = tags.get(TAG_CONSTRAINTS)
        if raw:
            try:
                self.constraints = c.decode(raw)
            except c.ConstraintError:
                pass  # its own check reported it


@dataclass(slots=True)
class _Spread:
    constraint: c.SpreadConstraint
    counts: Counter  # domain value -> matching pods on eligible nodes
    minimum: int  # the global minimum (0 below minDomains)
    self_match: int


@dataclass(slots=True)
class Prefiltered:
    """What one ask's filters need, computed once per attempt (kube-scheduler's preFilterState)."""

    affinity: tuple[c.PodAffinityTerm, ...]
    affinity_counts: Counter  # (topology key, value) -> pods matching all affinity terms
    affinity_self: bool  # no pod matches and the ask matches its own terms: it may start the group
    anti: tuple[tuple[str, frozenset[str]], ...]  # (topology key, domains holding a repelled pod)
    existing_anti: dict[str, set[str]]  # topology key -> domains whose pods repel the ask
    spread: tuple[_Spread, ...]
    preferred: tuple[tuple[int, str, Counter], ...] = ()  # (+/- weight, topology key, matching pods per domain)
    soft_spread: tuple[tuple[str, Counter], ...] = ()  # ScheduleAnyway: (topology key, matching pods per domain)


class TopologyIndex:
    """Where the pods of one partition are, by label and topology domain (see the module)."""

    def __init__(self, node_admits: NodeAdmits) -> None:
        self._node_admits = node_admits
        self.node_labels: dict[str, dict[str, str]] = {}
        self.node_attributes: dict[str, Mapping[str, str]] = {}
        self.node_pods: dict[str, set[str]] = {}
        self.pods: dict[str, _Pod] = {}
        self.by_label: dict[tuple[str, str], set[str]] = {}
        self.anti_by_label: dict[tuple[str, str], set[str]] = {}  # anti-affinity holders by a term's label
        self.anti_general: set[str] = set()  # anti-affinity holders with a term without matchLabels
        self.guard_domains: Counter = Counter()  # (key, value) -> anti-affinity terms protecting it
        self.guard_keys: Counter = Counter()
        self.version = 0
        self.node_version = 0
        self._cached: tuple | None = None
        self._eligible: dict = {}
        self._label_sets: dict[tuple[tuple[str, str], ...], Mapping[str, str]] = {}  # label tags -> labels, shared
        # Pods whose labels are not read yet: only asks with inter-pod terms read them, and a recovery
        # adds 100,000 pods that such an ask may never come for.
        self._unlabelled: dict[str, _Pod] = {}  # by key: a pod that goes leaves it

    # ---- told by the core ------------------------------------------------------------------------

    def node_updated(self, node_id: str, attributes: Mapping[str, str]) -> None:
        """``attributes``: kept as they are (the core never changes them: it sends new ones)."""
        if attributes == self.node_attributes.get(node_id):
            return
        labels = labels_of(attributes)
        # The pods' entries depend on the node's labels alone: an attribute that is no label (the
        # node's state, set as every recovered node turns schedulable) leaves them as they are.
        pods = [] if labels == self.node_labels.get(node_id) else [self.pods[k] for k in self.node_pods.get(node_id, ())]
        for pod in pods:
            self._unindex(pod)
        self.node_labels[node_id] = labels
        self.node_attributes[node_id] = attributes
        self.node_pods.setdefault(node_id, set())
        for pod in pods:
            self._index(pod)
        self.node_version += 1
        self._eligible.clear()
        self.version += 1

    def node_removed(self, node_id: str) -> None:
        for key in list(self.node_pods.get(node_id, ())):
            self.allocation_removed(node_id, key)
        self.node_labels.pop(node_id, None)
        self.node_attributes.pop(node_id, None)
        self.node_pods.pop(node_id, None)
        self.node_version += 1
        self._eligible.clear()
        self.version += 1

    def allocation_added(self, node_id: str, key: str, tags: Mapping[str, str]) -> None:
        self.allocations_added(node_id, ((key, tags),))

    def allocations_added(self, node_id: str, allocations: Iterable[tuple[str, Mapping[str, str]]]) -> None:
        """Allocations ``(key, tags)`` on one node (a recovery tells a node's at once)."""
        node_id = sys.intern(node_id)
        pods = self.pods
        on_node = self.node_pods.get(node_id)
        if on_node is None:
            on_node = self.node_pods[node_id] = set()
        unlabelled = self._unlabelled
        for key, tags in allocations:
            if key in pods:
                self.allocation_removed(pods[key].node_id, key)
            pod = pods[key] = _Pod(key, node_id, tags)
            on_node.add(key)
            unlabelled[key] = pod  # a new pod's labels are read later (see _label_waiting)
            if pod.constraints.anti_affinity:
                self._guard(pod)
        self.version += 1

    def _label_waiting(self) -> None:
        """Read the labels and namespace of the pods added since the last search for pods."""
        waiting, self._unlabelled = self._unlabelled, {}
        for pod in waiting.values():
            tags = pod.tags
            pod.namespace = sys.intern(tags.get(TAG_NAMESPACE, ""))
            pod.labels = self._shared_labels(tags)
            pod.tags = None
            self._index_labels(pod)

    def _shared_labels(self, tags: Mapping[str, str]) -> Mapping[str, str]:
        """The pod's labels, one read-only mapping for every pod with the same (the pods of a workload);
        at most ``LABEL_SETS_KEPT`` sets are remembered, the oldest forgotten first."""
        # Known by its label tags as they are: a pod whose set is known builds no mapping of its own.
        key = tuple([(name, value) for name, value in tags.items() if name.startswith(TAG_LABEL_PREFIX)])
        shared = self._label_sets.get(key)
        if shared is None:
            while len(self._label_sets) >= LABEL_SETS_KEPT:
                del self._label_sets[next(iter(self._label_sets))]
            shared = self._label_sets[key] = types.MappingProxyType(labels_of(dict(key)))
        return shared

    def allocation_removed(self, node_id: str, key: str) -> None:
        pod = self.pods.pop(key, None)
        if pod is None:
            return
        self._unindex(pod)
        self.node_pods.get(pod.node_id, set()).discard(key)
        self.version += 1

    def guarded(self, node_id: str) -> bool:
        """Whether an existing pod's required anti-affinity covers ``node_id`` (so any ask is checked)."""
        if not self.guard_keys:
            return False
        labels = self.node_labels.get(node_id) or {}
        for key in self.guard_keys:
            value = labels.get(key)
            if value is not None and (key, value) in self.guard_domains:
                return True
        return False

    def _index(self, pod: _Pod) -> None:
        if pod.labels is None:
            self._unlabelled[pod.key] = pod
        else:
            self._index_labels(pod)
        self._guard(pod)

    def _guard(self, pod: _Pod) -> None:
        """The domains the pod's required anti-affinity protects."""
        terms = pod.constraints.anti_affinity
        if not terms:
            return
        labels = self.node_labels.get(pod.node_id) or {}
        for term in terms:
            if term.selector.match_labels:
                self.anti_by_label.setdefault(term.selector.match_labels[0], set()).add(pod.key)
            else:
                self.anti_general.add(pod.key)
            value = labels.get(term.topology_key)
            if value is not None:
                self.guard_domains[(term.topology_key, value)] += 1
                self.guard_keys[term.topology_key] += 1

    def _index_labels(self, pod: _Pod) -> None:
        by_label = self.by_label
        for pair in pod.labels.items():
            keys = by_label.get(pair)
            if keys is None:  # not setdefault: it would build a set for every pod, to throw away
                keys = by_label[pair] = set()
            keys.add(pod.key)

    def _unindex(self, pod: _Pod) -> None:
        if pod.labels is None:
            self._unlabelled.pop(pod.key, None)
        else:
            for pair in pod.labels.items():
                keys = self.by_label.get(pair)
                if keys is not None:
                    keys.discard(pod.key)
                    if not keys:
                        del self.by_label[pair]
        terms = pod.constraints.anti_affinity
        if not terms:
            return
        labels = self.node_labels.get(pod.node_id) or {}
        for term in terms:
            if term.selector.match_labels:
                keys = self.anti_by_label.get(term.selector.match_labels[0])
                if keys is not None:
                    keys.discard(pod.key)
                    if not keys:
                        del self.anti_by_label[term.selector.match_labels[0]]
            else:
                self.anti_general.discard(pod.key)
            value = labels.get(term.topology_key)
            if value is not None:
                _decrement(self.guard_domains, (term.topology_key, value))
                _decrement(self.guard_keys, term.topology_key)

    # ---- PreFilter -------------------------------------------------------------------------------

    def prefilter(self, ask_tags: Mapping[str, str], wanted: c.Constraints) -> Prefiltered:
        """The ask's counts; computed again only when the index changed or another ask comes."""
        cached = self._cached
        if cached is not None and cached[0] is ask_tags and cached[1] == self.version:
            return cached[2]
        namespace = ask_tags.get(TAG_NAMESPACE, "")
        labels = labels_of(ask_tags)
        state = Prefiltered(
            wanted.pod_affinity, Counter(), False,
            tuple((t.topology_key, frozenset(self._domain_counts(t))) for t in wanted.anti_affinity),
            self._existing_anti(namespace, labels),
            tuple(self._spread(s, wanted, namespace, labels) for s in wanted.spread if s.hard))
        if wanted.prefers_nodes:
            state.preferred = tuple(
                [(w.weight, w.term.topology_key, self._domain_counts(w.term)) for w in wanted.preferred_affinity]
                + [(-w.weight, w.term.topology_key, self._domain_counts(w.term))
                   for w in wanted.preferred_anti_affinity])
            state.soft_spread = tuple((s.topology_key, self._spread_counts(s, namespace))
                                      for s in wanted.spread if not s.hard)
        if wanted.pod_affinity:
            state.affinity_counts = self._affinity_counts(wanted.pod_affinity)
            state.affinity_self = not state.affinity_counts and all(
                term_selects(t, namespace, labels) for t in wanted.pod_affinity)
        self._cached = (ask_tags, self.version, state)
        return state

    def _candidates(self, selector: c.LabelSelector | None) -> Iterable[_Pod]:
        """The pods ``selector`` may match: those carrying its rarest required label, else all."""
        if selector is None:
            return ()
        if self._unlabelled:
            self._label_waiting()
        best: set[str] | None = None
        for pair in selector.match_labels:
            keys = self.by_label.get(pair)
            if keys is None:
                return ()
            if best is None or len(keys) < len(best):
                best = keys
        if best is None:
            for requirement in selector.expressions:
                if requirement.operator == "In":
                    union: set[str] = set()
                    for value in requirement.values:
                        union |= self.by_label.get((requirement.key, value), set())
                    if best is None or len(union) < len(best):
                        best = union
        if best is None:
            return self.pods.values()
        pods = self.pods
        return [pods[k] for k in best]

    def _domain_of(self, pod: _Pod, key: str) -> str | None:
        return (self.node_labels.get(pod.node_id) or {}).get(key)

    def _domain_counts(self, term: c.PodAffinityTerm) -> Counter:
        counts: Counter = Counter()
        for pod in self._candidates(term.selector):
            if term_selects(term, pod.namespace, pod.labels):
                value = self._domain_of(pod, term.topology_key)
                if value is not None:
                    counts[value] += 1
        return counts

    def _affinity_counts(self, terms: tuple[c.PodAffinityTerm, ...]) -> Counter:
        """Per (key, value): the pods matching every term (as kube-scheduler's affinityCounts)."""
        counts: Counter = Counter()
        for pod in self._candidates(terms[0].selector):
            if all(term_selects(t, pod.namespace, pod.labels) for t in terms):
                for term in terms:
                    value = self._domain_of(pod, term.topology_key)
                    if value is not None:
                        counts[(term.topology_key, value)] += 1
        return counts

    def _existing_anti(self, namespace: str, labels: Mapping[str, str]) -> dict[str, set[str]]:
        if not self.guard_keys:
            return {}
        holders = set(self.anti_general)
        for pair in labels.items():
            holders |= self.anti_by_label.get(pair, set())
        forbidden: dict[str, set[str]] = {}
        for key in holders:
            pod = self.pods[key]
            for term in pod.constraints.anti_affinity:
                if term_selects(term, namespace, labels):
                    value = self._domain_of(pod, term.topology_key)
                    if value is not None:
                        forbidden.setdefault(term.topology_key, set()).add(value)
        return forbidden

    def _spread(self, constraint: c.SpreadConstraint, wanted: c.Constraints, namespace: str,
                labels: Mapping[str, str]) -> _Spread:
        eligible, domains = self._eligible_nodes(constraint, wanted)
        counts: Counter = Counter()
        for pod in self._candidates(constraint.selector):
            if pod.namespace == namespace and pod.node_id in eligible and selector_matches(constraint.selector,
                                                                                         pod.labels):
                counts[self.node_labels[pod.node_id][constraint.topology_key]] += 1
        if len(domains) < constraint.min_domains or len(counts) < len(domains):
            minimum = 0
        else:
            minimum = min(counts[d] for d in domains)
        return _Spread(constraint, counts, minimum, int(selector_matches(constraint.selector, labels)))

    def _spread_counts(self, constraint: c.SpreadConstraint, namespace: str) -> Counter:
        counts: Counter = Counter()
        for pod in self._candidates(constraint.selector):
            if pod.namespace == namespace and selector_matches(constraint.selector, pod.labels):
                value = self._domain_of(pod, constraint.topology_key)
                if value is not None:
                    counts[value] += 1
        return counts

    def _eligible_nodes(self, constraint: c.SpreadConstraint, wanted: c.Constraints) -> tuple[set[str], set[str]]:
        """The nodes whose pods count for the spread, and their domains: nodes with every hard
        constraint's key, passing the ask's node affinity (nodeAffinityPolicy Honor) and taints
        (nodeTaintsPolicy Honor). Cached per node filter until a node changes."""
        keys = tuple(sorted({s.topology_key for s in wanted.spread if s.hard}))
        affinity = (wanted.node_selector, wanted.node_affinity) if constraint.honor_node_affinity else None
        tolerations = wanted.tolerations if constraint.honor_node_taints else None
        cache_key = (keys, affinity, tolerations, constraint.topology_key)
        found = self._eligible.get(cache_key)
        if found is None:
            eligible: set[str] = set()
            domains: set[str] = set()
            admits = self._node_admits
            honor_affinity, honor_taints = affinity is not None, tolerations is not None
            for node_id, labels in self.node_labels.items():
                if not all(k in labels for k in keys):
                    continue
                if (honor_affinity or honor_taints) and not admits(
                        wanted, node_id, self.node_attributes[node_id], honor_affinity, honor_taints):
                    continue
                eligible.add(node_id)
                domains.add(labels[constraint.topology_key])
            found = self._eligible[cache_key] = (eligible, domains)
        return found

    # ---- Score -----------------------------------------------------------------------------------

    def score(self, ask_tags: Mapping[str, str], wanted: c.Constraints, node_id: str) -> float:
        """kube-scheduler's InterPodAffinity and PodTopologySpread scores, unnormalised: each preferred
        term's weight per matching pod in the node's domain (negative for anti-affinity), less the
        matching pods in the node's domain of each ScheduleAnyway constraint (fewer is better)."""
        state = self.prefilter(ask_tags, wanted)
        labels = self.node_labels.get(node_id) or {}
        score = 0.0
        for weight, key, counts in state.preferred:
            value = labels.get(key)
            if value is not None:
                score += weight * counts[value]
        for key, counts in state.soft_spread:
            value = labels.get(key)
            score -= counts[value] if value is not None else len(self.pods) + 1  # no domain: last
        return score

    # ---- Filter ----------------------------------------------------------------------------------

    def filter(self, ask_tags: Mapping[str, str], wanted: c.Constraints, node_id: str) -> str | None:
        """``None`` when the ask's inter-pod constraints allow ``node_id``, else kube-scheduler's reason."""
        state = self.prefilter(ask_tags, wanted)
        labels = self.node_labels.get(node_id) or {}
        if state.affinity:
            exists = True
            for term in state.affinity:
                value = labels.get(term.topology_key)
                if value is None:
                    return AFFINITY
                if state.affinity_counts[(term.topology_key, value)] <= 0:
                    exists = False
            if not exists and not state.affinity_self:
                return AFFINITY
        for key, domains in state.anti:
            value = labels.get(key)
            if value is not None and value in domains:
                return ANTI_AFFINITY
        for key, domains in state.existing_anti.items():
            value = labels.get(key)
            if value is not None and value in domains:
                return EXISTING_ANTI_AFFINITY
        for spread in state.spread:
            value = labels.get(spread.constraint.topology_key)
            if value is None:
                return SPREAD_LABEL
            if spread.counts[value] + spread.self_match - spread.minimum > spread.constraint.max_skew:
                return SPREAD
        return None


def _decrement(counter: Counter, key) -> None:
    counter[key] -= 1
    if counter[key] <= 0:
        del counter[key]
