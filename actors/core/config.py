"""The queues configuration (``queues.yaml``): strict parsing into frozen dataclasses.

Every error is a :class:`ConfigError` whose message starts with the path of the offending element,
e.g. ``partitions[0].queues.root.queues.batch: max vcore 200 exceeds parent max 100``. Unknown keys,
bad names, bad policy names, impossible quotas are all refused; nothing half-parsed is ever used.

Quantities use Kubernetes notation, as upstream's ``NewResourceFromConf`` reads them: ``vcore: 2`` is
two cores (2000 millicores in the SI), ``vcore: 500m`` is 500 millicores, ``memory: 2Gi`` is bytes, any
other type is a plain count.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import yaml

from si.quantity import QuantityError, format_quantity, to_si_value
from si.resources import Resource

QUEUE_NAME = re.compile(r"^[a-zA-Z0-9_:#/@-]{1,64}$")
RULE_NAMES = ("provided", "user", "tag", "fixed")
SORT_POLICIES = ("fifo", "fair", "stateaware")
NODE_SORT_POLICIES = ("fair", "binpacking")
DEFAULT_WEIGHTS = MappingProxyType({"vcore": 1.0, "memory": 1.0})
_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")

DEFAULT_QUEUES_YAML = """\
partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: '*'
"""


class ConfigError(ValueError):
    """A refused configuration; ``path`` names the element, the message says why."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


@dataclass(frozen=True, slots=True)
class ResourcesConfig:
    guaranteed: Resource | None = None
    max: Resource | None = None


@dataclass(frozen=True, slots=True)
class LimitConfig:
    limit: str
    users: tuple[str, ...]
    groups: tuple[str, ...]
    max_resources: Resource | None
    max_applications: int | None


@dataclass(frozen=True, slots=True)
class ChildTemplate:
    max_applications: int | None
    properties: Mapping[str, str]
    resources: ResourcesConfig


@dataclass(frozen=True, slots=True)
class QueueConfig:
    name: str
    parent: bool = False
    resources: ResourcesConfig = field(default_factory=ResourcesConfig)
    max_applications: int | None = None
    properties: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    admin_acl: str | None = None
    submit_acl: str | None = None
    child_template: ChildTemplate | None = None
    queues: tuple[QueueConfig, ...] = ()
    limits: tuple[LimitConfig, ...] = ()

    @property
    def is_leaf(self) -> bool:
        return not self.parent and not self.queues


@dataclass(frozen=True, slots=True)
class FilterConfig:
    type: str
    users: tuple[str, ...]
    groups: tuple[str, ...]


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
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
    text: str = ""

    def partition(self, name: str) -> PartitionConfig | None:
        return next((p for p in self.partitions if p.name == name), None)


# Typed access to queue properties, with the defaults the scheduler uses.
def sort_policy(properties: Mapping[str, str]) -> str:
    return properties.get("application.sort.policy", "fifo").lower()


def priority_sorting(properties: Mapping[str, str]) -> bool:
    return properties.get("application.sort.priority", "enabled").lower() != "disabled"


def priority_policy(properties: Mapping[str, str]) -> str:
    return properties.get("priority.policy", "default").lower()


def priority_offset(properties: Mapping[str, str]) -> int:
    return int(properties.get("priority.offset", "0"))


def checksum(text: str) -> str:
    """Uppercase SHA-256 hex of the configuration text, without any ``checksum:`` line."""
    kept = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("checksum:"))
    return hashlib.sha256(kept.encode()).hexdigest().upper()


def validate(text: str | None) -> None:
    """Raise :class:`ConfigError` when ``text`` is not a configuration the scheduler would run."""
    parse(text)


def parse(text: str | None) -> SchedulerConfig:
    """The configuration in ``text``; empty text means the default configuration."""
    if text is None or not text.strip():
        text = DEFAULT_QUEUES_YAML
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        raise ConfigError("", f"not valid YAML{at}: {getattr(error, 'problem', None) or error}") from None
    return _Parser().document(document, text)


class _Parser:
    """Walks the YAML document; each method takes the node and its path."""

    def document(self, node: Any, text: str) -> SchedulerConfig:
        node = self._mapping(node, "", {"partitions", "checksum"})
        partitions = self._list(node.get("partitions"), "partitions", required=True)
        if not partitions:
            raise ConfigError("partitions", "at least one partition is required")
        parsed = tuple(self.partition(p, f"partitions[{i}]") for i, p in enumerate(partitions))
        names = [p.name for p in parsed]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise ConfigError(f"partitions[{i}]", f"duplicate partition name {name!r}")
        return SchedulerConfig(parsed, checksum(text), text)

    # Generic shapes.
    def _mapping(self, node: Any, path: str, allowed: set[str]) -> dict:
        if node is None:
            node = {}
        if not isinstance(node, dict):
            raise ConfigError(path, f"expected a mapping, got {type(node).__name__}")
        for key in node:
            if not isinstance(key, str) or key.lower() not in allowed:
                raise ConfigError(path, f"unknown key {key!r} (allowed: {', '.join(sorted(allowed))})")
        return {k.lower(): v for k, v in node.items()}

    def _list(self, node: Any, path: str, required: bool = False) -> list:
        if node is None:
            if required:
                raise ConfigError(path, "is required")
            return []
        if not isinstance(node, list):
            raise ConfigError(path, f"expected a list, got {type(node).__name__}")
        return node

    def _string(self, node: Any, path: str, required: bool = False) -> str:
        if node is None:
            if required:
                raise ConfigError(path, "is required")
            return ""
        if isinstance(node, bool) or not isinstance(node, (str, int, float)):
            raise ConfigError(path, f"expected a string, got {type(node).__name__}")
        return str(node)

    def _bool(self, node: Any, path: str, default: bool) -> bool:
        if node is None:
            return default
        if not isinstance(node, bool):
            raise ConfigError(path, f"expected true or false, got {node!r}")
        return node

    def _count(self, node: Any, path: str) -> int | None:
        if node is None:
            return None
        if isinstance(node, bool) or not isinstance(node, int) or node < 0:
            raise ConfigError(path, f"expected a whole number >= 0, got {node!r}")
        return node

    def _strings(self, node: Any, path: str) -> tuple[str, ...]:
        if node is None:
            return ()
        if isinstance(node, str):
            return (node,)
        return tuple(self._string(v, f"{path}[{i}]") for i, v in enumerate(self._list(node, path)))

    def _resource(self, node: Any, path: str) -> Resource | None:
        if node is None:
            return None
        if not isinstance(node, dict):
            raise ConfigError(path, f"expected a mapping of resource quantities, got {type(node).__name__}")
        values = {}
        for name, quantity in node.items():
            if not isinstance(name, str) or not name:
                raise ConfigError(path, f"bad resource name {name!r}")
            try:
                values[name] = to_si_value(name, quantity)
            except QuantityError as error:
                raise ConfigError(f"{path}.{name}", str(error)) from None
        return Resource(values)

    def _resources(self, node: Any, path: str) -> ResourcesConfig:
        node = self._mapping(node, path, {"guaranteed", "max"})
        guaranteed = self._resource(node.get("guaranteed"), f"{path}.guaranteed")
        maximum = self._resource(node.get("max"), f"{path}.max")
        if guaranteed is not None and maximum is not None:
            for name, (value, limit) in guaranteed.exceeding(maximum).items():
                raise ConfigError(path, f"guaranteed {_show(name, value)} exceeds max {_show(name, limit)}")
        return ResourcesConfig(guaranteed, maximum)

    def _properties(self, node: Any, path: str) -> Mapping[str, str]:
        if node is None:
            return MappingProxyType({})
        if not isinstance(node, dict):
            raise ConfigError(path, f"expected a mapping, got {type(node).__name__}")
        properties = {str(k): self._string(v, f"{path}.{k}") for k, v in node.items()}
        checks = {
            "application.sort.policy": (SORT_POLICIES, str.lower),
            "application.sort.priority": (("enabled", "disabled"), str.lower),
            "priority.policy": (("default", "fence"), str.lower),
            "preemption.policy": (("default", "fence", "disabled"), str.lower),
        }
        for key, (allowed, normal) in checks.items():
            if key in properties and normal(properties[key]) not in allowed:
                raise ConfigError(f"{path}.{key}", f"unknown value {properties[key]!r} (allowed: {', '.join(allowed)})")
        if "priority.offset" in properties:
            try:
                offset = int(properties["priority.offset"])
            except ValueError:
                raise ConfigError(f"{path}.priority.offset", f"not a whole number: {properties['priority.offset']!r}") from None
            if not -(2**31) <= offset < 2**31:
                raise ConfigError(f"{path}.priority.offset", "out of the int32 range")
        for key in ("preemption.delay", "quota.preemption.delay", "application.unschedasks.backoff.delay"):
            if key in properties and not _DURATION.match(properties[key]):
                raise ConfigError(f"{path}.{key}", f"not a duration such as 30s or 1m: {properties[key]!r}")
        return MappingProxyType(properties)

    # Partition.
    def partition(self, node: Any, path: str) -> PartitionConfig:
        node = self._mapping(node, path, {"name", "queues", "placementrules", "limits", "preemption",
                                          "nodesortpolicy", "usergroupresolver"})
        name = self._string(node.get("name"), f"{path}.name", required=True)
        if not QUEUE_NAME.match(name) or "." in name:
            raise ConfigError(f"{path}.name", f"invalid partition name {name!r}")
        root = self._root(node.get("queues"), path)
        rules = tuple(self.rule(r, f"{path}.placementrules[{i}]")
                      for i, r in enumerate(self._list(node.get("placementrules"), f"{path}.placementrules")))
        limits = self._limits(node.get("limits"), f"{path}.limits", root.resources.max if root else None)
        preemption = self._mapping(node.get("preemption"), f"{path}.preemption", {"enabled", "quotapreemptionenabled"})
        policy = self._mapping(node.get("nodesortpolicy"), f"{path}.nodesortpolicy", {"type", "resourceweights"})
        policy_type = self._string(policy.get("type"), f"{path}.nodesortpolicy.type") or "fair"
        if policy_type.lower() not in NODE_SORT_POLICIES:
            raise ConfigError(f"{path}.nodesortpolicy.type",
                              f"unknown node sort policy {policy_type!r} (allowed: {', '.join(NODE_SORT_POLICIES)})")
        weights = self._weights(policy.get("resourceweights"), f"{path}.nodesortpolicy.resourceweights")
        resolver = self._mapping(node.get("usergroupresolver"), f"{path}.usergroupresolver", {"type"})
        resolver_type = self._string(resolver.get("type"), f"{path}.usergroupresolver.type")
        if resolver_type not in ("", "os", "ldap", "test"):
            raise ConfigError(f"{path}.usergroupresolver.type", f"unknown resolver {resolver_type!r}")
        return PartitionConfig(
            name=name, root=root, placement_rules=rules, limits=limits,
            preemption=PreemptionConfig(self._bool(preemption.get("enabled"), f"{path}.preemption.enabled", True),
                                        self._bool(preemption.get("quotapreemptionenabled"),
                                                   f"{path}.preemption.quotapreemptionenabled", False)),
            node_sort_policy=NodeSortPolicyConfig(policy_type.lower(), weights),
            user_group_resolver=resolver_type)

    def _weights(self, node: Any, path: str) -> Mapping[str, float]:
        if node is None:
            return DEFAULT_WEIGHTS
        if not isinstance(node, dict) or not node:
            raise ConfigError(path, "expected a non-empty mapping of resource name to weight")
        weights = {}
        for name, weight in node.items():
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
                raise ConfigError(f"{path}.{name}", f"weight must be a number >= 0, got {weight!r}")
            weights[str(name)] = float(weight)
        if not any(weights.values()):
            raise ConfigError(path, "at least one weight must be above zero")
        return MappingProxyType(weights)

    # Queues.
    def _root(self, node: Any, path: str) -> QueueConfig:
        queues = self._list(node, f"{path}.queues")
        if len(queues) == 1 and isinstance(queues[0], dict) and str(queues[0].get("name", "")).lower() == "root":
            root = replace(self.queue(queues[0], f"{path}.queues.root", parent=None), parent=True)
        else:  # no root given: the listed queues go under an implicit root that admits everyone
            children = tuple(self.queue(q, f"{path}.queues[{i}]", parent=None) for i, q in enumerate(queues))
            root = QueueConfig(name="root", parent=True, submit_acl="*", queues=children)
            self._check_children(root, f"{path}.queues.root")
        if root.resources.max is not None or root.resources.guaranteed is not None:
            raise ConfigError(f"{path}.queues.root", "the root queue may not set resources: it has the whole cluster")
        return root

    def queue(self, node: Any, path: str, parent: QueueConfig | None) -> QueueConfig:
        node = self._mapping(node, path, {"name", "parent", "resources", "maxapplications", "properties",
                                          "adminacl", "submitacl", "childtemplate", "queues", "limits"})
        name = self._string(node.get("name"), f"{path}.name", required=True)
        if not QUEUE_NAME.match(name):
            raise ConfigError(path, f"invalid queue name {name!r}: 1 to 64 of a-z A-Z 0-9 _ : # / @ -, no dots")
        if name.lower() == "root" and not path.endswith(".queues.root"):
            raise ConfigError(path, "the name root is reserved for the top queue")
        resources = self._resources(node.get("resources"), f"{path}.resources")
        template = None
        if node.get("childtemplate") is not None:
            tnode = self._mapping(node["childtemplate"], f"{path}.childtemplate",
                                  {"maxapplications", "properties", "resources"})
            template = ChildTemplate(self._count(tnode.get("maxapplications"), f"{path}.childtemplate.maxapplications"),
                                     self._properties(tnode.get("properties"), f"{path}.childtemplate.properties"),
                                     self._resources(tnode.get("resources"), f"{path}.childtemplate.resources"))
        children_nodes = self._list(node.get("queues"), f"{path}.queues")
        queue = QueueConfig(
            name=name,
            parent=self._bool(node.get("parent"), f"{path}.parent", False) or bool(children_nodes),
            resources=resources,
            max_applications=self._count(node.get("maxapplications"), f"{path}.maxapplications"),
            properties=self._properties(node.get("properties"), f"{path}.properties"),
            admin_acl=self._acl(node.get("adminacl"), f"{path}.adminacl"),
            submit_acl=self._acl(node.get("submitacl"), f"{path}.submitacl"),
            child_template=template,
            limits=self._limits(node.get("limits"), f"{path}.limits", resources.max))
        children = []
        for i, child in enumerate(children_nodes):
            child_name = child.get("name") if isinstance(child, dict) else None
            child_path = f"{path}.queues.{child_name}" if isinstance(child_name, str) and child_name else f"{path}.queues[{i}]"
            children.append(self.queue(child, child_path, queue))
        queue = replace(queue, queues=tuple(children))
        self._check_children(queue, path)
        return queue

    def _check_children(self, queue: QueueConfig, path: str) -> None:
        seen: set[str] = set()
        guaranteed_sum: dict[str, int] = {}
        for child in queue.queues:
            child_path = f"{path}.queues.{child.name}"
            if child.name.lower() in seen:
                raise ConfigError(child_path, f"duplicate queue name {child.name!r}")
            seen.add(child.name.lower())
            if queue.resources.max is not None and child.resources.max is not None:
                for name, (value, limit) in child.resources.max.exceeding(queue.resources.max).items():
                    raise ConfigError(child_path, f"max {_show(name, value)} exceeds parent max {_show(name, limit)}")
            if queue.max_applications and child.max_applications and child.max_applications > queue.max_applications:
                raise ConfigError(child_path, f"maxapplications {child.max_applications} exceeds parent "
                                              f"maxapplications {queue.max_applications}")
            for name, value in (child.resources.guaranteed or {}).items():
                guaranteed_sum[name] = guaranteed_sum.get(name, 0) + value
        if queue.resources.guaranteed is not None:
            for name, (value, limit) in Resource(guaranteed_sum).exceeding(queue.resources.guaranteed).items():
                raise ConfigError(path, f"sum of child guaranteed {_show(name, value)} exceeds guaranteed "
                                        f"{_show(name, limit)}")
        if queue.resources.max is not None:
            for name, (value, limit) in Resource(guaranteed_sum).exceeding(queue.resources.max).items():
                raise ConfigError(path, f"sum of child guaranteed {_show(name, value)} exceeds max {_show(name, limit)}")

    def _acl(self, node: Any, path: str) -> str | None:
        if node is None:
            return None
        text = self._string(node, path)
        parts = text.split(" ")
        if text.strip() and text.strip() != "*" and len([p for p in parts if p]) > 2:
            raise ConfigError(path, f"an ACL is 'users groups' (comma-separated lists, one space between): {text!r}")
        return text

    def _limits(self, node: Any, path: str, queue_max: Resource | None) -> tuple[LimitConfig, ...]:
        limits = []
        for i, item in enumerate(self._list(node, path)):
            item_path = f"{path}[{i}]"
            item = self._mapping(item, item_path, {"limit", "users", "groups", "maxresources", "maxapplications"})
            users = self._strings(item.get("users"), f"{item_path}.users")
            groups = self._strings(item.get("groups"), f"{item_path}.groups")
            if not users and not groups:
                raise ConfigError(item_path, "a limit needs users or groups")
            max_resources = self._resource(item.get("maxresources"), f"{item_path}.maxresources")
            max_apps = self._count(item.get("maxapplications"), f"{item_path}.maxapplications")
            if max_apps == 0:
                raise ConfigError(f"{item_path}.maxapplications", "must be above zero when set")
            if max_resources is None and max_apps is None:
                raise ConfigError(item_path, "a limit needs maxresources or maxapplications")
            if max_resources is not None and max_resources.is_zero():
                raise ConfigError(f"{item_path}.maxresources", "may not be all zero")
            if max_resources is not None and queue_max is not None:
                for name, (value, limit) in max_resources.exceeding(queue_max).items():
                    raise ConfigError(f"{item_path}.maxresources",
                                      f"{_show(name, value)} exceeds the queue max {_show(name, limit)}")
            limits.append(LimitConfig(self._string(item.get("limit"), f"{item_path}.limit"), users, groups,
                                      max_resources, max_apps))
        named_groups = any(g != "*" for limit in limits for g in limit.groups)
        if any("*" in limit.groups for limit in limits) and not named_groups:
            raise ConfigError(path, "a wildcard group limit needs a limit for a named group beside it")
        return tuple(limits)

    # Placement rules.
    def rule(self, node: Any, path: str) -> PlacementRuleConfig:
        node = self._mapping(node, path, {"name", "create", "parent", "filter", "value"})
        name = self._string(node.get("name"), f"{path}.name", required=True).lower()
        if name not in RULE_NAMES:
            raise ConfigError(f"{path}.name", f"unknown placement rule {name!r} (allowed: {', '.join(RULE_NAMES)})")
        value = self._string(node.get("value"), f"{path}.value")
        if name in ("tag", "fixed") and not value:
            raise ConfigError(f"{path}.value", f"the {name} rule needs a value")
        if name == "fixed":
            for part in value.split(".")[1 if value.lower().startswith("root.") else 0:]:
                if not QUEUE_NAME.match(part):
                    raise ConfigError(f"{path}.value", f"invalid queue name {part!r} in {value!r}")
        parent = self.rule(node["parent"], f"{path}.parent") if node.get("parent") is not None else None
        rule_filter = None
        if node.get("filter") is not None:
            fnode = self._mapping(node["filter"], f"{path}.filter", {"type", "users", "groups"})
            ftype = (self._string(fnode.get("type"), f"{path}.filter.type") or "allow").lower()
            if ftype not in ("allow", "deny"):
                raise ConfigError(f"{path}.filter.type", f"unknown filter type {ftype!r} (allowed: allow, deny)")
            users = self._strings(fnode.get("users"), f"{path}.filter.users")
            groups = self._strings(fnode.get("groups"), f"{path}.filter.groups")
            for key, entries in (("users", users), ("groups", groups)):
                for entry in entries:
                    try:
                        re.compile(entry)
                    except re.error as error:
                        raise ConfigError(f"{path}.filter.{key}", f"invalid regular expression {entry!r}: {error}") from None
            rule_filter = FilterConfig(ftype, users, groups)
        return PlacementRuleConfig(name, self._bool(node.get("create"), f"{path}.create", False), value, parent,
                                   rule_filter)


def _show(name: str, value: int) -> str:
    return f"{name} {format_quantity(name, value)}"
