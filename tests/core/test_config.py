"""queues.yaml parsing: every field, the default, checksums, property helpers, the corpus."""

import pathlib

import pytest

from actors.core import config as cfg
from si.resources import Resource

CONFIGS = pathlib.Path(__file__).parent / "configs"
BAD = sorted((CONFIGS / "bad").glob("*.yaml"))
GOOD = sorted((CONFIGS / "good").glob("*.yaml"))
GIB = 2**30


def expectation(path: pathlib.Path) -> str:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect: "), f"{path.name} lacks its '# expect:' line"
    return first[len("# expect: "):]


def queue(config: cfg.SchedulerConfig, path: str, partition: int = 0) -> cfg.QueueConfig:
    node = config.partitions[partition].root
    for name in path.split(".")[1:]:
        node = next(q for q in node.queues if q.name == name)
    return node


def test_the_corpus_is_large_enough():
    assert len(BAD) >= 20 and len(GOOD) >= 5


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.stem)
def test_bad_config_is_refused_with_its_path(path):
    text = path.read_text()
    with pytest.raises(cfg.ConfigError) as error:
        cfg.validate(text)
    assert expectation(path) in str(error.value)
    assert str(error.value).startswith(error.value.path), "the message starts with the path it names"


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.stem)
def test_good_config_parses_and_round_trips(path):
    config = cfg.parse(path.read_text())
    assert config.partitions[0].root.name == "root" and config.partitions[0].root.parent
    again = cfg.parse(cfg.dump(config))
    assert again.partitions == config.partitions
    assert cfg.dump(again) == cfg.dump(config)


def test_default_config_is_used_for_empty_text():
    for text in (None, "", "  \n"):
        config = cfg.parse(text)
        assert config == cfg.parse(cfg.DEFAULT_QUEUES_YAML)
    partition = cfg.parse("").partition("default")
    assert partition.root.submit_acl == "*" and partition.root.queues == ()
    assert [(r.name, r.value, r.create) for r in partition.placement_rules] == [("tag", "namespace", True)] * 2
    assert partition.placement_rules[0].parent == cfg.PlacementRuleConfig("tag", create=True,
                                                                          value="namespace.parentqueue")
    assert partition.placement_rules[1].parent is None
    assert partition.node_sort_policy == cfg.NodeSortPolicyConfig("fair", {"vcore": 1.0, "memory": 1.0})
    assert partition.preemption == cfg.PreemptionConfig(enabled=True, quota_preemption_enabled=False)
    assert partition.limits == () and partition.user_group_resolver == ""
    assert cfg.parse("").partition("other") is None


def test_the_upstream_example():
    config = cfg.parse((CONFIGS / "good" / "upstream-example.yaml").read_text())
    partition = config.partition("default")
    batch, interactive, tenants = partition.root.queues
    assert batch.max_applications == 200
    assert batch.resources.max == Resource.of(vcore=100_000, memory=400 * GIB, **{"nvidia.com/gpu": 8})
    assert batch.resources.guaranteed == Resource.of(vcore=40_000, memory=160 * GIB)
    assert batch.properties.sort_policy == "fair" and batch.properties.preemption_delay == 20.0
    assert batch.limits[0].groups == ("data",) and batch.limits[0].max_resources["vcore"] == 60_000
    assert interactive.submit_acl == "alice,bob analysts" and interactive.is_leaf
    assert interactive.properties.priority_offset == 100
    assert interactive.properties.preemption_policy == "fence"
    assert tenants.parent and not tenants.is_leaf and tenants.queues == ()
    assert tenants.child_template == cfg.ChildTemplate(
        10, {}, cfg.ResourcesConfig(None, Resource.of(vcore=20_000, memory=80 * GIB)))
    provided, tag = partition.placement_rules
    assert provided == cfg.PlacementRuleConfig("provided", create=False)
    assert tag.parent == cfg.PlacementRuleConfig("fixed", value="root.tenants")
    assert tag.filter == cfg.FilterConfig("deny", (), ("blocked",))
    assert partition.limits == (cfg.LimitConfig("per-user cap", ("*",), (), None, 50),)
    assert partition.node_sort_policy.type == "binpacking"
    assert dict(partition.node_sort_policy.resource_weights) == {"vcore": 2.0, "memory": 1.0}


def test_every_field():
    config = cfg.parse((CONFIGS / "good" / "every-field.yaml").read_text())
    partition = config.partition("gpu")
    assert partition.user_group_resolver == "os"
    assert partition.preemption == cfg.PreemptionConfig(False, True)
    assert dict(partition.node_sort_policy.resource_weights) == {"vcore": 1.5, "memory": 0.5, "nvidia.com/gpu": 4.0}
    provided, user, tag, fixed = partition.placement_rules
    assert provided.filter == cfg.FilterConfig("allow", ("^svc-.*$",), ())
    assert user.create and user.parent == cfg.PlacementRuleConfig("fixed", value="home")
    assert user.filter == cfg.FilterConfig("deny", ("mallory", "eve"), ("guests",))
    assert tag.value == "namespace", "tag names are lower-cased"
    assert tag.parent == cfg.PlacementRuleConfig("tag", value="namespace.parentqueue")
    assert fixed == cfg.PlacementRuleConfig("fixed", value="root.shared.default")
    assert [(lim.users, lim.groups) for lim in partition.limits] == [
        (("alice", "bob.smith"), ()), (("*",), ()), ((), ("ml", "data")), ((), ("*",))]
    assert partition.limits[0].max_resources == Resource.of(vcore=64_000, memory=256 * GIB)

    root = partition.root
    assert (root.submit_acl, root.admin_acl, root.max_applications) == (" admins", "root-user ops", 500)
    assert root.child_template.properties == {"application.sort.policy": "stateaware"}
    home = queue(config, "root.home")
    assert home.parent and home.is_leaf is False
    assert home.resources == cfg.ResourcesConfig(Resource.of(vcore=10_000),
                                                 Resource.of(vcore=100_000, memory=2**40, **{"nvidia.com/gpu": 16}))
    assert home.child_template.resources.guaranteed == Resource.of(vcore=500)
    shared = queue(config, "root.shared")
    props = shared.properties
    assert props.priority_sorting is False and props.priority_policy == "fence"
    assert props.priority_offset == -10 and props.preemption_policy == "disabled"
    assert props.preemption_delay == 90.0 and props["custom.property"] == "kept as written"
    assert props["quota.preemption.delay"] == "0", "plain YAML numbers are kept as text"
    assert shared.limits[0] == cfg.LimitConfig("ml cap", (), ("ml",), Resource.of(vcore=50_000, **{"nvidia.com/gpu": 8}), 20)
    assert [q.name for q in shared.queues] == ["default", "team:a/b@c#d"]
    assert all(q.is_leaf for q in shared.queues)


def test_queues_without_root_go_under_an_implicit_root_open_to_all():
    root = cfg.parse((CONFIGS / "good" / "no-root.yaml").read_text()).partitions[0].root
    assert root.name == "root" and root.parent and root.submit_acl == "*"
    assert [q.name for q in root.queues] == ["a", "b"]


def test_quantities_use_kubernetes_notation():
    q = queue(cfg.parse((CONFIGS / "good" / "quantities.yaml").read_text()), "root.q")
    assert q.resources.guaranteed == {"vcore": 250, "memory": 1536 * 2**20, "pods": 10, "ephemeral-storage": 1000}
    assert q.resources.max == {"vcore": 500, "memory": 2 * 10**9, "pods": 1000, "ephemeral-storage": 2048}


def test_second_partition_is_found_by_name():
    config = cfg.parse((CONFIGS / "good" / "two-partitions.yaml").read_text())
    assert [p.name for p in config.partitions] == ["default", "gpu-pool"]
    training = queue(config, "root.training", partition=1)
    assert training.resources.max == {"nvidia.com/gpu": 32, "vcore": 1_500_000}
    assert config.partition("gpu-pool").placement_rules[0].create


def test_checksum_is_uppercase_sha256_of_the_text_without_its_checksum_line():
    text = (CONFIGS / "good" / "minimal.yaml").read_text()
    assert "checksum:" in text
    without = "\n".join(line for line in text.splitlines() if not line.startswith("checksum"))
    assert cfg.checksum(text) == cfg.checksum(without) == cfg.parse(text).checksum
    assert len(cfg.checksum(text)) == 64 and cfg.checksum(text) == cfg.checksum(text).upper()
    assert cfg.checksum(text + "# a comment\n") != cfg.checksum(text)


def test_configs_compare_by_content():
    text = (CONFIGS / "good" / "upstream-example.yaml").read_text()
    first, second = cfg.parse(text), cfg.parse(text)
    assert first == second and first.partitions[0] is not second.partitions[0]
    changed = cfg.parse(text.replace("maxapplications: 200", "maxapplications: 199"))
    assert changed.partitions != first.partitions
    assert changed.partitions[0].placement_rules == first.partitions[0].placement_rules
    assert queue(changed, "root.interactive") == queue(first, "root.interactive")


def test_parsed_configs_are_immutable():
    config = cfg.parse((CONFIGS / "good" / "upstream-example.yaml").read_text())
    batch = config.partitions[0].root.queues[0]
    with pytest.raises(AttributeError):
        batch.max_applications = 1
    with pytest.raises(TypeError):
        batch.properties["application.sort.policy"] = "fifo"


@pytest.mark.parametrize(("properties", "expected"), [
    ({}, ("fifo", True, "default", 0, "default", 30.0)),
    ({"application.sort.policy": "FAIR", "application.sort.priority": "Disabled", "priority.policy": "fence",
      "priority.offset": "-5", "preemption.policy": "fence", "preemption.delay": "1h2m3.5s"},
     ("fair", False, "fence", -5, "fence", 3723.5)),
    ({"application.sort.policy": "stateaware", "preemption.delay": "0"}, ("stateaware", True, "default", 0, "default", 0.0)),
])
def test_properties_are_parsed_once_with_upstreams_defaults(properties, expected):
    parsed = cfg.parse_properties(properties)
    assert (parsed.sort_policy, parsed.priority_sorting, parsed.priority_policy, parsed.priority_offset,
            parsed.preemption_policy, parsed.preemption_delay) == expected
    assert dict(parsed) == properties, "the properties as written are kept"


@pytest.mark.parametrize(("text", "seconds"), [("30s", 30), ("1m30s", 90), ("1.5h", 5400), ("250ms", 0.25),
                                               ("0", 0), ("2us", 2e-6), (".5s", 0.5)])
def test_duration_seconds(text, seconds):
    assert cfg.duration_seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "30", "s", "-1s", "1d", "1m 2s", "1.2.3s", "30S"])
def test_duration_seconds_refuses_what_go_would(text):
    with pytest.raises(ValueError):
        cfg.duration_seconds(text)


def test_an_error_changes_nothing_and_carries_its_path():
    good = cfg.parse((CONFIGS / "good" / "upstream-example.yaml").read_text())
    with pytest.raises(cfg.ConfigError) as error:
        cfg.parse((CONFIGS / "bad" / "child-max-over-parent.yaml").read_text())
    assert error.value.path == "partitions[0].queues.root.queues.a.queues.batch"
    assert error.value.reason == "max vcore 200 exceeds parent max vcore 100"
    assert isinstance(error.value, ValueError)
    assert cfg.parse((CONFIGS / "good" / "upstream-example.yaml").read_text()) == good


@pytest.mark.parametrize(("body", "reason"), [
    ("queues: [{name: root, queues: [{name: a, parent: 'yes'}]}]", "queues.root.queues.a.parent: expected true or false"),
    ("queues: [{name: root, submitacl: 7}]", None),
    ("queues: [{name: root, queues: [{name: a, resources: {max: {vcore: true}}}]}]", "max.vcore"),
    ("queues: [{name: root, queues: [{name: a, resources: {max: [1]}}]}]", "expected a mapping of resource quantities"),
    ("queues: [{name: root, queues: [{name: ''}]}]", "queues.root.queues[0].name: is required"),
    ("queues: [{name: root, queues: [{name: a, limits: [{users: '*', maxapplications: 1}]}]}]", None),
    ("placementrules: [{name: fixed, value: 'root.a..b'}]\n    queues: [{name: root}]", "invalid queue name ''"),
    ("placementrules: [{name: user, create: true, parent: {name: fixed, value: users, create: true}}]\n"
     "    queues: [{name: root}]", None),
    ("preemption: {enabled: 1}\n    queues: [{name: root}]", "preemption.enabled: expected true or false"),
])
def test_field_shapes(body, reason):
    text = f"partitions:\n  - name: default\n    {body}\n"
    if reason is None:
        cfg.validate(text)
    else:
        with pytest.raises(cfg.ConfigError) as error:
            cfg.validate(text)
        assert str(error.value).startswith("partitions[0].") and reason in str(error.value)


@pytest.mark.parametrize("offset", ["١", "²", " 5", "1_0", "2147483648"])
def test_whole_number_properties_are_read_as_go_reads_them(offset):
    text = f"partitions: [{{name: default, queues: [{{name: root, properties: {{priority.offset: '{offset}'}}}}]}}]"
    with pytest.raises(cfg.ConfigError, match="priority.offset"):
        cfg.parse(text)
