"""Node filters: constraints carried as an ask tag and node attributes, evaluated by ``check``."""

import pytest

from actors.shim import constraints
from actors.shim.keys import TAG_CONSTRAINTS
from actors.shim.nodes import parse_node
from actors.shim.pods import parse_pod
from actors.shim.predicates import (
    ANTI_AFFINITY,
    EXISTING_ANTI_AFFINITY,
    HOST_PORTS,
    NODE_AFFINITY,
    NODE_NAME,
    UNSCHEDULABLE,
    KubernetesPredicates,
)
from actors.shim.translate import allocation_tags
from tests.shim.factories import node_json, pod_json

predicates = KubernetesPredicates()


def ask_tags(**spec):
    labels = spec.pop("labels", None)
    return allocation_tags(parse_pod(pod_json(spec=spec, labels=labels)))


def node(name="n1", **kwargs):
    record = parse_node(node_json(name, **kwargs))
    return record.name, record.attributes()


def check(tags, node_id_attributes, existing=()):
    """``check`` on one node holding the ``existing`` pods (their allocation tags)."""
    node_id, attributes = node_id_attributes
    view = predicates.view()
    view.node_updated(node_id, attributes)
    for number, pod_tags in enumerate(existing):
        view.allocation_added(node_id, f"existing-{number}", pod_tags)
    return predicates.check(tags, node_id, attributes, existing, view)


def test_unconstrained_pod_gets_no_tag_and_costs_nothing():
    tags = ask_tags()
    assert TAG_CONSTRAINTS not in tags
    assert not predicates.ask_constrained(tags)
    assert not predicates.node_restricted(node()[1])
    assert check(tags, node()) is None


def test_tolerations_alone_do_not_constrain_the_ask():
    tags = ask_tags(tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}])
    assert TAG_CONSTRAINTS in tags
    assert not predicates.ask_constrained(tags)


def test_node_selector():
    tags = ask_tags(nodeSelector={"disk": "ssd"})
    assert predicates.ask_constrained(tags)
    assert check(tags, node(labels={"disk": "ssd"})) is None
    assert check(tags, node(labels={"disk": "hdd"})) == NODE_AFFINITY
    assert check(tags, node()) == NODE_AFFINITY


def affinity(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


@pytest.mark.parametrize("expression, labels, fits", [
    ({"key": "zone", "operator": "In", "values": ["a", "b"]}, {"zone": "b"}, True),
    ({"key": "zone", "operator": "In", "values": ["a", "b"]}, {"zone": "c"}, False),
    ({"key": "zone", "operator": "In", "values": ["a"]}, {}, False),
    ({"key": "zone", "operator": "NotIn", "values": ["a"]}, {"zone": "c"}, True),
    ({"key": "zone", "operator": "NotIn", "values": ["a"]}, {}, True),
    ({"key": "zone", "operator": "NotIn", "values": ["a"]}, {"zone": "a"}, False),
    ({"key": "gpu", "operator": "Exists"}, {"gpu": ""}, True),
    ({"key": "gpu", "operator": "Exists"}, {}, False),
    ({"key": "gpu", "operator": "DoesNotExist"}, {}, True),
    ({"key": "gpu", "operator": "DoesNotExist"}, {"gpu": "x"}, False),
    ({"key": "cores", "operator": "Gt", "values": ["8"]}, {"cores": "16"}, True),
    ({"key": "cores", "operator": "Gt", "values": ["8"]}, {"cores": "8"}, False),
    ({"key": "cores", "operator": "Gt", "values": ["8"]}, {"cores": "many"}, False),
    ({"key": "cores", "operator": "Lt", "values": ["8"]}, {"cores": "4"}, True),
    ({"key": "cores", "operator": "Lt", "values": ["8"]}, {}, False),
])
def test_required_node_affinity_operators(expression, labels, fits):
    tags = ask_tags(affinity=affinity({"matchExpressions": [expression]}))
    assert (check(tags, node(labels=labels)) is None) is fits


def test_node_affinity_terms_are_alternatives_and_expressions_all_hold():
    tags = ask_tags(affinity=affinity(
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]},
                              {"key": "disk", "operator": "In", "values": ["ssd"]}]},
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
    ))
    assert check(tags, node(labels={"zone": "a", "disk": "ssd"})) is None
    assert check(tags, node(labels={"zone": "a", "disk": "hdd"})) == NODE_AFFINITY
    assert check(tags, node(labels={"zone": "b"})) is None


def test_match_fields_metadata_name_and_required_node_tag():
    tags = ask_tags(affinity=affinity({"matchFields": [{"key": "metadata.name", "operator": "In",
                                                         "values": ["n2"]}]}))
    assert tags["yunikorn.apache.org/requiredNode"] == "n2"
    assert check(tags, node("n2")) is None
    assert check(tags, node("n1")) == NODE_AFFINITY


def test_node_name():
    tags = ask_tags(nodeName="n2")
    assert check(tags, node("n2")) is None
    assert check(tags, node("n1")) == NODE_NAME


def test_taints_and_tolerations():
    tainted = node(taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}])
    assert predicates.node_restricted(tainted[1])
    assert check(ask_tags(), tainted) == "node(s) had untolerated taint {gpu: true}"
    exact = ask_tags(tolerations=[{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}])
    assert check(exact, tainted) is None
    exists = ask_tags(tolerations=[{"key": "gpu", "operator": "Exists"}])
    assert check(exists, tainted) is None
    everything = ask_tags(tolerations=[{"operator": "Exists"}])
    assert check(everything, tainted) is None
    wrong_value = ask_tags(tolerations=[{"key": "gpu", "value": "false", "effect": "NoSchedule"}])
    assert check(wrong_value, tainted) is not None
    wrong_effect = ask_tags(tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoExecute"}])
    assert check(wrong_effect, tainted) is not None


def test_no_execute_filters_and_prefer_no_schedule_is_ignored():
    no_execute = node(taints=[{"key": "k", "value": "v", "effect": "NoExecute"}])
    assert check(ask_tags(), no_execute) is not None
    prefer = node(taints=[{"key": "k", "value": "v", "effect": "PreferNoSchedule"}])
    assert not predicates.node_restricted(prefer[1])
    assert check(ask_tags(), prefer) is None


def test_cordoned_node_is_restricted_and_refused():
    cordoned = node(unschedulable=True)
    assert predicates.node_restricted(cordoned[1])
    assert check(ask_tags(), cordoned) == UNSCHEDULABLE


def ports(*numbers, host_ip=""):
    return {"containers": [{"name": "c", "ports": [{"containerPort": n, "hostPort": n, "hostIP": host_ip}
                                                   for n in numbers]}]}


def test_host_ports_in_use_on_the_node():
    mine = ask_tags(**ports(8080))
    assert predicates.ask_constrained(mine)
    assert check(mine, node(), [ask_tags(**ports(8080))]) == HOST_PORTS
    assert check(mine, node(), [ask_tags(**ports(9090))]) is None
    assert check(mine, node(), [ask_tags()]) is None
    assert check(ask_tags(**ports(8080, host_ip="10.0.0.1")), node(),
                 [ask_tags(**ports(8080, host_ip="10.0.0.2"))]) is None
    assert check(ask_tags(**ports(8080, host_ip="10.0.0.1")), node(), [ask_tags(**ports(8080))]) == HOST_PORTS


def anti(selector, **term):
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname", **term}]}}


def test_pod_anti_affinity_on_hostname():
    mine = ask_tags(affinity=anti({"matchLabels": {"app": "db"}}), labels={"app": "db"})
    assert predicates.ask_constrained(mine)
    other_db = ask_tags(labels={"app": "db"})
    web = ask_tags(labels={"app": "web"})
    assert check(mine, node(), [web, other_db]) == ANTI_AFFINITY
    assert check(mine, node(), [web]) is None


def test_anti_affinity_respects_namespaces():
    mine = ask_tags(affinity=anti({"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}))
    elsewhere = allocation_tags(parse_pod(pod_json(namespace="other", labels={"app": "db"})))
    assert check(mine, node(), [elsewhere]) is None
    everywhere = ask_tags(affinity=anti({"matchLabels": {"app": "db"}}, namespaceSelector={}))
    assert check(everywhere, node(), [elsewhere]) == ANTI_AFFINITY


def test_existing_pods_anti_affinity_refuses_a_matching_newcomer():
    existing = ask_tags(affinity=anti({"matchLabels": {"app": "db"}}), labels={"app": "db"})
    newcomer = ask_tags(nodeSelector={"disk": "ssd"}, labels={"app": "db"})
    assert check(newcomer, node(labels={"disk": "ssd"}), [existing]) == EXISTING_ANTI_AFFINITY


def test_anti_affinity_on_other_topology_keys_is_a_constraint():
    spec = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "topology.kubernetes.io/zone"}]}}}
    assert predicates.ask_constrained({TAG_CONSTRAINTS: constraints.encode(spec, "default")})


@pytest.mark.parametrize("spec, message", [
    (affinity({"matchExpressions": [{"key": "z", "operator": "Near", "values": ["a"]}]}), "operator 'Near'"),
    (affinity({"matchExpressions": [{"key": "z", "operator": "In"}]}), "needs values"),
    (affinity({"matchExpressions": [{"key": "z", "operator": "Gt", "values": ["x"]}]}), "one integer"),
    (affinity({"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["x"]}]}), "metadata.uid"),
])
def test_malformed_constraints_make_the_pod_invalid(spec, message):
    pod = parse_pod(pod_json(spec={"affinity": spec}))
    assert "invalid constraints" in pod.invalid and message in pod.invalid


def test_bad_tolerations_are_refused():
    pod = parse_pod(pod_json(spec={"tolerations": [{"operator": "Equal", "value": "x"}]}))
    assert "needs operator Exists" in pod.invalid


def test_a_garbled_tag_is_reported_by_check_not_raised():
    tags = {TAG_CONSTRAINTS: "{not json"}
    assert predicates.ask_constrained(tags)
    assert "not JSON" in check(tags, node())


def test_identical_constraints_compile_once():
    constraints.decode.cache_clear()
    for _ in range(50):
        check(ask_tags(nodeSelector={"disk": "ssd"}), node(labels={"disk": "ssd"}))
    assert constraints.decode.cache_info().misses == 1


def test_host_network_container_ports_are_host_ports():
    mine = ask_tags(hostNetwork=True, containers=[{"name": "c", "ports": [{"containerPort": 53, "protocol": "UDP"}]}])
    theirs = ask_tags(**ports(53))
    assert check(mine, node(), [theirs]) is None  # TCP beside UDP
    same = ask_tags(hostNetwork=True, containers=[{"name": "c", "ports": [{"containerPort": 53}]}])
    assert check(same, node(), [theirs]) == HOST_PORTS
