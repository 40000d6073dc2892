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
    ([{**GOOD, "nodeSelector": {"zone": 1}}], "nodeSelector must be a map of strings"),
    ([{**GOOD, "tolerations": {"key": "gpu"}}], "tolerations and topologySpreadConstraints must be lists"),
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
