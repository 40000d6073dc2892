"""Inter-pod affinity, anti-affinity and topology spread, node by node: the cases of kube-scheduler's
InterPodAffinity and PodTopologySpread filter tests (``filtering_test.go``), named after them, run
through the predicates and a topology index fed as the core feeds it."""

from __future__ import annotations

import dataclasses

import pytest

from actors.shim import constraints
from actors.shim.keys import TAG_CONSTRAINTS
from actors.shim.nodeactor import ATTR_NODE_STATE
from actors.shim.nodes import parse_node
from actors.shim.pods import parse_pod
from actors.shim.predicates import (
    AFFINITY,
    ANTI_AFFINITY,
    EXISTING_ANTI_AFFINITY,
    SPREAD,
    SPREAD_LABEL,
    KubernetesPredicates,
)
from actors.shim.topology import resolve_namespaces
from actors.shim.translate import allocation_tags
from tests.shim.factories import node_json, pod_json

predicates = KubernetesPredicates()
ZONE = "zone"


class World:
    """Nodes and the pods on them, as a partition's view holds them."""

    def __init__(self, nodes: dict[str, dict], taints: dict[str, list] | None = None) -> None:
        self.view = predicates.view()
        self.nodes = {}
        for name, labels in nodes.items():
            record = parse_node(node_json(name, labels=labels, taints=(taints or {}).get(name)))
            self.nodes[name] = record.attributes()
            self.view.node_updated(name, self.nodes[name])
        self.on_node: dict[str, list] = {name: [] for name in nodes}
        self.serial = 0

    def place(self, node: str, labels: dict | None = None, namespace: str = "default", **spec) -> str:
        tags = pod_tags(labels, namespace, **spec)
        self.serial += 1
        key = f"pod-{self.serial}"
        self.view.allocation_added(node, key, tags)
        self.on_node[node].append(tags)
        return key

    def verdicts(self, labels: dict | None = None, namespace: str = "default", **spec) -> dict[str, str | None]:
        tags = pod_tags(labels, namespace, **spec)
        return {name: predicates.check(tags, name, attributes, self.on_node[name], self.view)
                for name, attributes in self.nodes.items()}

    def fits(self, labels: dict | None = None, namespace: str = "default", **spec) -> set[str]:
        return {name for name, why in self.verdicts(labels, namespace, **spec).items() if why is None}


def pod_tags(labels: dict | None, namespace: str, **spec) -> dict:
    return allocation_tags(parse_pod(pod_json(namespace=namespace, labels=labels, spec=spec)))


def term(selector: dict | None, key: str = ZONE, **extra) -> dict:
    return {"labelSelector": selector, "topologyKey": key, **extra}


def affinity(*terms, anti=()) -> dict:
    result = {}
    if terms:
        result["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}
    if anti:
        result["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(anti)}
    return result


def labels_in(key: str, *values: str, operator: str = "In") -> dict:
    return {"matchExpressions": [{"key": key, "operator": operator, "values": list(values)}]}


# ---- InterPodAffinity: TestRequiredAffinitySingleNode --------------------------------------------

def one_node() -> World:
    return World({"machine1": {ZONE: "z1", "region": "r1"}})


def test_interpodaffinity_a_pod_without_required_affinity_schedules_onto_a_node_with_no_existing_pods():
    assert one_node().fits() == {"machine1"}


def test_interpodaffinity_satisfies_required_affinity_using_in_operator_that_matches_the_existing_pod():
    world = one_node()
    world.place("machine1", {"service": "securityscan"})
    assert world.fits(affinity=affinity(term(labels_in("service", "securityscan", "value2")))) == {"machine1"}


def test_interpodaffinity_satisfies_required_affinity_using_not_in_operator_that_matches_the_existing_pod():
    world = one_node()
    world.place("machine1", {"service": "securityscan"})
    spec = affinity(term(labels_in("service", "securityscan3", "value3", operator="NotIn")))
    assert world.fits(affinity=spec) == {"machine1"}


def test_interpodaffinity_does_not_satisfy_affinity_with_label_selector_because_of_diff_namespace():
    world = one_node()
    world.place("machine1", {"service": "securityscan"})
    spec = affinity(term(labels_in("service", "securityscan"), namespaces=["DiffNameSpace"]))
    assert world.verdicts(affinity=spec) == {"machine1": AFFINITY}


def test_interpodaffinity_does_not_satisfy_affinity_because_of_unmatching_label_selector():
    world = one_node()
    world.place("machine1", {"service": "securityscan"})
    assert world.verdicts(affinity=affinity(term(labels_in("service", "antivirusscan")))) == {"machine1": AFFINITY}


def test_interpodaffinity_match_expressions_are_anded_one_unmatched_item_refuses_the_node():
    world = one_node()
    world.place("machine1", {"service": "securityscan"})
    selector = {"matchExpressions": [{"key": "service", "operator": "Exists"},
                                     {"key": "wrongkey", "operator": "DoesNotExist"},
                                     {"key": "service", "operator": "In", "values": ["WrongValue"]}]}
    assert world.verdicts(affinity=affinity(term(selector))) == {"machine1": AFFINITY}


def test_interpodaffinity_satisfies_affinity_and_anti_affinity_with_the_existing_pod():
    world = one_node()
    world.place("machine1", {"service": "securityscan"})
    spec = affinity(term(labels_in("service", "securityscan")), anti=[term(labels_in("service", "antivirusscan"))])
    assert world.fits(affinity=spec) == {"machine1"}


def test_interpodaffinity_satisfies_affinity_but_not_anti_affinity_with_the_existing_pod():
    world = one_node()
    world.place("machine1", {"service": "securityscan"})
    spec = affinity(term(labels_in("service", "securityscan")), anti=[term(labels_in("service", "securityscan"))])
    assert world.verdicts(affinity=spec) == {"machine1": ANTI_AFFINITY}


def test_interpodaffinity_satisfies_affinity_and_anti_affinity_but_not_anti_affinity_symmetry():
    world = one_node()
    world.place("machine1", {"service": "securityscan"}, affinity=affinity(anti=[term(labels_in("service", "db"))]))
    spec = affinity(term(labels_in("service", "securityscan")), anti=[term(labels_in("service", "antivirusscan"))])
    assert world.verdicts({"service": "db"}, affinity=spec) == {"machine1": EXISTING_ANTI_AFFINITY}


def test_interpodaffinity_pod_matches_its_own_label_in_affinity_and_that_matches_the_existing_pod():
    world = one_node()
    world.place("machine1", {"service": "securityscan"})
    assert world.fits({"service": "securityscan"},
                      affinity=affinity(term(labels_in("service", "securityscan")))) == {"machine1"}


def test_interpodaffinity_existing_pods_anti_affinity_is_respected_when_the_pod_has_none():
    world = one_node()
    world.place("machine1", {"service": "securityscan"}, affinity=affinity(anti=[term(labels_in("service", "db"))]))
    assert world.verdicts({"service": "db"}) == {"machine1": EXISTING_ANTI_AFFINITY}
    assert world.fits({"service": "web"}) == {"machine1"}


def test_interpodaffinity_symmetry_incoming_and_existing_pods_partially_match_each_other_on_terms():
    world = one_node()
    world.place("machine1", {"abc": "", "xyz": ""},
                affinity=affinity(anti=[term({"matchExpressions": [{"key": "abc", "operator": "Exists"}]})]))
    spec = affinity(anti=[term({"matchExpressions": [{"key": "def", "operator": "Exists"}]})])
    assert world.verdicts({"abc": ""}, affinity=spec) == {"machine1": EXISTING_ANTI_AFFINITY}


def test_interpodaffinity_match_label_keys_and_mismatch_label_keys_are_merged_into_the_selector():
    world = one_node()
    world.place("machine1", {"service": "securityscan", "tenant": "a"})
    same_tenant = affinity(term(labels_in("service", "securityscan"), matchLabelKeys=["tenant"]))
    assert world.fits({"tenant": "a"}, affinity=same_tenant) == {"machine1"}
    assert world.verdicts({"tenant": "b"}, affinity=same_tenant) == {"machine1": AFFINITY}
    other_tenant = affinity(anti=[term(labels_in("service", "securityscan"), mismatchLabelKeys=["tenant"])])
    assert world.verdicts({"tenant": "b"}, affinity=other_tenant) == {"machine1": ANTI_AFFINITY}
    assert world.fits({"tenant": "a"}, affinity=other_tenant) == {"machine1"}


def test_interpodaffinity_namespace_selector_is_resolved_to_the_namespaces_it_selects():
    world = one_node()
    world.place("machine1", {"service": "securityscan"}, namespace="team-x")
    spec = affinity(anti=[term(labels_in("service", "securityscan"), namespaces=["listed"],
                               namespaceSelector={"matchLabels": {"team": "x"}})])
    pod = parse_pod(pod_json(spec={"affinity": spec}))
    assert pod.namespace_selectors
    labels = {"team-x": {"team": "x"}, "team-y": {"team": "y"}, "listed": {}}
    resolved = allocation_tags(dataclasses.replace(pod, constraints=resolve_namespaces(pod.constraints, labels)))
    (anti,) = constraints.decode(resolved[TAG_CONSTRAINTS]).anti_affinity
    assert anti.namespaces == {"team-x", "listed"}
    assert predicates.check(resolved, "machine1", world.nodes["machine1"], (), world.view) == ANTI_AFFINITY
    nobody = resolve_namespaces(pod.constraints, {"team-y": {"team": "y"}})
    assert predicates.check({**resolved, TAG_CONSTRAINTS: nobody}, "machine1", world.nodes["machine1"], (),
                            world.view) is None


def test_interpodaffinity_empty_namespace_selector_selects_every_namespace():
    world = one_node()
    world.place("machine1", {"service": "securityscan"}, namespace="other")
    spec = affinity(anti=[term(labels_in("service", "securityscan"))])
    assert world.fits(affinity=spec) == {"machine1"}
    spec = affinity(anti=[term(labels_in("service", "securityscan"), namespaceSelector={})])
    assert world.verdicts(affinity=spec) == {"machine1": ANTI_AFFINITY}


# ---- InterPodAffinity: TestRequiredAffinityMultipleNodes -----------------------------------------

def three_zonal_nodes() -> World:
    return World({"nodeA": {ZONE: "z1"}, "nodeB": {ZONE: "z1"}, "nodeC": {ZONE: "z2"}})


def test_interpodaffinity_all_nodes_of_the_topology_value_of_an_existing_matching_pod_fit():
    world = three_zonal_nodes()
    world.place("nodeA", {"foo": "bar"})
    assert world.fits(affinity=affinity(term(labels_in("foo", "bar")))) == {"nodeA", "nodeB"}


def test_interpodaffinity_the_first_pod_of_a_collection_is_not_blocked_anywhere():
    world = three_zonal_nodes()
    spec = affinity(term(labels_in("foo", "bar")))
    assert world.fits({"foo": "bar"}, affinity=spec) == {"nodeA", "nodeB", "nodeC"}
    assert world.fits({"foo": "other"}, affinity=spec) == set()  # it does not match itself


def test_interpodaffinity_the_first_pod_of_a_collection_only_goes_to_nodes_with_the_topology_key():
    world = World({"nodeA": {ZONE: "z1"}, "nodeB": {}})
    assert world.verdicts({"foo": "bar"}, affinity=affinity(term(labels_in("foo", "bar")))) == {
        "nodeA": None, "nodeB": AFFINITY}


def test_interpodaffinity_anti_affinity_refuses_every_node_of_the_existing_pods_topology_value():
    world = three_zonal_nodes()
    world.place("nodeA", {"foo": "bar"})
    assert world.verdicts(affinity=affinity(anti=[term(labels_in("foo", "bar"))])) == {
        "nodeA": ANTI_AFFINITY, "nodeB": ANTI_AFFINITY, "nodeC": None}


def test_interpodaffinity_anti_affinity_matches_when_any_term_matches():
    world = three_zonal_nodes()
    world.place("nodeA", {"foo": "bar"})
    world.place("nodeC", {"bar": "baz"})
    spec = affinity(anti=[term(labels_in("foo", "bar")), term(labels_in("bar", "baz"), key="kubernetes.io/hostname")])
    assert world.fits(affinity=spec) == set()


def test_interpodaffinity_incoming_anti_affinity_only_refuses_nodes_with_the_topology_key():
    world = World({"nodeA": {ZONE: "z1"}, "nodeB": {}})
    world.place("nodeA", {"foo": "bar"})
    assert world.fits(affinity=affinity(anti=[term(labels_in("foo", "bar"))])) == {"nodeB"}


def test_interpodaffinity_existing_pods_anti_affinity_on_zone_refuses_the_whole_zone():
    world = three_zonal_nodes()
    world.place("nodeA", {"app": "guard"}, affinity=affinity(anti=[term(labels_in("foo", "bar"))]))
    assert world.view.guarded("nodeB") and not world.view.guarded("nodeC")
    assert world.verdicts({"foo": "bar"}) == {
        "nodeA": EXISTING_ANTI_AFFINITY, "nodeB": EXISTING_ANTI_AFFINITY, "nodeC": None}


def test_interpodaffinity_index_follows_pods_leaving_and_nodes_relabelled():
    world = three_zonal_nodes()
    key = world.place("nodeA", {"foo": "bar"})
    spec = affinity(anti=[term(labels_in("foo", "bar"))])
    assert world.fits(affinity=spec) == {"nodeC"}
    world.view.node_updated("nodeA", parse_node(node_json("nodeA", labels={ZONE: "z2"})).attributes())
    assert world.fits(affinity=spec) == {"nodeB"}
    world.view.allocation_removed("nodeA", key)
    world.on_node["nodeA"].clear()
    assert world.fits(affinity=spec) == {"nodeA", "nodeB", "nodeC"}
    assert not world.view.guarded("nodeA")


def test_interpodaffinity_index_keeps_its_pods_when_a_node_update_changes_no_label():
    world = three_zonal_nodes()
    world.place("nodeA", {"app": "guard"}, affinity=affinity(anti=[term(labels_in("foo", "bar"))]))
    world.place("nodeA", {"foo": "bar"})
    before = world.verdicts({"foo": "bar"}), world.fits(affinity=affinity(anti=[term(labels_in("foo", "bar"))]))
    # what a recovered node sends as it turns schedulable: its state, no label changed
    world.nodes["nodeA"] = {**world.nodes["nodeA"], ATTR_NODE_STATE: "Schedulable"}
    world.view.node_updated("nodeA", world.nodes["nodeA"])
    assert world.view.guarded("nodeB") and not world.view.guarded("nodeC")
    assert (world.verdicts({"foo": "bar"}), world.fits(affinity=affinity(anti=[term(labels_in("foo", "bar"))]))) == before
    world.view.node_updated("nodeA", parse_node(node_json("nodeA", labels={ZONE: "z2"})).attributes())
    assert world.view.guarded("nodeA") and not world.view.guarded("nodeB")


def test_interpodaffinity_pods_of_other_schedulers_count():
    world = three_zonal_nodes()
    world.place("nodeA", {"foo": "bar"}, schedulerName="default-scheduler")
    assert world.fits(affinity=affinity(anti=[term(labels_in("foo", "bar"))])) == {"nodeC"}


# ---- PodTopologySpread: TestSingleConstraint, TestMultipleConstraints ----------------------------

def spread(max_skew: int = 1, key: str = ZONE, selector: dict | None = None, **extra) -> dict:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": selector if selector is not None else {"matchLabels": {"foo": ""}}, **extra}


def four_nodes(zone_b: bool = True) -> World:
    return World({"node-a": {ZONE: "zone1", "node": "node-a"}, "node-b": {ZONE: "zone1", "node": "node-b"}
                  if zone_b else {"node": "node-b"},
                  "node-x": {ZONE: "zone2", "node": "node-x"}, "node-y": {ZONE: "zone2", "node": "node-y"}})


def test_podtopologyspread_no_existing_pods():
    assert four_nodes().fits({"foo": ""}, topologySpreadConstraints=[spread()]) == {
        "node-a", "node-b", "node-x", "node-y"}


def test_podtopologyspread_no_existing_pods_incoming_pod_does_not_match_itself():
    assert four_nodes().fits({"bar": ""}, topologySpreadConstraints=[spread()]) == {
        "node-a", "node-b", "node-x", "node-y"}


def test_podtopologyspread_existing_pods_in_a_different_namespace_do_not_count():
    world = four_nodes()
    world.place("node-a", {"foo": ""}, namespace="ns1")
    world.place("node-b", {"foo": ""})
    world.place("node-x", {"foo": ""}, namespace="ns2")
    world.place("node-y", {"foo": ""}, namespace="ns2")
    assert world.fits({"foo": ""}, topologySpreadConstraints=[spread()]) == {"node-x", "node-y"}


def test_podtopologyspread_pods_spread_across_zones_as_3_3_all_nodes_fit():
    world = four_nodes()
    for node in ("node-a", "node-a", "node-b", "node-x", "node-y", "node-y"):
        world.place(node, {"foo": ""})
    assert world.fits({"foo": ""}, topologySpreadConstraints=[spread()]) == {"node-a", "node-b", "node-x", "node-y"}


def test_podtopologyspread_pods_spread_across_zones_as_1_2_due_to_absence_of_label_zone_on_node_b():
    world = four_nodes(zone_b=False)
    for node in ("node-a", "node-b", "node-x", "node-y"):
        world.place(node, {"foo": ""})
    assert world.verdicts({"foo": ""}, topologySpreadConstraints=[spread()]) == {
        "node-a": None, "node-b": SPREAD_LABEL, "node-x": SPREAD, "node-y": SPREAD}


def test_podtopologyspread_pod_cannot_be_scheduled_as_all_nodes_lack_label_rack():
    assert four_nodes().fits({"foo": ""}, topologySpreadConstraints=[spread(key="rack")]) == set()


def place_2_1_0_3(world: World) -> None:
    for node in ("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"):
        world.place(node, {"foo": ""})


def test_podtopologyspread_pods_spread_across_nodes_as_2_1_0_3_only_node_x_fits():
    world = four_nodes()
    place_2_1_0_3(world)
    assert world.fits({"foo": ""}, topologySpreadConstraints=[spread(key="node")]) == {"node-x"}


def test_podtopologyspread_pods_spread_across_nodes_as_2_1_0_3_max_skew_is_2_node_b_and_node_x_fit():
    world = four_nodes()
    place_2_1_0_3(world)
    assert world.fits({"foo": ""}, topologySpreadConstraints=[spread(2, key="node")]) == {"node-b", "node-x"}


def test_podtopologyspread_pods_spread_across_nodes_as_2_1_0_3_but_pod_does_not_match_itself():
    world = four_nodes()
    place_2_1_0_3(world)
    assert world.fits({"bar": ""}, topologySpreadConstraints=[spread(key="node")]) == {"node-b", "node-x"}


def test_podtopologyspread_incoming_pod_has_node_affinity_pods_spread_as_2_1_0_3_hence_node_a_fits():
    world = four_nodes()
    place_2_1_0_3(world)
    node_affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "node", "operator": "NotIn", "values": ["node-b", "node-x"]}]}]}}}
    assert world.fits({"foo": ""}, affinity=node_affinity,
                      topologySpreadConstraints=[spread(key="node")]) == {"node-a"}


def test_podtopologyspread_node_affinity_policy_ignored_counts_every_node():
    world = four_nodes()
    place_2_1_0_3(world)
    node_affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "node", "operator": "NotIn", "values": ["node-b", "node-x"]}]}]}}}
    assert world.fits({"foo": ""}, affinity=node_affinity,
                      topologySpreadConstraints=[spread(key="node", nodeAffinityPolicy="Ignore")]) == set()


def test_podtopologyspread_node_taints_policy_honored_and_ignored():
    world = World({"node-a": {"node": "node-a"}, "node-b": {"node": "node-b"}},
                  taints={"node-b": [{"key": "foo", "value": "", "effect": "NoSchedule"}]})
    world.place("node-a", {"foo": ""})
    tolerant = [{"key": "foo", "operator": "Exists"}]
    # Ignore (the default): node-b counts with 0 pods, so node-a (1 + 1 - 0 > 1) is refused.
    assert world.fits({"foo": ""}, tolerations=tolerant, topologySpreadConstraints=[spread(key="node")]) == {"node-b"}
    honored = [spread(key="node", nodeTaintsPolicy="Honor")]
    assert world.fits({"foo": ""}, topologySpreadConstraints=honored) == {"node-a"}  # node-b untolerated, uncounted


def test_podtopologyspread_domains_below_min_domains_make_the_global_minimum_zero():
    world = World({"node-a": {"node": "node-a"}, "node-b": {"node": "node-b"}, "node-c": {"node": "node-c"}})
    for node in ("node-a", "node-a", "node-b", "node-b", "node-c"):
        world.place(node, {"foo": ""})
    assert world.fits({"foo": ""}, topologySpreadConstraints=[spread(2, key="node", minDomains=4)]) == {"node-c"}
    assert world.fits({"foo": ""}, topologySpreadConstraints=[spread(2, key="node", minDomains=2)]) == {
        "node-a", "node-b", "node-c"}


def test_podtopologyspread_two_constraints_on_zone_and_node_both_must_hold():
    world = four_nodes()
    for node in ("node-a", "node-a", "node-a", "node-b", "node-x", "node-x"):
        world.place(node, {"foo": ""})
    # zone1 4, zone2 2: only zone2 fits; nodes 3/1/2/0: only node-y fits the node constraint.
    assert world.fits({"foo": ""}, topologySpreadConstraints=[spread(), spread(key="node")]) == {"node-y"}


def test_podtopologyspread_a_null_label_selector_counts_nothing():
    world = four_nodes()
    world.place("node-a", {"foo": ""})
    constraint = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
    assert world.fits({"foo": ""}, topologySpreadConstraints=[constraint]) == {"node-a", "node-b", "node-x", "node-y"}


def test_podtopologyspread_match_label_keys_narrow_the_selector_to_the_pods_revision():
    world = four_nodes()
    world.place("node-a", {"foo": "", "rev": "1"})
    world.place("node-a", {"foo": "", "rev": "1"})
    constraint = spread(selector={"matchExpressions": [{"key": "foo", "operator": "Exists"}]}, matchLabelKeys=["rev"])
    assert world.fits({"foo": "", "rev": "2"}, topologySpreadConstraints=[constraint]) == {
        "node-a", "node-b", "node-x", "node-y"}
    assert world.fits({"foo": "", "rev": "1"}, topologySpreadConstraints=[constraint]) == {"node-x", "node-y"}


@pytest.mark.parametrize("constraint, message", [
    ({"maxSkew": 0, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}, "maxSkew"),
    ({"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule"}, "topologyKey"),
    ({"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "Sometimes"}, "whenUnsatisfiable"),
    ({"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "nodeTaintsPolicy": "Maybe"},
     "nodeTaintsPolicy"),
])
def test_podtopologyspread_invalid_constraints_make_the_pod_invalid(constraint, message):
    pod = parse_pod(pod_json(spec={"topologySpreadConstraints": [constraint]}))
    assert "invalid constraints" in pod.invalid and message in pod.invalid


def test_unenforced_constraints_are_named():
    pod = parse_pod(pod_json(spec={
        "resourceClaims": [{"name": "gpu"}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                    {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}},
                    {"name": "disk", "gcePersistentDisk": {"pdName": "d"}}],
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}]},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                term(labels_in("a", "b"), namespaceSelector={"matchLabels": {"team": "x"}})]}}}))
    assert pod.ignored == ("resourceClaims",
                           "ephemeral volumes (their claims are not read)",
                           "in-tree disk volumes (volume restrictions and node volume limits)")
    assert pod.claims == ("data",)
    assert parse_pod(pod_json(spec={"topologySpreadConstraints": [spread()]})).ignored == ()


# ---- Scores: InterPodAffinity and PodTopologySpread (TestPreferredAffinity, ScheduleAnyway) ------

def scores(world: World, labels: dict | None = None, **spec) -> dict[str, float]:
    tags = pod_tags(labels, "default", **spec)
    assert predicates.ask_prefers(tags) and predicates.ask_constrained(tags)
    return {name: predicates.score(tags, name, attributes, world.view) for name, attributes in world.nodes.items()}


def preferred(kind: str, selector: dict, weight: int, key: str = ZONE) -> dict:
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": weight, "podAffinityTerm": {"labelSelector": selector, "topologyKey": key}}]}}


def test_interpodaffinity_score_preferred_affinity_favours_the_domain_of_matching_pods():
    world = three_zonal_nodes()
    world.place("nodeA", {"security": "S1"})
    world.place("nodeC", {"security": "S2"})
    result = scores(world, affinity=preferred("podAffinity", labels_in("security", "S1"), 5))
    assert result["nodeA"] == result["nodeB"] == 5 and result["nodeC"] == 0


def test_interpodaffinity_score_preferred_anti_affinity_avoids_the_domain_of_matching_pods():
    world = three_zonal_nodes()
    world.place("nodeA", {"security": "S1"})
    world.place("nodeB", {"security": "S1"})
    result = scores(world, affinity=preferred("podAntiAffinity", labels_in("security", "S1"), 3))
    assert result == {"nodeA": -6, "nodeB": -6, "nodeC": 0}


def test_podtopologyspread_score_schedule_anyway_prefers_the_emptiest_domain():
    world = four_nodes()
    place_2_1_0_3(world)
    soft = [{**spread(key="node"), "whenUnsatisfiable": "ScheduleAnyway"}]
    result = scores(world, {"foo": ""}, topologySpreadConstraints=soft)
    assert max(result, key=result.get) == "node-x"
    assert world.fits({"foo": ""}, topologySpreadConstraints=soft) == {"node-a", "node-b", "node-x", "node-y"}


def test_nodeaffinity_score_preferred_node_affinity_adds_matching_weights():
    world = World({"n1": {"disk": "ssd"}, "n2": {"disk": "hdd", "gpu": "yes"}})
    spec = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}},
        {"weight": 30, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}}]}}
    assert scores(world, affinity=spec) == {"n1": 10, "n2": 30}


def test_pods_with_the_same_labels_share_them_in_the_index_and_still_count_apart(monkeypatch):
    from actors.shim import topology
    world = World({"n1": {ZONE: "a"}, "n2": {ZONE: "b"}})
    first, second = world.place("n1", {"app": "web"}), world.place("n2", {"app": "web"})
    assert world.view.pods[first].labels is world.view.pods[second].labels
    assert world.fits({"x": "y"}, affinity=affinity(anti=[term({"matchLabels": {"app": "web"}})])) == set()
    monkeypatch.setattr(topology, "LABEL_SETS_KEPT", 4)
    for index in range(10):
        world.place("n1", {"app": f"job-{index}"})
    assert len(world.view._label_sets) <= 4
    assert world.fits({"x": "y"}, affinity=affinity(anti=[term({"matchLabels": {"app": "job-9"}})])) == {"n2"}


def test_pods_that_come_and_go_while_no_ask_looks_for_pods_leave_nothing_behind():
    world = World({"n1": {ZONE: "a"}, "n2": {ZONE: "b"}})
    kept = world.place("n2", {"app": "web"})
    for _ in range(50):
        world.view.allocation_removed("n1", world.place("n1", {"app": "web"}))
    assert len(world.view._unlabelled) == 1, "only the pod still there waits for its labels to be read"
    assert world.fits({"x": "y"}, affinity=affinity(anti=[term({"matchLabels": {"app": "web"}})])) == {"n1"}
    assert not world.view._unlabelled and world.view.by_label[("app", "web")] == {kept}
