"""The simulator's inputs, parsed whole before anything runs: a trace (JSON lines) and a cluster (YAML).

Every problem is an :class:`InputError` naming the file, the line and the field, e.g.
``trace.jsonl:3: pods[0].cpu: quantity 'x' is malformed``.

A trace line is one application::

    {"submit": 0.0, "app": "a1", "queue": "root.a", "user": "u1", "groups": ["g"],
     "pods": [{"count": 4, "cpu": "1", "memory": "2Gi", "duration": 600, "priority": 0}],
     "taskGroups": [{"name": "tg", "minMember": 4, "minResource": {"cpu": "1", "memory": "2Gi"}}],
     "gangStyle": "Soft", "placeholderTimeout": 900}

``submit`` and ``duration`` are seconds from the trace's start; quantities are Kubernetes quantities.
A pod entry may name its ``taskGroup``, a ``nodeSelector`` (label -> value) and ``tolerations``
(``{"key", "operator", "value", "effect"}``) and its termination ``grace`` (seconds, default 30).
A cluster is ``nodes: [{count: 100, cpu: "16", memory: "64Gi", pods: 110, labels: {...},
taints: [{key, value, effect}]}]``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from si.quantity import QuantityError, from_kubernetes
from si.resources import Resource

SOFT, HARD = "Soft", "Hard"
DEFAULT_GRACE = 30.0  # seconds: Kubernetes' default terminationGracePeriodSeconds
DEFAULT_PLACEHOLDER_TIMEOUT = 900.0  # seconds: upstream's placeholderTimeoutInSeconds default
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_TRACE_KEYS = ("submit", "app", "queue", "user", "groups", "pods", "taskGroups", "gangStyle", "placeholderTimeout")
_POD_KEYS = ("count", "cpu", "memory", "duration", "priority", "taskGroup", "nodeSelector", "tolerations", "grace",
             "resources")
_GROUP_KEYS = ("name", "minMember", "minResource", "nodeSelector", "tolerations", "labels", "annotations",
               "affinity", "topologySpreadConstraints")
_NODE_KEYS = ("count", "cpu", "memory", "pods", "resources", "labels", "taints", "name")


class InputError(ValueError):
    """A malformed input: ``where`` names the file and line, ``field`` the value at fault."""

    def __init__(self, where: str, field_name: str, problem: str) -> None:
        self.where, self.field, self.problem = where, field_name, problem
        super().__init__(f"{where}: {field_name}: {problem}" if field_name else f"{where}: {problem}")


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class PodGroup:
    """``count`` identical pods of one application."""

    count: int
    resource: Resource
    duration: float
    priority: int = 0
    task_group: str = ""
    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    grace: float = DEFAULT_GRACE


@dataclass(frozen=True)
class TaskGroup:
    name: str
    min_member: int
    min_resource: Resource
    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True)
class TraceApp:
    submit: float
    app_id: str
    queue: str
    user: str
    groups: tuple[str, ...]
    pods: tuple[PodGroup, ...]
    task_groups: tuple[TaskGroup, ...] = ()
    gang_style: str = SOFT
    placeholder_timeout: float = DEFAULT_PLACEHOLDER_TIMEOUT
    line: int = 0

    @property
    def pod_count(self) -> int:
        return sum(p.count for p in self.pods)


@dataclass(frozen=True)
class NodeShape:
    count: int
    resource: Resource
    labels: tuple[tuple[str, str], ...] = ()
    taints: tuple[Taint, ...] = ()
    name: str = ""


@dataclass(frozen=True)
class Cluster:
    shapes: tuple[NodeShape, ...] = field(default_factory=tuple)

    @property
    def node_count(self) -> int:
        return sum(s.count for s in self.shapes)


# Field readers: each raises InputError naming ``path``.
class _Reader:
    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, path: str, problem: str):
        raise InputError(self.where, path, problem)

    def mapping(self, value: Any, path: str, allowed: tuple[str, ...]) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            self.fail(path, f"must be an object, not {type(value).__name__}")
        for key in value:
            if key not in allowed:
                self.fail(f"{path}.{key}" if path else str(key), f"unknown field (known: {', '.join(allowed)})")
        return value

    def string(self, value: Any, path: str, required: bool = False) -> str:
        if value is None and not required:
            return ""
        if not isinstance(value, str) or (required and not value):
            self.fail(path, "must be a non-empty string" if required else "must be a string")
        return value

    def number(self, value: Any, path: str, minimum: float = 0.0) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            self.fail(path, f"must be a number, not {value!r}")
        if value < minimum:
            self.fail(path, f"must be at least {minimum:g}, not {value!r}")
        return float(value)

    def integer(self, value: Any, path: str, minimum: int, maximum: int = 2**31 - 1) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"must be a whole number, not {value!r}")
        if not minimum <= value <= maximum:
            self.fail(path, f"must be between {minimum} and {maximum}, not {value}")
        return value

    def strings(self, value: Any, path: str) -> tuple[str, ...]:
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(path, "must be a list of strings")
        return tuple(value)

    def labels(self, value: Any, path: str) -> tuple[tuple[str, str], ...]:
        if value is None:
            return ()
        if not isinstance(value, Mapping):
            self.fail(path, "must be an object of label -> value")
        for key, label in value.items():
            if not isinstance(key, str) or not isinstance(label, str | int | float | bool):
                self.fail(f"{path}.{key}", "must be a string")
        return tuple(sorted((k, _label(v)) for k, v in value.items()))

    def resource(self, value: Mapping[str, Any], path: str, names: tuple[str, ...],
                 extra_key: str = "resources") -> Resource:
        quantities = {name: value[name] for name in names if value.get(name) is not None}
        extra = value.get(extra_key)
        if extra is not None:
            if not isinstance(extra, Mapping):
                self.fail(f"{path}.{extra_key}", "must be an object of resource -> quantity")
            quantities.update(extra)
        try:
            return Resource(from_kubernetes(quantities))
        except QuantityError as error:
            bad = next((n for n, q in quantities.items() if not _parses({n: q})), "")
            self.fail(f"{path}.{bad}" if path else bad, str(error))

    def tolerations(self, value: Any, path: str) -> tuple[Toleration, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            self.fail(path, "must be a list")
        result = []
        for i, item in enumerate(value):
            item = self.mapping(item, f"{path}[{i}]", ("key", "operator", "value", "effect", "tolerationSeconds"))
            operator = self.string(item.get("operator"), f"{path}[{i}].operator") or "Equal"
            if operator not in ("Equal", "Exists"):
                self.fail(f"{path}[{i}].operator", f"must be Equal or Exists, not {operator!r}")
            effect = self.string(item.get("effect"), f"{path}[{i}].effect")
            if effect and effect not in TAINT_EFFECTS:
                self.fail(f"{path}[{i}].effect", f"must be one of {', '.join(TAINT_EFFECTS)}, not {effect!r}")
            result.append(Toleration(self.string(item.get("key"), f"{path}[{i}].key"), operator,
                                     self.string(item.get("value"), f"{path}[{i}].value"), effect))
        return tuple(result)


def _label(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _parses(quantities: Mapping[str, Any]) -> bool:
    try:
        from_kubernetes(quantities)
    except QuantityError:
        return False
    return True


def parse_trace_line(text: str, where: str, line: int = 0) -> TraceApp:
    """One trace line as an application; ``where`` names it in errors (``file:line``)."""
    read = _Reader(where)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        read.fail("", f"not JSON: {error.msg} at column {error.colno}")
    raw = read.mapping(raw, "", _TRACE_KEYS)
    for required in ("submit", "app", "pods"):
        if required not in raw:
            read.fail(required, "is required")
    submit = read.number(raw["submit"], "submit")
    app_id = read.string(raw["app"], "app", required=True)
    groups = []
    for i, group in enumerate(raw.get("taskGroups") or ()):
        path = f"taskGroups[{i}]"
        group = read.mapping(group, path, _GROUP_KEYS)
        name = read.string(group.get("name"), f"{path}.name", required=True)
        if any(g.name == name for g in groups):
            read.fail(f"{path}.name", f"task group {name!r} is declared twice")
        min_resource = group.get("minResource") or {}
        if not isinstance(min_resource, Mapping):
            read.fail(f"{path}.minResource", "must be an object of resource -> quantity")
        groups.append(TaskGroup(name, read.integer(group.get("minMember"), f"{path}.minMember", 1),
                                read.resource({"resources": min_resource}, f"{path}.minResource", ()),
                                read.labels(group.get("nodeSelector"), f"{path}.nodeSelector"),
                                read.tolerations(group.get("tolerations"), f"{path}.tolerations")))
    if raw.get("taskGroups") is not None and not isinstance(raw["taskGroups"], list):
        read.fail("taskGroups", "must be a list")
    names = {g.name for g in groups}
    pods_raw = raw["pods"]
    if not isinstance(pods_raw, list) or not pods_raw:
        read.fail("pods", "must be a non-empty list")
    pods = []
    for i, pod in enumerate(pods_raw):
        path = f"pods[{i}]"
        pod = read.mapping(pod, path, _POD_KEYS)
        if "duration" not in pod:
            read.fail(f"{path}.duration", "is required")
        task_group = read.string(pod.get("taskGroup"), f"{path}.taskGroup")
        if task_group and task_group not in names:
            read.fail(f"{path}.taskGroup", f"names no task group of this application ({', '.join(sorted(names)) or 'none'})")
        resource = read.resource(pod, path, ("cpu", "memory"))
        if resource.is_zero():
            read.fail(path, "requests nothing: give cpu or memory")
        pods.append(PodGroup(read.integer(pod.get("count", 1), f"{path}.count", 1, 1_000_000), resource,
                             read.number(pod["duration"], f"{path}.duration"),
                             read.integer(pod.get("priority", 0), f"{path}.priority", -(2**31), 2**31 - 1),
                             task_group, read.labels(pod.get("nodeSelector"), f"{path}.nodeSelector"),
                             read.tolerations(pod.get("tolerations"), f"{path}.tolerations"),
                             read.number(pod.get("grace", DEFAULT_GRACE), f"{path}.grace")))
    style = read.string(raw.get("gangStyle"), "gangStyle") or SOFT
    if style not in (SOFT, HARD):
        read.fail("gangStyle", f"must be Soft or Hard, not {style!r}")
    timeout = read.number(raw.get("placeholderTimeout", DEFAULT_PLACEHOLDER_TIMEOUT), "placeholderTimeout")
    return TraceApp(submit, app_id, read.string(raw.get("queue"), "queue"),
                    read.string(raw.get("user"), "user") or "nobody", read.strings(raw.get("groups"), "groups"),
                    tuple(pods), tuple(groups), style, timeout, line)


def read_trace(path: str | Path) -> list[TraceApp]:
    """Every application of a trace file, ordered by submit time (ties: file order)."""
    path = Path(path)
    apps: list[TraceApp] = []
    seen: dict[str, int] = {}
    try:
        handle = path.open(encoding="utf-8")
    except OSError as error:
        raise InputError(str(path), "", f"cannot be read: {error.strerror}") from None
    with handle:
        for number, text in enumerate(handle, 1):
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            where = f"{path}:{number}"
            app = parse_trace_line(text, where, number)
            if app.app_id in seen:
                raise InputError(where, "app", f"{app.app_id!r} was already submitted on line {seen[app.app_id]}")
            seen[app.app_id] = number
            apps.append(app)
    if not apps:
        raise InputError(str(path), "", "holds no application")
    apps.sort(key=lambda a: a.submit)
    return apps


def write_trace(apps, path: str | Path) -> int:
    """Write applications (``TraceApp`` or already-shaped dicts) as trace lines; returns how many."""
    count = 0
    with Path(path).open("w", encoding="utf-8") as out:
        for app in apps:
            out.write(json.dumps(app if isinstance(app, Mapping) else trace_record(app), separators=(",", ":")))
            out.write("\n")
            count += 1
    return count


def trace_record(app: TraceApp) -> dict[str, Any]:
    """The trace line of ``app`` (the inverse of :func:`parse_trace_line`)."""
    record: dict[str, Any] = {"submit": app.submit, "app": app.app_id, "queue": app.queue, "user": app.user,
                              "groups": list(app.groups), "pods": [_pod_record(p) for p in app.pods]}
    if app.task_groups:
        record["taskGroups"] = [{"name": g.name, "minMember": g.min_member,
                                 "minResource": _quantities(g.min_resource)} for g in app.task_groups]
        record["gangStyle"] = app.gang_style
        record["placeholderTimeout"] = app.placeholder_timeout
    return record


def _pod_record(pod: PodGroup) -> dict[str, Any]:
    record: dict[str, Any] = {"count": pod.count, **_quantities(pod.resource), "duration": pod.duration,
                              "priority": pod.priority}
    if pod.task_group:
        record["taskGroup"] = pod.task_group
    if pod.node_selector:
        record["nodeSelector"] = dict(pod.node_selector)
    return record


def _quantities(resource: Resource) -> dict[str, str]:
    from si.quantity import format_quantity
    return {("cpu" if name == "vcore" else name): format_quantity(name, value) for name, value in resource.items()}


def read_cluster(path: str | Path) -> Cluster:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise InputError(str(path), "", f"cannot be read: {error.strerror}") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise InputError(where, "", f"not YAML: {getattr(error, 'problem', error)}") from None
    return parse_cluster(raw, str(path), _node_lines(text))


def _node_lines(text: str) -> list[int]:
    """The line of each entry of ``nodes`` (for errors), best effort."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return []
    if not isinstance(root, yaml.MappingNode):
        return []
    for key, value in root.value:
        if key.value == "nodes" and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return []


def parse_cluster(raw: Any, where: str, lines: list[int] | None = None) -> Cluster:
    lines = lines or []
    read = _Reader(where)
    raw = read.mapping(raw if raw is not None else {}, "", ("nodes",))
    nodes = raw.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        read.fail("nodes", "must be a non-empty list of node shapes")
    shapes = []
    for i, node in enumerate(nodes):
        read = _Reader(f"{where}:{lines[i]}" if i < len(lines) else where)
        path = f"nodes[{i}]"
        node = read.mapping(node, path, _NODE_KEYS)
        resource = read.resource({**node, "pods": node.get("pods", 110)}, path, ("cpu", "memory", "pods"))
        if not resource.get("vcore") and not resource.get("memory"):
            read.fail(path, "has no capacity: give cpu and memory")
        taints = []
        for j, taint in enumerate(node.get("taints") or ()):
            tpath = f"{path}.taints[{j}]"
            taint = read.mapping(taint, tpath, ("key", "value", "effect"))
            effect = read.string(taint.get("effect"), f"{tpath}.effect", required=True)
            if effect not in TAINT_EFFECTS:
                read.fail(f"{tpath}.effect", f"must be one of {', '.join(TAINT_EFFECTS)}, not {effect!r}")
            taints.append(Taint(read.string(taint.get("key"), f"{tpath}.key", required=True),
                                _label(taint.get("value", "")), effect))
        if node.get("taints") is not None and not isinstance(node["taints"], list):
            read.fail(f"{path}.taints", "must be a list")
        shapes.append(NodeShape(read.integer(node.get("count", 1), f"{path}.count", 1, 1_000_000), resource,
                                read.labels(node.get("labels"), f"{path}.labels"), tuple(taints),
                                read.string(node.get("name"), f"{path}.name")))
    return Cluster(tuple(shapes))
