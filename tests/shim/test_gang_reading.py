"""Reading a gang from its annotations: every malformed declaration is named, and none gives half a gang."""

import json

import pytest

from actors.shim.gang import DEFAULT_TIMEOUT, HARD, SOFT, read_gang

GOOD = {"name": "workers", "minMember": 3, "minResource": {"cpu": "500m", "memory": "1Gi"}}


def test_a_gang_sums_its_members_room_with_a_pod_slot_each():
    gang, problems = read_gang(json.dumps([GOOD]), "placeholderTimeoutInSeconds=30 gangSchedulingStyle=Hard")
    assert problems == [] and (gang.timeout, gang.style, gang.size) == (30.0, HARD, 3)
    assert dict(gang.placeholder_ask) == {"vcore": 1500, "memory": 3 * 2**30, "pods": 3}


def test_defaults_are_fifteen_minutes_and_soft():
    gang, _ = read_gang(json.dumps([GOOD]), "")
    assert (gang.timeout, gang.style) == (DEFAULT_TIMEOUT, SOFT)


@pytest.mark.parametrize(("groups", "problem"), [
    ("[{", "not valid JSON"),
    ('{"name": "x"}', "must be a JSON list"),
    ([{"minMember": 1}], "has no name"),
    ([{**GOOD, "minMember": -1}], "minMember must be a whole number of at least 0"),
    ([{**GOOD, "minMember": "3"}], "minMember must be a whole number"),
    ([{**GOOD, "minResource": {"cpu": "lots"}}], "task group 'workers': minResource"),
    ([{**GOOD, "minResource": {"cpu": "-1"}}], "negative"),
    ([GOOD, GOOD], "declared twice"),
    ([{**GOOD, "nodeSelector": {"zone": 1}}], "nodeSelector must be a JSON object of strings"),
    ([{**GOOD, "tolerations": {"key": "gpu"}}], "tolerations must be a JSON list"),
])
def test_a_malformed_declaration_gives_no_gang_and_names_the_problem(groups, problem):
    text = groups if isinstance(groups, str) else json.dumps(groups)
    gang, problems = read_gang(text, "")
    assert gang is None and any(problem in p for p in problems), problems


def test_bad_policy_parameters_keep_their_defaults_and_are_named():
    gang, problems = read_gang(json.dumps([GOOD]), "placeholderTimeoutInSeconds=soon gangSchedulingStyle=Firm x=1")
    assert (gang.timeout, gang.style) == (DEFAULT_TIMEOUT, SOFT)
    assert len(problems) == 3 and "Soft or Hard" in problems[1] and "'x'" in problems[2]


def test_groups_without_members_make_no_gang():
    assert read_gang(json.dumps([{**GOOD, "minMember": 0}]), "") == (None, [])


# Upstream decodes task-groups into a Go struct without json tags: Go matches its keys case-insensitively,
# a later duplicate wins, unknown keys are ignored, and null is absent. Upstream's own e2e framework
# sends the Go field names.
GO_NAMED = {"Name": "workers", "MinMember": 3, "MinResource": {"cpu": "500m", "memory": "1Gi"},
            "NodeSelector": {"zone": "a"}, "Tolerations": [{"key": "gpu", "operator": "Exists"}],
            "Affinity": None, "Labels": {"team": "x"}, "Annotations": None, "TopologySpreadConstraints": None}


def test_go_field_names_are_read_case_insensitively():
    gang, problems = read_gang(json.dumps([GO_NAMED]), "")
    assert problems == [] and gang.size == 3
    group = gang.group("workers")
    assert dict(group.node_selector) == {"zone": "a"} and dict(group.labels) == {"team": "x"}
    assert group.tolerations == ({"key": "gpu", "operator": "Exists"},) and group.affinity is None
    assert dict(gang.placeholder_ask) == {"vcore": 1500, "memory": 3 * 2**30, "pods": 3}


def test_go_matching_prefers_nothing_over_order_a_later_duplicate_wins_and_unknown_keys_are_ignored():
    text = '[{"name": "a", "NAME": "workers", "minmember": 1, "MINMEMBER": 2, "minResource": {"cpu": "1"}, "x": 1}]'
    gang, problems = read_gang(text, "")
    assert problems == [] and gang.group("workers").min_member == 2


def test_null_task_groups_are_no_gang_and_no_problem():
    assert read_gang("null", "") == (None, [])
    assert read_gang(json.dumps([{**GOOD, "nodeSelector": None, "tolerations": None}]), "")[1] == []


@pytest.mark.parametrize(("groups", "problem"), [
    ([{**GOOD, "minMember": 10**21}], "at most 2147483647"),  # int32, as upstream's struct
    ([{**GOOD, "minMember": 2**31}], "at most 2147483647"),
    ([{**GOOD, "minMember": 3.0}], "minMember must be a whole number"),  # Go refuses 3.0 for an int32
    ([{**GOOD, "minMember": 10, "minResource": {"memory": "1Ei"}}], "more memory than an int64 holds"),
    ([{**GOOD, "minMember": 2**31 - 1, "minResource": {"cpu": "9223372036854775"}}], "more vcore than an int64"),
    ([GOOD, {**GOOD, "name": "b", "minResource": {"memory": "7Ei"}}], "more memory than an int64 holds"),
    ([{**GOOD, "name": 5}], "has no name"),
    ([{**GOOD, "minResource": "1"}], "minResource must be a JSON object"),
    ([{**GOOD, "affinity": "near"}], "affinity must be a JSON object"),
    ("[" * 5000 + "]" * 5000, "nests deeper than"),
    ('[{"name": "x", "minMember": NaN}]', "not valid JSON"),
    ("[" + "1," * 200_000 + "1]", "longer than"),
])
def test_values_that_crashed_the_context_are_problems(groups, problem):
    text = groups if isinstance(groups, str) else json.dumps(groups)
    gang, problems = read_gang(text, "")
    assert gang is None and any(problem in p for p in problems), problems


@pytest.mark.parametrize("value", ["\u00b2", "\u0661", "99999999999999999999", "9223372036854776", "0", "-5",
                                   "+", "1_0", "1e3", "0x10"])
def test_timeouts_are_go_integers_of_one_second_to_the_int64_milliseconds_limit(value):
    gang, problems = read_gang(json.dumps([GOOD]), f"placeholderTimeoutInSeconds={value}")
    assert gang.timeout == DEFAULT_TIMEOUT and problems and "placeholderTimeoutInSeconds" in problems[0]


def test_the_largest_timeout_still_fits_the_si_milliseconds():
    gang, problems = read_gang(json.dumps([GOOD]), "placeholderTimeoutInSeconds=9223372036854775")
    assert problems == [] and gang.timeout * 1000 <= 2**63 - 1


def test_the_kubernetes_parts_of_a_group_are_decoded_by_their_json_tags_as_go_does():
    group = {**GOOD, "Tolerations": [{"Key": "gpu", "OPERATOR": "Exists", "x": 1}, None],
             "Affinity": {"NodeAffinity": {"RequiredDuringSchedulingIgnoredDuringExecution": {"NodeSelectorTerms": [
                 {"MatchExpressions": [{"Key": "Zone", "Operator": "In", "Values": ["A"]}]}]}},
                 "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                     {"labelSelector": {"matchLabels": {"App": "X"}}, "TopologyKey": "zone"}]}},
             "topologySpreadConstraints": [{"MaxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": None}]}
    gang, problems = read_gang(json.dumps([group]), "")
    assert problems == []
    workers = gang.group("workers")
    assert workers.tolerations == ({"key": "gpu", "operator": "Exists"}, {})
    assert workers.affinity == {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "Zone", "operator": "In", "values": ["A"]}]}]}},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"App": "X"}}, "topologyKey": "zone"}]}}  # label keys keep their case
    assert workers.topology_spread == ({"maxSkew": 1, "topologyKey": "zone"},)


@pytest.mark.parametrize(("field", "value", "problem"), [
    ("tolerations", [{"tolerationSeconds": "5"}], "tolerations[0].tolerationSeconds must be a whole number"),
    ("tolerations", ["gpu"], "tolerations[0] must be a JSON object"),
    ("affinity", {"nodeAffinity": []}, "affinity.nodeAffinity must be a JSON object"),
    ("topologySpreadConstraints", [{"maxSkew": 2**31}], "maxSkew is out of range"),
])
def test_a_kubernetes_part_of_the_wrong_type_is_refused_as_go_refuses_it(field, value, problem):
    gang, problems = read_gang(json.dumps([{**GOOD, field: value}]), "")
    assert gang is None and any(problem in p for p in problems), problems
