"""User and group limits: per user, per group, wildcards, along the path, maxapplications, headroom."""

import pytest

from actors.core import config as cfg
from actors.core.ugm import UsageTracker
from si.resources import Resource

CORE = 1000


def tracker(root_limits: str = "[]", a_limits: str = "[]", b_limits: str = "[]", partition_limits: str = "[]"):
    text = f"""
partitions:
  - name: default
    limits: {partition_limits}
    queues:
      - name: root
        limits: {root_limits}
        queues:
          - name: a
            limits: {a_limits}
            queues:
              - name: b
                limits: {b_limits}
              - name: c
          - name: d
"""
    return UsageTracker(cfg.parse(text).partitions[0])


def run(usage: UsageTracker, app_id: str, user: str, path: str, vcore: int = 0, groups=()):
    usage.app_started(app_id, user, groups, path)
    if vcore:
        usage.allocated(app_id, Resource.of(vcore=vcore * CORE))


def test_no_limits_means_no_headroom_and_every_app_runs():
    usage = tracker()
    run(usage, "x", "bob", "root.a.b", vcore=100)
    assert usage.headroom("bob", ["dev"], "root.a.b") is None
    assert usage.can_run_app("bob", ["dev"], "root.a.b")


def test_a_user_limit_shrinks_with_allocations_and_grows_with_releases():
    usage = tracker(a_limits="[{users: [bob], maxresources: {vcore: 4, memory: 8Gi}}]")
    assert usage.headroom("bob", [], "root.a.b") == Resource.of(vcore=4 * CORE, memory=8 * 2**30)
    run(usage, "x", "bob", "root.a.b", vcore=3)
    assert usage.headroom("bob", [], "root.a.b") == Resource.of(vcore=CORE, memory=8 * 2**30)
    assert usage.headroom("bob", [], "root.a.c") == Resource.of(vcore=CORE, memory=8 * 2**30), \
        "a limit on root.a counts usage anywhere below it"
    assert usage.headroom("bob", [], "root.d") is None
    assert usage.headroom("eve", [], "root.a.b") is None, "the limit names bob only"
    usage.released("x", Resource.of(vcore=2 * CORE))
    assert usage.headroom("bob", [], "root.a.b")["vcore"] == 3 * CORE


def test_limits_along_the_path_take_the_tightest():
    usage = tracker(root_limits="[{users: ['*'], maxresources: {vcore: 10}}]",
                    a_limits="[{users: ['*'], maxresources: {vcore: 6, memory: 1Gi}}]",
                    b_limits="[{users: ['*'], maxresources: {vcore: 4}}]")
    run(usage, "elsewhere", "bob", "root.d", vcore=5)
    assert usage.headroom("bob", [], "root.a.b") == Resource.of(vcore=4 * CORE, memory=2**30)
    run(usage, "in-c", "bob", "root.a.c", vcore=3)
    assert usage.headroom("bob", [], "root.a.b") == Resource.of(vcore=2 * CORE, memory=2**30), \
        "root allows 10-8=2, root.a 6-3=3, root.a.b 4-0=4"


def test_a_named_user_limit_replaces_the_wildcard_for_that_user():
    usage = tracker(a_limits="[{users: [bob], maxresources: {vcore: 8}}, {users: ['*'], maxresources: {vcore: 2}}]")
    assert usage.headroom("bob", [], "root.a.b")["vcore"] == 8 * CORE
    assert usage.headroom("eve", [], "root.a.b")["vcore"] == 2 * CORE
    run(usage, "e1", "eve", "root.a.b", vcore=2)
    assert usage.headroom("eve", [], "root.a.b")["vcore"] == 0
    assert usage.headroom("ann", [], "root.a.b")["vcore"] == 2 * CORE, "the wildcard limits each user on their own"


def test_partition_limits_apply_at_the_root():
    usage = tracker(partition_limits="[{users: ['*'], maxapplications: 1}]")
    run(usage, "x", "bob", "root.a.b")
    assert not usage.can_run_app("bob", [], "root.d")
    assert usage.can_run_app("eve", [], "root.d")


def test_group_limits_are_shared_by_the_members():
    usage = tracker(a_limits="[{groups: [dev], maxresources: {vcore: 6}}]")
    run(usage, "x", "alice", "root.a.b", vcore=4, groups=["staff", "dev"])
    assert usage.headroom("bob", ["dev"], "root.a.c")["vcore"] == 2 * CORE
    assert usage.headroom("carol", ["staff"], "root.a.c") is None


def test_user_and_group_limits_both_hold():
    usage = tracker(a_limits="[{users: [alice], maxresources: {vcore: 3}}, {groups: [dev], maxresources: {vcore: 5}}]")
    run(usage, "bob-app", "bob", "root.a.b", vcore=4, groups=["dev"])
    assert usage.headroom("alice", ["dev"], "root.a.b")["vcore"] == CORE, "group has 1 left, alice 3"
    run(usage, "alice-app", "alice", "root.a.b", vcore=1, groups=["dev"])
    assert usage.headroom("alice", ["dev"], "root.a.b")["vcore"] == 0


def test_the_group_is_resolved_from_the_leaf_up():
    usage = tracker(root_limits="[{groups: [ops], maxapplications: 5}, {groups: [dev], maxapplications: 5}]",
                    b_limits="[{groups: [ml, dev], maxresources: {vcore: 2}}]")
    assert usage.group_for(["ops", "dev"], "root.a.b") == "dev", "root.a.b names dev; it is nearer than root"
    assert usage.group_for(["ops", "dev"], "root.a.c") == "ops", "at root ops is configured first"
    assert usage.group_for(["dev", "ops"], "root.d") == "ops"
    assert usage.group_for(["guests"], "root.a.b") is None
    assert usage.group_for([], "root.a.b") is None


def test_the_wildcard_group_is_one_shared_group_for_everyone_unnamed():
    usage = tracker(a_limits="[{groups: [dev], maxapplications: 5}, {groups: ['*'], maxresources: {vcore: 4}}]")
    assert usage.group_for(["guests"], "root.a.b") == "*"
    assert usage.group_for(["guests", "dev"], "root.a.b") == "dev"
    run(usage, "g1", "ann", "root.a.b", vcore=3, groups=["guests"])
    assert usage.headroom("zed", ["visitors"], "root.a.c")["vcore"] == CORE
    assert usage.headroom("dan", ["dev"], "root.a.c") is None, "dev has its own limit, without resources"
    assert usage.headroom("nogroups", [], "root.a.c") is None


def test_maxapplications_per_user_and_per_group():
    usage = tracker(a_limits="[{users: ['*'], maxapplications: 2}, {groups: [dev], maxapplications: 3}]")
    run(usage, "b1", "bob", "root.a.b", groups=["dev"])
    run(usage, "b2", "bob", "root.a.c", groups=["dev"])
    assert not usage.can_run_app("bob", ["dev"], "root.a.b"), "bob runs 2 in root.a"
    assert usage.can_run_app("bob", ["dev"], "root.a.b", "b1"), "an application already counted may go on"
    assert usage.can_run_app("bob", ["dev"], "root.d"), "the limit is on root.a"
    run(usage, "e1", "eve", "root.a.b", groups=["dev"])
    assert not usage.can_run_app("ann", ["dev"], "root.a.b"), "dev runs 3 in root.a"
    assert usage.can_run_app("ann", ["ops"], "root.a.b")
    usage.app_removed("b1")
    assert usage.can_run_app("bob", ["ops"], "root.a.b")
    assert usage.can_run_app("ann", ["dev"], "root.a.b")


def test_app_lifecycle_bookkeeping():
    usage = tracker(a_limits="[{users: [bob], maxresources: {vcore: 4}}]")
    usage.allocated("unknown", Resource.of(vcore=CORE))  # not started: not counted
    assert not usage.tracks("unknown") and usage.users() == []
    run(usage, "x", "bob", "root.a.b", vcore=1)
    run(usage, "x", "bob", "root.a.b")  # starting twice counts once
    assert usage.tracks("x")
    assert usage.headroom("bob", [], "root.a.b")["vcore"] == 3 * CORE
    usage.app_removed("x")
    assert not usage.tracks("x")
    assert usage.headroom("bob", [], "root.a.b")["vcore"] == 4 * CORE, "a removed application gives back what it held"
    assert usage.users() == []
    usage.released("x", Resource.of(vcore=CORE))  # a late release of a removed application changes nothing
    assert usage.headroom("bob", [], "root.a.b")["vcore"] == 4 * CORE
    usage.app_removed("never-started")


def test_reconfigure_keeps_usage_and_applies_new_limits():
    usage = tracker(a_limits="[{users: [bob], maxresources: {vcore: 4}}]")
    run(usage, "x", "bob", "root.a.b", vcore=3)
    text = """
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: a
            limits: [{users: [bob], maxresources: {vcore: 10}, maxapplications: 1}]
            queues: [{name: b}]
"""
    usage.reconfigure(cfg.parse(text).partitions[0])
    assert usage.headroom("bob", [], "root.a.b")["vcore"] == 7 * CORE
    assert not usage.can_run_app("bob", [], "root.a.b")


def flat(tree):
    """The queues of a usage tree, parents before children."""
    yield tree
    for child in tree["children"]:
        yield from flat(child)


def test_usage_views():
    usage = tracker(a_limits="[{users: [bob], maxresources: {vcore: 4}, maxapplications: 3},"
                             " {groups: [dev], maxapplications: 9}]")
    run(usage, "x", "bob", "root.a.b", vcore=2, groups=["dev"])
    run(usage, "y", "bob", "root.d", vcore=1, groups=["ops"])
    [bob] = usage.users()
    assert bob["userName"] == "bob" and bob["groups"] == {"x": "dev", "y": ""}
    by_path = {q["queuePath"]: q for q in flat(bob["queues"])}
    assert list(by_path) == ["root", "root.a", "root.a.b", "root.d"]
    assert [c["queuePath"] for c in bob["queues"]["children"]] == ["root.a", "root.d"], "nested as upstream"
    assert by_path["root"]["resourceUsage"] == {"vcore": 3 * CORE}
    assert by_path["root"]["runningApplications"] == ["x", "y"]
    assert by_path["root.a"]["maxResources"] == {"vcore": 4 * CORE} and by_path["root.a"]["maxApplications"] == 3
    assert by_path["root.a.b"]["maxResources"] is None
    [dev] = usage.groups()
    assert dev["groupName"] == "dev" and dev["applications"] == ["x"]
    assert [q["queuePath"] for q in flat(dev["queues"])] == ["root", "root.a", "root.a.b"]
    assert dev["queues"]["children"][0]["maxApplications"] == 9
    usage.released("x", Resource.of(vcore=2 * CORE))
    usage.app_removed("x")
    assert [q["queuePath"] for q in flat(usage.users()[0]["queues"])] == ["root", "root.d"]
    assert usage.groups() == []


@pytest.mark.parametrize("path", ["root", "root.a", "root.a.b"])
def test_headroom_only_limits_the_types_named(path):
    usage = tracker(root_limits="[{users: ['*'], maxresources: {nvidia.com/gpu: 2}}]")
    assert usage.headroom("bob", [], path) == {"nvidia.com/gpu": 2}
    assert Resource.of(vcore=10**9, **{"nvidia.com/gpu": 2}).fits_in_max(usage.headroom("bob", [], path))


@pytest.mark.parametrize(("kind", "name"), [
    ("users", "user_Test-a_b_#_c_#_d_/_e@dom:ain.com"),
    ("users", "svc$"),
    ("groups", "group_Test-a_b_dom:ain.com"),
])
def test_limits_take_the_names_yunikorn_core_takes(kind, name):
    """yunikorn-core's UserRegExp and GroupRegExp allow ':', '#' and '/' in users, ':' and '.' in groups."""
    usage = tracker(a_limits=f"[{{{kind}: ['{name}'], maxresources: {{vcore: 4}}}}]")
    user, groups = (name, []) if kind == "users" else ("bob", [name])
    assert usage.headroom(user, groups, "root.a.b") == Resource.of(vcore=4 * CORE)


@pytest.mark.parametrize(("kind", "name"), [
    ("users", "1bob"), ("users", "bob\\n"), ("users", "a$b"),
    ("groups", "dev/ops"), ("groups", "dev@corp"), ("groups", "dev#1"), ("groups", "dev\\n"),
])
def test_limits_refuse_names_yunikorn_core_refuses(kind, name):
    with pytest.raises(cfg.ConfigError, match=f"invalid {kind[:-1]} name"):
        tracker(a_limits=f'[{{{kind}: ["{name}"], maxresources: {{vcore: 4}}}}]')
