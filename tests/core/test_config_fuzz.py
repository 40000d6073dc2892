"""Property tests: generated valid configs parse and round-trip; anything else is a ConfigError."""

import copy

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.core import config as cfg

UNITS = {"vcore": 1000, "memory": 2**20}  # SI units per generated step: a core, a MiB
QUEUE_NAMES = ["a", "b", "batch", "dev-1", "team:x", "q_2", "@svc", "x/y", "#7", "Default"]
ACLS = ["*", "alice,bob dev", " ops", "", " ", "carol.d", "alice "]
CHOICES = {"application.sort.policy": ["fifo", "fair", "stateaware", "FAIR"],
           "application.sort.priority": ["enabled", "disabled"], "priority.policy": ["default", "fence"],
           "priority.offset": ["0", "-7", "2147483647"], "preemption.policy": ["default", "fence", "disabled"],
           "preemption.delay": ["30s", "1m", "0", "1h15m"], "application.unschedasks.backoff": ["0", "12"],
           "free.text": ["anything at all"]}
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CHEAP = settings(max_examples=400, deadline=None)


def quantity(kind: str, steps: int) -> str:
    return f"{steps * UNITS[kind] // 1000}" if kind == "memory" else f"{steps}"


@st.composite
def resources_within(draw, cap: dict[str, int]) -> dict[str, int]:
    """A resource (in generation steps) no larger than ``cap``, on a random subset of its types."""
    return {kind: draw(st.integers(0, limit)) for kind, limit in cap.items() if draw(st.booleans())}


@st.composite
def limits(draw, cap: dict[str, int]) -> list[dict]:
    chosen = []
    if draw(st.booleans()):
        chosen.append({"limit": "named", "users": draw(st.lists(st.sampled_from(["alice", "bob", "svc@x"]),
                                                                min_size=1, max_size=2, unique=True)),
                       "maxapplications": draw(st.integers(1, 9))})
    if draw(st.booleans()):
        chosen.append({"users": ["*"], "groups": ["dev"], "maxapplications": draw(st.integers(1, 9))})
        if draw(st.booleans()):
            chosen.append({"groups": ["*"], "maxapplications": draw(st.integers(1, 9))})
    maxres = {k: v for k, v in draw(resources_within(cap)).items() if v > 0}
    if maxres:
        chosen.append({"groups": ["ops"], "maxresources": {k: quantity(k, v) for k, v in maxres.items()}})
    return chosen


@st.composite
def queue(draw, name: str, depth: int, parent_max: dict[str, int], budget: dict[str, int], parent_apps: int | None,
          leaves: list[str], path: str):
    """A queue dict honouring every rule parse checks, and its effective guaranteed resource (in steps)."""
    node: dict = {"name": name}
    own_max = {}
    if draw(st.booleans()):
        own_max = {k: v for k, v in draw(resources_within(parent_max)).items() if v > 0}
    effective_max = {**parent_max, **own_max}
    if own_max:
        node.setdefault("resources", {})["max"] = {k: quantity(k, v) for k, v in own_max.items()}
    room = {k: min(budget[k], effective_max[k]) for k in UNITS}
    max_apps = draw(st.none() | st.integers(1, parent_apps or 50))
    if max_apps is not None:
        node["maxapplications"] = max_apps
    count = draw(st.integers(0, 3 - depth)) if depth < 3 else 0
    names = draw(st.lists(st.sampled_from(QUEUE_NAMES), min_size=count, max_size=count,
                          unique_by=str.lower))
    children_guaranteed = dict.fromkeys(UNITS, 0)
    if names:
        node["queues"] = []
        for child_name in names:
            child, guaranteed = draw(queue(child_name, depth + 1, effective_max,
                                           {k: room[k] // len(names) for k in UNITS}, max_apps or parent_apps,
                                           leaves, f"{path}.{child_name}"))
            node["queues"].append(child)
            for k in UNITS:
                children_guaranteed[k] += guaranteed[k]
        if draw(st.booleans()):
            node["childtemplate"] = {"maxapplications": draw(st.integers(1, 5)),
                                     "resources": {"max": {k: quantity(k, v) for k, v in
                                                           draw(resources_within(effective_max)).items()}}}
    elif draw(st.booleans()):
        node["parent"] = True
    else:
        leaves.append(path)
    guaranteed = children_guaranteed
    if draw(st.booleans()):
        guaranteed = {k: children_guaranteed[k] + draw(st.integers(0, room[k] - children_guaranteed[k])) for k in UNITS}
        node.setdefault("resources", {})["guaranteed"] = {k: quantity(k, v) for k, v in guaranteed.items()}
    properties = draw(st.dictionaries(st.sampled_from(sorted(CHOICES)), st.none(), max_size=3))
    if properties:
        node["properties"] = {key: draw(st.sampled_from(CHOICES[key])) for key in properties}
    for key in ("submitacl", "adminacl"):
        if draw(st.booleans()):
            node[key] = draw(st.sampled_from(ACLS))
    chosen_limits = draw(limits(effective_max))
    if chosen_limits:
        node["limits"] = chosen_limits
    return node, guaranteed


@st.composite
def documents(draw) -> dict:
    partitions = []
    for name in draw(st.lists(st.sampled_from(["default", "gpu", "batch-2"]), min_size=1, max_size=2, unique=True)):
        leaves: list[str] = []
        top = {k: 10**6 for k in UNITS}
        root, _ = draw(queue("root", 0, top, top, None, leaves, "root"))
        root.pop("resources", None)
        root.pop("parent", None)
        if "queues" not in root:
            leaves.clear()  # a root without children is still a parent
        rules = draw(st.lists(st.sampled_from([
            {"name": "provided", "create": True}, {"name": "provided"}, {"name": "user", "create": True},
            {"name": "tag", "value": "namespace", "create": True},
            {"name": "user", "create": True, "filter": {"type": "deny", "users": ["^sys.*"]}},
        ]), max_size=3))
        if leaves and draw(st.booleans()):
            rules.append({"name": "fixed", "value": draw(st.sampled_from(leaves))})
        partition = {"name": name, "queues": [root], "placementrules": rules,
                     "nodesortpolicy": {"type": draw(st.sampled_from(["fair", "binpacking"]))},
                     "preemption": {"enabled": draw(st.booleans())}}
        partition_limits = draw(limits({k: 10**6 for k in UNITS}))
        if partition_limits:
            partition["limits"] = partition_limits
        partitions.append(partition)
    return {"partitions": partitions}


@pytest.mark.timeout(120)
@SETTINGS
@given(documents())
def test_generated_configs_parse_and_round_trip(document):
    text = yaml.safe_dump(document, sort_keys=False)
    config = cfg.parse(text)
    assert config.checksum == cfg.checksum(text)
    assert [p.name for p in config.partitions] == [p["name"] for p in document["partitions"]]
    again = cfg.parse(cfg.dump(config))
    assert again.partitions == config.partitions


yamlish = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=True)
    | st.sampled_from(["", "root", "a", "a.b", "*", "fair", "10Gi", "x y z", "-1", "1e400", "(", "root.a"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["partitions", "name", "queues", "resources", "max", "guaranteed", "vcore", "memory",
                         "placementrules", "limits", "users", "groups", "properties", "parent", "filter", "type",
                         "value", "nodesortpolicy", "resourceweights", "submitacl", "maxapplications",
                         "childtemplate", "create", "bogus"]) | st.integers(0, 3), inner, max_size=4),
    max_leaves=20)


def refused_only_by_config_error(text: str) -> None:
    try:
        cfg.parse(text)
    except cfg.ConfigError:
        pass
    try:
        cfg.validate(text)
    except cfg.ConfigError as error:
        second = str(error)
        with pytest.raises(cfg.ConfigError) as again:
            cfg.validate(text)
        assert str(again.value) == second, "validation is deterministic"


@pytest.mark.timeout(120)
@CHEAP
@given(yamlish)
def test_random_documents_parse_or_raise_config_error(document):
    refused_only_by_config_error(yaml.safe_dump(document))


@pytest.mark.timeout(120)
@CHEAP
@given(st.text(alphabet=st.sampled_from(list("partions:queu- []{}&*!|>'\"#\n vcore1Gi.,@%")), max_size=120))
def test_random_text_parses_or_raises_config_error(text):
    refused_only_by_config_error(text)


@st.composite
def mutated(draw):
    """A valid document with one value somewhere replaced by something arbitrary."""
    document = copy.deepcopy(draw(documents()))
    containers = []

    def collect(node):
        if isinstance(node, dict):
            containers.append(node)
            for value in node.values():
                collect(value)
        elif isinstance(node, list):
            for value in node:
                collect(value)

    collect(document)
    target = draw(st.sampled_from(containers))
    key = draw(st.sampled_from([*sorted(target, key=str), "unexpected"]))
    target[key] = draw(yamlish)
    return document


@pytest.mark.timeout(120)
@SETTINGS
@given(mutated())
def test_mutated_configs_parse_or_raise_config_error(document):
    refused_only_by_config_error(yaml.safe_dump(document, sort_keys=False))
