"""queues.yaml parsing: good files parse, each bad file is refused with a message naming its path."""

import pathlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.core import config as cfg
from si.resources import Resource

CONFIGS = pathlib.Path(__file__).parent / "configs"
BAD = sorted((CONFIGS / "bad").glob("*.yaml"))
GOOD = sorted((CONFIGS / "good").glob("*.yaml"))


def expectation(path: pathlib.Path) -> str:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect: "), f"{path.name} lacks its '# expect:' line"
    return first[len("# expect: "):]


def test_the_corpus_is_large_enough():
    assert len(BAD) >= 20


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.stem)
def test_bad_config_is_refused_with_its_path(path):
    with pytest.raises(cfg.ConfigError) as error:
        cfg.validate(path.read_text())
    assert expectation(path) in str(error.value)


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.stem)
def test_good_config_parses(path):
    config = cfg.parse(path.read_text())
    assert config.partitions[0].root.name == "root"


def test_default_config():
    config = cfg.parse("")
    partition = config.partition("default")
    assert partition.root.submit_acl == "*" and partition.root.queues == ()
    assert [(r.name, r.value, r.create) for r in partition.placement_rules] == [("tag", "namespace", True)]
    assert partition.node_sort_policy.type == "fair"
    assert dict(partition.node_sort_policy.resource_weights) == {"vcore": 1.0, "memory": 1.0}


def test_fields_of_the_upstream_example():
    partition = cfg.parse((CONFIGS / "good" / "upstream-example.yaml").read_text()).partition("default")
    batch, interactive, tenants = partition.root.queues
    assert batch.max_applications == 200
    assert batch.resources.max == Resource.of(vcore=100_000, memory=400 * 2**30, **{"nvidia.com/gpu": 8})
    assert batch.resources.guaranteed == Resource.of(vcore=40_000, memory=160 * 2**30)
    assert cfg.sort_policy(batch.properties) == "fair"
    assert batch.limits[0].groups == ("data",) and batch.limits[0].max_resources["vcore"] == 60_000
    assert interactive.submit_acl == "alice,bob analysts"
    assert cfg.priority_offset(interactive.properties) == 100
    assert tenants.parent and tenants.is_leaf is False and tenants.child_template.max_applications == 10
    rule = partition.placement_rules[1]
    assert rule.parent.name == "fixed" and rule.parent.value == "root.tenants"
    assert rule.filter.type == "deny" and rule.filter.groups == ("blocked",)
    assert partition.limits[0].users == ("*",) and partition.limits[0].max_applications == 50
    assert partition.node_sort_policy.type == "binpacking"


def test_queues_without_root_go_under_an_implicit_root():
    root = cfg.parse((CONFIGS / "good" / "no-root.yaml").read_text()).partitions[0].root
    assert root.name == "root" and [q.name for q in root.queues] == ["a", "b"]


def test_checksum_ignores_the_checksum_line():
    text = (CONFIGS / "good" / "minimal.yaml").read_text()
    without = "\n".join(line for line in text.splitlines() if not line.startswith("checksum"))
    assert cfg.checksum(text) == cfg.checksum(without)
    assert cfg.checksum(text) == cfg.checksum(text).upper() and len(cfg.checksum(text)) == 64


def test_vcore_uses_kubernetes_notation():
    text = "partitions: [{name: default, queues: [{name: root, queues: [{name: a, resources: {max: {vcore: 500m, memory: 1Gi}}}]}]}]"
    assert cfg.parse(text).partitions[0].root.queues[0].resources.max == Resource.of(vcore=500, memory=2**30)


yamlish = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["", "root", "a", "a.b", "*", "fair", "10Gi", "x y z"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["partitions", "name", "queues", "resources", "max", "guaranteed", "vcore", "memory",
                         "placementrules", "limits", "users", "properties", "parent", "filter", "type", "value",
                         "nodesortpolicy", "submitacl", "maxapplications", "bogus"]), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(yamlish)
def test_any_document_either_parses_or_is_refused_with_a_config_error(document):
    import yaml

    text = yaml.safe_dump(document)
    try:
        cfg.parse(text)
    except cfg.ConfigError:
        pass
