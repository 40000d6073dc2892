"""The queues configuration (``queues.yaml``): strict parsing into frozen, comparable dataclasses.

Every refusal is a :class:`ConfigError` whose message starts with the path of the offending element,
e.g. ``partitions[0].queues.root.queues.batch: max vcore 200 exceeds parent max vcore 100``. Unknown
keys, bad names, bad policy or property values, impossible quotas and placement rules that can never
place anything are refused; nothing half-parsed is ever returned.

Quantities use Kubernetes notation, as upstream's ``NewResourceFromConf`` reads them: ``vcore: 2`` is
two cores (2000 millicores in the SI), ``vcore: 500m`` is 500 millicores, ``memory: 2Gi`` is bytes, any
other type is a plain count (``nvidia.com/gpu: 8``).

Names: keys are lower case and matched exactly (``Queues:`` is an unknown key), a key given twice is an
error, queue names are kept as written (two siblings may not differ only by case), rule names and the
tag name of a ``tag`` rule are lower-cased. Queues listed without a ``root`` go under an implicit root
that admits everyone.

Two parsed configurations compare equal when they configure the same thing (``SchedulerConfig`` also
compares the checksum); :func:`dump` writes a configuration back as YAML that parses to an equal one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import yaml

from actors.base import record
from actors.core import usergroups, yamlsafe
from actors.core.acl import ACL, GROUP_NAME, USER_NAME, WILDCARD
from si.bounded import LIMIT, elide, shown
from si.goduration import parse_duration
from si.gonumber import parse_int
from si.quantity import QuantityError, format_quantity, to_si_value
from si.resources import Resource, min_limit

QUEUE_NAME = re.compile(r"^[a-zA-Z0-9_:#/@-]{1,64}$")
ROOT = "root"
RULE_NAMES = ("provided", "user", "tag", "fixed")
SORT_POLICIES = ("fifo", "fair", "stateaware")
NODE_SORT_POLICIES = ("fair", "binpacking")
USER_GROUP_RESOLVERS = ("", "os", "ldap", "test")
DEFAULT_WEIGHTS: Mapping[str, float] = MappingProxyType({"vcore": 1.0, "memory": 1.0})

# Characters that make a filter entry a regular expression rather than a name (as upstream decides).
_REGEXP_CHARS = re.compile(r"[\^$*+?()\[{}|]")
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

# Upstream's default (a queue per namespace, created on demand), with one more rule first: a namespace
# annotated ``yunikorn.apache.org/parentqueue`` gets its queue under that parent (created as needed), as
# upstream documents for the annotation; the rule does not apply to a namespace without it.
DEFAULT_QUEUES_YAML = """\
partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
        parent:
          name: tag
          value: namespace.parentqueue
          create: true
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: '*'
"""


class ConfigError(ValueError):
    """A refused configuration; ``path`` names the element, ``reason`` says why."""

    def __init__(self, path: str, reason: str) -> None:
        path, reason = elide(path), elide(reason, 3 * LIMIT)  # a path holds names taken from the input
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


def _no_properties() -> Mapping[str, str]:
    return MappingProxyType({})


@record
class ResourcesConfig:
    guaranteed: Resource | None = None
    max: Resource | None = None


@record
class LimitConfig:
    limit: str
    users: tuple[str, ...]
    groups: tuple[str, ...]
    max_resources: Resource | None
    max_applications: int | None


@dataclass(frozen=True, slots=True, eq=False)
class QueueProperties(Mapping[str, str]):
    """A queue's properties, parsed once (:func:`parse_properties`): the typed values the scheduler uses,
    upstream's defaults for those not given, and, as the mapping itself, the text as written (what REST
    shows and :func:`dump` writes). Two compare equal when written the same."""

    written: Mapping[str, str] = field(default_factory=_no_properties)
    sort_policy: str = "fifo"  # application.sort.policy: fifo, fair or stateaware
    priority_sorting: bool = True  # application.sort.priority: enabled unless disabled
    priority_policy: str = "default"  # priority.policy: default or fence
    priority_offset: int = 0  # priority.offset: an int32 added to the priority the queue shows its parent
    preemption_policy: str = "default"  # preemption.policy: default, fence or disabled
    preemption_delay: float = 30.0  # preemption.delay, seconds
    quota_preemption_delay: float = 0.0  # quota.preemption.delay, seconds (0: a queue over its max is never preempted)
    ask_backoff: int = 0  # application.unschedasks.backoff: attempts without a placement before waiting (0: never)
    ask_backoff_delay: float = 30.0  # application.unschedasks.backoff.delay, seconds: how long it then waits

    def __getitem__(self, key: str) -> str:
        return self.written[key]

    def __iter__(self):
        return iter(self.written)

    def __len__(self) -> int:
        return len(self.written)


NO_PROPERTIES = QueueProperties()


@record
class ChildTemplate:
    max_applications: int | None
    properties: QueueProperties
    resources: ResourcesConfig


@dataclass(frozen=True, slots=True)
class QueueConfig:
    name: str
    parent: bool = False
    resources: ResourcesConfig = field(default_factory=ResourcesConfig)
    max_applications: int | None = None
    properties: QueueProperties = field(default_factory=lambda: NO_PROPERTIES)
    admin_acl: str | None = None
    submit_acl: str | None = None
    child_template: ChildTemplate | None = None
    queues: tuple[QueueConfig, ...] = ()
    limits: tuple[LimitConfig, ...] = ()

    @property
    def is_leaf(self) -> bool:
        return not self.parent and not self.queues


@record
class FilterConfig:
    type: str
    users: tuple[str, ...]
    groups: tuple[str, ...]


@record
class PlacementRuleConfig:
    name: str
    create: bool = False
    value: str = ""
    parent: PlacementRuleConfig | None = None
    filter: FilterConfig | None = None


@dataclass(frozen=True, slots=True)
class NodeSortPolicyConfig:
    type: str = "fair"
    resource_weights: Mapping[str, float] = field(default_factory=lambda: DEFAULT_WEIGHTS)


@record
class PreemptionConfig:
    enabled: bool = True
    quota_preemption_enabled: bool = False


@dataclass(frozen=True, slots=True)
class PartitionConfig:
    name: str
    root: QueueConfig
    placement_rules: tuple[PlacementRuleConfig, ...] = ()
    limits: tuple[LimitConfig, ...] = ()
    preemption: PreemptionConfig = field(default_factory=PreemptionConfig)
    node_sort_policy: NodeSortPolicyConfig = field(default_factory=NodeSortPolicyConfig)
    user_group_resolver: str = ""


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    partitions: tuple[PartitionConfig, ...]
    checksum: str
    text: str = field(default="", compare=False, repr=False)

    def partition(self, name: str) -> PartitionConfig | None:
        return next((p for p in self.partitions if p.name == name), None)


def duration_seconds(text: str) -> float:
    """A Go duration (``30s``, ``1m30s``, ``1.5h``, ``0``) in seconds; ValueError when malformed or negative."""
    seconds = parse_duration(text)
    if seconds < 0:
        raise ValueError(f"must not be negative: {shown(text)}")
    return seconds


def checksum(text: str) -> str:
    """Uppercase SHA-256 hex of the configuration text without any ``checksum:`` line."""
    kept = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("checksum:"))
    return hashlib.sha256(kept.encode()).hexdigest().upper()


def validate(text: str | None) -> None:
    """Raise :class:`ConfigError` unless ``text`` is a configuration the scheduler would run."""
    parse(text)


def parse(text: str | None) -> SchedulerConfig:
    """The configuration in ``text``; ``None`` or blank text means :data:`DEFAULT_QUEUES_YAML`."""
    if text is None or not text.strip():
        text = DEFAULT_QUEUES_YAML
    try:
        node = yamlsafe.load(text)
    except yamlsafe.YamlError as error:
        raise ConfigError("", str(error)) from None
    return _document(node, text)


# Shapes: each takes the YAML node and its path, and returns a plain value or raises ConfigError.
def _mapping(node: Any, path: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    if node is None:
        return {}
    if not isinstance(node, dict):
        raise ConfigError(path, f"expected a mapping, got {_kind(node)}")
    for key in node:
        if key not in allowed:
            raise ConfigError(path, f"unknown key {shown(key)} (allowed: {', '.join(allowed)})")
    return node


def _list(node: Any, path: str) -> list:
    if node is None:
        return []
    if not isinstance(node, list):
        raise ConfigError(path, f"expected a list, got {_kind(node)}")
    return node


def _string(node: Any, path: str) -> str:
    if node is None:
        return ""
    if isinstance(node, bool) or not isinstance(node, (str, int, float)):
        raise ConfigError(path, f"expected a string, got {_kind(node)}")
    return str(node)


def _required_string(node: Any, path: str) -> str:
    value = _string(node, path)
    if not value:
        raise ConfigError(path, "is required")
    return value


def _bool(node: Any, path: str, default: bool) -> bool:
    if node is None:
        return default
    if not isinstance(node, bool):
        raise ConfigError(path, f"expected true or false, got {shown(node)}")
    return node


def _count(node: Any, path: str) -> int | None:
    if node is None:
        return None
    if isinstance(node, bool) or not isinstance(node, int) or node < 0:
        raise ConfigError(path, f"expected a whole number >= 0, got {shown(node)}")
    return node


def _names(node: Any, path: str) -> tuple[str, ...]:
    """A list of names; a single string counts as a list of one."""
    if isinstance(node, str):
        return (node,)
    return tuple(_string(v, f"{path}[{i}]") for i, v in enumerate(_list(node, path)))


def _resource(node: Any, path: str) -> Resource | None:
    if node is None:
        return None
    if not isinstance(node, dict):
        raise ConfigError(path, f"expected a mapping of resource quantities, got {_kind(node)}")
    values = {}
    for name, quantity in node.items():
        if not isinstance(name, str) or not name:
            raise ConfigError(path, f"bad resource name {shown(name)}")
        try:
            values[name] = to_si_value(name, quantity)
        except QuantityError as error:
            raise ConfigError(f"{path}.{name}", str(error)) from None
    return Resource(values)


def _kind(node: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(type(node), type(node).__name__)


def _show(name: str, value: int) -> str:
    return f"{name} {format_quantity(name, value)}"


def _first_excess(value: Resource, limit: Resource | None) -> tuple[str, int, int] | None:
    """The first type where ``value`` is above ``limit`` (missing in limit = unlimited)."""
    if limit is None:
        return None
    for name, (amount, cap) in sorted(value.exceeding(limit).items()):
        return name, amount, cap
    return None


_PROPERTY_CHOICES = {  # the first is the default
    "application.sort.policy": SORT_POLICIES,
    "application.sort.priority": ("enabled", "disabled"),
    "priority.policy": ("default", "fence"),
    "preemption.policy": ("default", "fence", "disabled"),
}
_DURATION_PROPERTIES = {"preemption.delay": "30s", "quota.preemption.delay": "0",
                        "application.unschedasks.backoff.delay": "30s"}


def parse_properties(node: Any, path: str = "properties") -> QueueProperties:
    """A queue's ``properties`` mapping, checked and parsed; ``ConfigError`` naming the first bad value."""
    if node is None:
        return NO_PROPERTIES
    if not isinstance(node, dict):
        raise ConfigError(path, f"expected a mapping, got {_kind(node)}")
    properties = {}
    for key, value in node.items():
        text = str(value).lower() if isinstance(value, bool) else _string(value, f"{path}.{key}")
        properties[str(key)] = text
    choices = {}
    for key, allowed in _PROPERTY_CHOICES.items():
        choices[key] = properties.get(key, allowed[0]).lower()
        if choices[key] not in allowed:
            raise ConfigError(f"{path}.{key}", f"unknown value {shown(properties[key])} (allowed: {', '.join(allowed)})")
    offset = _whole(properties.get("priority.offset", "0"), f"{path}.priority.offset", -(2**31), 2**31 - 1)
    backoff = _whole(properties.get("application.unschedasks.backoff", "0"), f"{path}.application.unschedasks.backoff",
                     0, 2**63 - 1)
    durations = {}
    for key, default in _DURATION_PROPERTIES.items():
        try:
            durations[key] = duration_seconds(properties.get(key, default))
        except ValueError as error:
            raise ConfigError(f"{path}.{key}", str(error)) from None
    return QueueProperties(
        MappingProxyType(properties), sort_policy=choices["application.sort.policy"],
        priority_sorting=choices["application.sort.priority"] != "disabled",
        priority_policy=choices["priority.policy"],
        priority_offset=offset,
        preemption_policy=choices["preemption.policy"], preemption_delay=durations["preemption.delay"],
        quota_preemption_delay=durations["quota.preemption.delay"],
        ask_backoff=backoff,
        ask_backoff_delay=durations["application.unschedasks.backoff.delay"])


def inherit_properties(parent: QueueProperties, own: QueueProperties) -> QueueProperties:
    """A configured child queue's properties, as upstream's ``Queue.mergeProperties``: its parent's (already
    merged with theirs) under its own. Some are not passed down as written: ``priority.policy`` becomes
    ``default`` and ``priority.offset`` ``0`` (a fence and an offset are the setting queue's alone), and
    ``preemption.policy`` passes down only as ``disabled``, else ``default``."""
    if not parent:
        return own
    merged = {key: _as_inherited(key, value) for key, value in parent.items()}
    merged.update(own)
    return parse_properties(merged)


def _as_inherited(key: str, value: str) -> str:
    if key == "priority.policy":
        return "default"
    if key == "priority.offset":
        return "0"
    if key == "preemption.policy" and value.lower() != "disabled":
        return "default"
    return value


def _whole(text: str, path: str, low: int, high: int) -> int:
    try:
        number = parse_int(text)  # as upstream: strconv.ParseInt, ASCII digits
    except ValueError:
        raise ConfigError(path, f"not a whole number: {shown(text)}") from None
    if not low <= number <= high:
        raise ConfigError(path, f"{number} is out of range {low}..{high}")
    return number


def _acl(node: Any, path: str) -> str | None:
    if node is None:
        return None
    text = _string(node, path)
    try:
        ACL.parse(text)
    except ValueError as error:
        raise ConfigError(path, str(error)) from None
    return text


def _document(node: Any, text: str) -> SchedulerConfig:
    node = _mapping(node, "top level", ("partitions", "checksum"))
    _string(node.get("checksum"), "checksum")
    if node.get("partitions") is None:
        raise ConfigError("partitions", "is required")
    partitions = _list(node["partitions"], "partitions")
    if not partitions:
        raise ConfigError("partitions", "at least one partition is required")
    parsed = tuple(_partition(p, f"partitions[{i}]") for i, p in enumerate(partitions))
    seen: set[str] = set()
    for i, partition in enumerate(parsed):
        if partition.name.lower() in seen:
            raise ConfigError(f"partitions[{i}]", f"duplicate partition name {shown(partition.name)}")
        seen.add(partition.name.lower())
    return SchedulerConfig(parsed, checksum(text), text)


def _partition(node: Any, path: str) -> PartitionConfig:
    node = _mapping(node, path, ("name", "queues", "placementrules", "limits", "preemption", "nodesortpolicy",
                                 "usergroupresolver"))
    name = _required_string(node.get("name"), f"{path}.name")
    if not QUEUE_NAME.match(name):
        raise ConfigError(f"{path}.name", f"invalid partition name {shown(name)}: 1 to 64 of a-z A-Z 0-9 _ : # / @ -")
    root = _root(node.get("queues"), path)
    rules = tuple(_rule(r, f"{path}.placementrules[{i}]")
                  for i, r in enumerate(_list(node.get("placementrules"), f"{path}.placementrules")))
    for i, rule in enumerate(rules):
        _check_rule_target(rule, root, f"{path}.placementrules[{i}]")
    preemption = _mapping(node.get("preemption"), f"{path}.preemption", ("enabled", "quotapreemptionenabled"))
    resolver = _mapping(node.get("usergroupresolver"), f"{path}.usergroupresolver", ("type",))
    resolver_type = _string(resolver.get("type"), f"{path}.usergroupresolver.type").lower()
    if resolver_type not in USER_GROUP_RESOLVERS:
        raise ConfigError(f"{path}.usergroupresolver.type",
                          f"unknown resolver {shown(resolver_type)} (allowed: os, ldap, test or none)")
    if resolver_type not in usergroups.SUPPORTED:
        raise ConfigError(f"{path}.usergroupresolver.type",
                          f"resolver {resolver_type} is not supported yet (supported: os or none)")
    return PartitionConfig(
        name=name, root=root, placement_rules=rules,
        limits=_limits(node.get("limits"), f"{path}.limits", None),
        preemption=PreemptionConfig(
            _bool(preemption.get("enabled"), f"{path}.preemption.enabled", True),
            _bool(preemption.get("quotapreemptionenabled"), f"{path}.preemption.quotapreemptionenabled", False)),
        node_sort_policy=_node_sort_policy(node.get("nodesortpolicy"), f"{path}.nodesortpolicy"),
        user_group_resolver=resolver_type)


def _root(node: Any, partition_path: str) -> QueueConfig:
    """The root queue; queues listed without a root go under an implicit one that admits everyone."""
    queues = _list(node, f"{partition_path}.queues")
    path = f"{partition_path}.queues.root"
    if len(queues) == 1 and isinstance(queues[0], dict) and str(queues[0].get("name", "")).lower() == ROOT:
        root = _queue(queues[0], path, None, is_root=True)
    else:
        root = _queue({"name": ROOT, "submitacl": WILDCARD, "queues": queues}, path, None, is_root=True)
    if root.resources.max is not None or root.resources.guaranteed is not None:
        raise ConfigError(path, "the root queue may not set resources: it has the whole cluster")
    return root


def _queue(node: Any, path: str, parent_max: Resource | None, is_root: bool = False) -> QueueConfig:
    node = _mapping(node, path, ("name", "parent", "resources", "maxapplications", "properties", "adminacl",
                                 "submitacl", "childtemplate", "queues", "limits"))
    name = _required_string(node.get("name"), f"{path}.name")
    if not is_root and not QUEUE_NAME.match(name):
        raise ConfigError(path, f"invalid queue name {shown(name)}: 1 to 64 of a-z A-Z 0-9 _ : # / @ -, no dots")
    if not is_root and name.lower() == ROOT:
        raise ConfigError(path, "the name root is reserved for the top queue")
    declared_parent = _bool(node.get("parent"), f"{path}.parent", False)
    resources = _resources(node.get("resources"), f"{path}.resources")
    excess = _first_excess(resources.max or Resource(), parent_max)
    if excess:
        kind, value, cap = excess
        raise ConfigError(path, f"max {_show(kind, value)} exceeds parent max {_show(kind, cap)}")
    effective_max = min_limit(resources.max, parent_max)
    children = []
    for i, child in enumerate(_list(node.get("queues"), f"{path}.queues")):
        child_name = child.get("name") if isinstance(child, dict) else None
        named = isinstance(child_name, str) and child_name != ""
        children.append(_queue(child, f"{path}.queues.{child_name}" if named else f"{path}.queues[{i}]",
                               effective_max))
    queue = QueueConfig(
        name=ROOT if is_root else name,
        parent=is_root or declared_parent or bool(children),
        resources=resources,
        max_applications=_count(node.get("maxapplications"), f"{path}.maxapplications"),
        properties=parse_properties(node.get("properties"), f"{path}.properties"),
        admin_acl=_acl(node.get("adminacl"), f"{path}.adminacl"),
        submit_acl=_acl(node.get("submitacl"), f"{path}.submitacl"),
        child_template=_child_template(node.get("childtemplate"), f"{path}.childtemplate", effective_max),
        queues=tuple(children),
        limits=_limits(node.get("limits"), f"{path}.limits", effective_max))
    _check_children(queue, path, effective_max)
    return queue


def _resources(node: Any, path: str) -> ResourcesConfig:
    node = _mapping(node, path, ("guaranteed", "max"))
    guaranteed = _resource(node.get("guaranteed"), f"{path}.guaranteed")
    maximum = _resource(node.get("max"), f"{path}.max")
    excess = _first_excess(guaranteed or Resource(), maximum)
    if excess:
        name, value, cap = excess
        raise ConfigError(path, f"guaranteed {_show(name, value)} exceeds max {_show(name, cap)}")
    return ResourcesConfig(guaranteed, maximum)


def _effective_guaranteed(queue: QueueConfig) -> Resource:
    """What a queue guarantees: its own setting, else what its children guarantee together."""
    if queue.resources.guaranteed is not None:
        return queue.resources.guaranteed
    total = Resource()
    for child in queue.queues:
        total = total + _effective_guaranteed(child)
    return total


def _check_children(queue: QueueConfig, path: str, effective_max: Resource | None) -> None:
    seen: set[str] = set()
    for child in queue.queues:
        child_path = f"{path}.queues.{child.name}"
        if child.name.lower() in seen:
            raise ConfigError(child_path, f"duplicate queue name {shown(child.name)}")
        seen.add(child.name.lower())
        if queue.max_applications and child.max_applications and child.max_applications > queue.max_applications:
            raise ConfigError(child_path, f"maxapplications {child.max_applications} exceeds parent "
                                          f"maxapplications {queue.max_applications}")
    children_guaranteed = Resource()
    for child in queue.queues:
        children_guaranteed = children_guaranteed + _effective_guaranteed(child)
    for limit, what in ((queue.resources.guaranteed, "guaranteed"), (effective_max, "max")):
        excess = _first_excess(children_guaranteed, limit)
        if excess:
            name, value, cap = excess
            raise ConfigError(path, f"sum of child guaranteed {_show(name, value)} exceeds {what} {_show(name, cap)}")


def _child_template(node: Any, path: str, effective_max: Resource | None) -> ChildTemplate | None:
    if node is None:
        return None
    node = _mapping(node, path, ("maxapplications", "properties", "resources"))
    resources = _resources(node.get("resources"), f"{path}.resources")
    excess = _first_excess(resources.max or Resource(), effective_max)
    if excess:
        name, value, cap = excess
        raise ConfigError(f"{path}.resources", f"max {_show(name, value)} exceeds the queue max {_show(name, cap)}")
    return ChildTemplate(_count(node.get("maxapplications"), f"{path}.maxapplications"),
                         parse_properties(node.get("properties"), f"{path}.properties"), resources)


def _node_sort_policy(node: Any, path: str) -> NodeSortPolicyConfig:
    node = _mapping(node, path, ("type", "resourceweights"))
    policy = (_string(node.get("type"), f"{path}.type") or "fair").lower()
    if policy not in NODE_SORT_POLICIES:
        raise ConfigError(f"{path}.type", f"unknown node sort policy {shown(policy)} (allowed: {', '.join(NODE_SORT_POLICIES)})")
    weights_node = node.get("resourceweights")
    if weights_node is None:
        return NodeSortPolicyConfig(policy, DEFAULT_WEIGHTS)
    weights_path = f"{path}.resourceweights"
    if not isinstance(weights_node, dict) or not weights_node:
        raise ConfigError(weights_path, "expected a non-empty mapping of resource name to weight")
    weights = {}
    for name, weight in weights_node.items():
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 <= weight < float("inf"):
            raise ConfigError(f"{weights_path}.{name}", f"weight must be a number >= 0, got {shown(weight)}")
        weights[str(name)] = float(weight)
    if not any(weights.values()):
        raise ConfigError(weights_path, "at least one weight must be above zero")
    return NodeSortPolicyConfig(policy, MappingProxyType(weights))


# Limits.
def _limits(node: Any, path: str, queue_max: Resource | None) -> tuple[LimitConfig, ...]:
    limits = tuple(_limit(item, f"{path}[{i}]", queue_max) for i, item in enumerate(_list(node, path)))
    for kind in ("users", "groups"):
        wildcards = [i for i, limit in enumerate(limits) if WILDCARD in getattr(limit, kind)]
        if len(wildcards) > 1:
            raise ConfigError(f"{path}[{wildcards[1]}].{kind}", f"a second wildcard limit for {kind} "
                                                               f"(the first is {path}[{wildcards[0]}])")
    named_groups = any(g != WILDCARD for limit in limits for g in limit.groups)
    if any(WILDCARD in limit.groups for limit in limits) and not named_groups:
        raise ConfigError(path, "a wildcard group limit needs a limit for a named group beside it")
    return limits


def _limit(node: Any, path: str, queue_max: Resource | None) -> LimitConfig:
    node = _mapping(node, path, ("limit", "users", "groups", "maxresources", "maxapplications"))
    users = _names(node.get("users"), f"{path}.users")
    groups = _names(node.get("groups"), f"{path}.groups")
    if not users and not groups:
        raise ConfigError(path, "a limit needs users or groups")
    for kind, names, pattern in (("users", users, USER_NAME), ("groups", groups, GROUP_NAME)):
        for i, name in enumerate(names):
            if name != WILDCARD and not pattern.match(name):
                raise ConfigError(f"{path}.{kind}[{i}]", f"invalid {kind[:-1]} name {shown(name)}")
    max_resources = _resource(node.get("maxresources"), f"{path}.maxresources")
    max_apps = _count(node.get("maxapplications"), f"{path}.maxapplications")
    if max_apps == 0:
        raise ConfigError(f"{path}.maxapplications", "must be above zero when set")
    if max_resources is None and max_apps is None:
        raise ConfigError(path, "a limit needs maxresources or maxapplications")
    if max_resources is not None and max_resources.is_zero():
        raise ConfigError(f"{path}.maxresources", "may not be all zero")
    excess = _first_excess(max_resources or Resource(), queue_max)
    if excess:
        name, value, cap = excess
        raise ConfigError(f"{path}.maxresources", f"{_show(name, value)} exceeds the queue max {_show(name, cap)}")
    return LimitConfig(_string(node.get("limit"), f"{path}.limit"), users, groups, max_resources, max_apps)


# Placement rules.
def _rule(node: Any, path: str) -> PlacementRuleConfig:
    node = _mapping(node, path, ("name", "create", "parent", "filter", "value"))
    name = _required_string(node.get("name"), f"{path}.name").lower()
    if name not in RULE_NAMES:
        raise ConfigError(f"{path}.name", f"unknown placement rule {shown(name)} (allowed: {', '.join(RULE_NAMES)})")
    value = _string(node.get("value"), f"{path}.value")
    if name in ("tag", "fixed") and not value:
        raise ConfigError(f"{path}.value", f"the {name} rule needs a value")
    if name == "tag":
        value = value.lower()  # tag names are matched without case, as upstream normalises them
    parent = _rule(node["parent"], f"{path}.parent") if node.get("parent") is not None else None
    if name == "fixed":
        parts = value.split(".")
        for part in parts[1:] if parts[0] == ROOT else parts:
            if not QUEUE_NAME.match(part):
                raise ConfigError(f"{path}.value", f"invalid queue name {shown(part)} in {shown(value)}")
        if parts[0] == ROOT and parent is not None:
            raise ConfigError(f"{path}.parent", f"a fixed rule with a full queue path ({value}) takes no parent rule")
    return PlacementRuleConfig(name, _bool(node.get("create"), f"{path}.create", False), value, parent,
                               _filter(node.get("filter"), f"{path}.filter"))


def _filter(node: Any, path: str) -> FilterConfig | None:
    if node is None:
        return None
    node = _mapping(node, path, ("type", "users", "groups"))
    kind = (_string(node.get("type"), f"{path}.type") or "allow").lower()
    if kind not in ("allow", "deny"):
        raise ConfigError(f"{path}.type", f"unknown filter type {shown(kind)} (allowed: allow, deny)")
    users = _names(node.get("users"), f"{path}.users")
    groups = _names(node.get("groups"), f"{path}.groups")
    for key, entries, pattern in (("users", users, USER_NAME), ("groups", groups, GROUP_NAME)):
        if len(entries) == 1 and not pattern.match(entries[0]):
            if not _REGEXP_CHARS.search(entries[0]):
                raise ConfigError(f"{path}.{key}", f"{shown(entries[0])} is neither a name nor a regular expression")
            try:
                re.compile(entries[0])
            except re.error as error:
                raise ConfigError(f"{path}.{key}", f"invalid regular expression {shown(entries[0])}: {error}") from None
        elif len(entries) > 1:
            for i, entry in enumerate(entries):
                if not pattern.match(entry):
                    raise ConfigError(f"{path}.{key}[{i}]", f"invalid {key[:-1]} name {shown(entry)} "
                                                            "(a list holds names; a regular expression stands alone)")
    return FilterConfig(kind, users, groups)


def _static_target(rule: PlacementRuleConfig) -> tuple[list[str], bool]:
    """The queue path a rule chain fixes in advance, and whether a dynamic part follows it."""
    if rule.name == "fixed":
        parts = rule.value.split(".")
        if parts[0] == ROOT:
            return parts, False
        if rule.parent is None:
            return [ROOT, *parts], False
        parent_parts, dynamic = _static_target(rule.parent)
        return ([ROOT], True) if dynamic else ([*parent_parts, *parts], False)
    parent_parts = _static_target(rule.parent)[0] if rule.parent is not None else [ROOT]
    return parent_parts, True


def _check_rule_target(rule: PlacementRuleConfig, root: QueueConfig, path: str) -> None:
    """Refuse a rule that can never place: its fixed path runs through a leaf, or is missing without create."""
    parts, dynamic = _static_target(rule)
    queue = root
    for depth, part in enumerate(parts[1:], start=1):
        if queue.is_leaf:
            raise ConfigError(path, f"queue {'.'.join(parts[:depth])} is a leaf: it cannot hold {'.'.join(parts)}")
        child = next((q for q in queue.queues if q.name == part), None)
        if child is None:
            if not rule.create:
                raise ConfigError(path, f"queue {'.'.join(parts)} does not exist and the rule does not create it")
            return
        queue = child
    if dynamic and queue.is_leaf:
        raise ConfigError(path, f"queue {'.'.join(parts)} is a leaf: it cannot be the parent of placed queues")
    if not dynamic and not queue.is_leaf:
        raise ConfigError(path, f"queue {'.'.join(parts)} is a parent queue: applications only run in leaves")


# Writing a configuration back.
def dump(config: SchedulerConfig) -> str:
    """YAML for ``config`` that :func:`parse` reads back into an equal configuration."""
    return yaml.dump({"partitions": [_dump_partition(p) for p in config.partitions]},
                     Dumper=_DUMPER, sort_keys=False, allow_unicode=True)


def _dump_partition(partition: PartitionConfig) -> dict:
    document: dict[str, Any] = {"name": partition.name, "queues": [_dump_queue(partition.root)]}
    if partition.placement_rules:
        document["placementrules"] = [_dump_rule(r) for r in partition.placement_rules]
    if partition.limits:
        document["limits"] = [_dump_limit(limit) for limit in partition.limits]
    document["preemption"] = {"enabled": partition.preemption.enabled,
                              "quotapreemptionenabled": partition.preemption.quota_preemption_enabled}
    document["nodesortpolicy"] = {"type": partition.node_sort_policy.type,
                                  "resourceweights": dict(partition.node_sort_policy.resource_weights)}
    if partition.user_group_resolver:
        document["usergroupresolver"] = {"type": partition.user_group_resolver}
    return document


def _dump_queue(queue: QueueConfig) -> dict:
    document: dict[str, Any] = {"name": queue.name}
    if queue.parent:
        document["parent"] = True
    resources = _dump_resources(queue.resources)
    if resources:
        document["resources"] = resources
    optional = (("maxapplications", queue.max_applications), ("adminacl", queue.admin_acl),
                ("submitacl", queue.submit_acl))
    document.update((key, value) for key, value in optional if value is not None)
    if queue.properties:
        document["properties"] = dict(queue.properties)
    if queue.child_template is not None:
        template: dict[str, Any] = {}
        if queue.child_template.max_applications is not None:
            template["maxapplications"] = queue.child_template.max_applications
        if queue.child_template.properties:
            template["properties"] = dict(queue.child_template.properties)
        template_resources = _dump_resources(queue.child_template.resources)
        if template_resources:
            template["resources"] = template_resources
        document["childtemplate"] = template
    if queue.limits:
        document["limits"] = [_dump_limit(limit) for limit in queue.limits]
    if queue.queues:
        document["queues"] = [_dump_queue(child) for child in queue.queues]
    return document


def _dump_resources(resources: ResourcesConfig) -> dict:
    return {key: _dump_quantities(value) for key, value in (("guaranteed", resources.guaranteed),
                                                            ("max", resources.max)) if value is not None}


def _dump_quantities(resource: Resource) -> dict[str, str]:
    return {name: format_quantity(name, value) for name, value in resource.items()}


def _dump_limit(limit: LimitConfig) -> dict:
    document: dict[str, Any] = {"limit": limit.limit, "users": list(limit.users), "groups": list(limit.groups)}
    if limit.max_resources is not None:
        document["maxresources"] = _dump_quantities(limit.max_resources)
    if limit.max_applications is not None:
        document["maxapplications"] = limit.max_applications
    return document


def _dump_rule(rule: PlacementRuleConfig) -> dict:
    document: dict[str, Any] = {"name": rule.name, "create": rule.create}
    if rule.value:
        document["value"] = rule.value
    if rule.parent is not None:
        document["parent"] = _dump_rule(rule.parent)
    if rule.filter is not None:
        document["filter"] = {"type": rule.filter.type, "users": list(rule.filter.users),
                              "groups": list(rule.filter.groups)}
    return document
