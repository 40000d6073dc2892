"""A gang as its pods declare it: task groups and the scheduling policy parameters.

``yunikorn.apache.org/task-groups`` is a JSON list of task groups (``name``, ``minMember``,
``minResource`` and what the group's placeholders carry: ``nodeSelector``, ``tolerations``,
``affinity``, ``topologySpreadConstraints``, ``labels``, ``annotations``);
``yunikorn.apache.org/schedulingPolicyParameters`` reads ``placeholderTimeoutInSeconds=N
gangSchedulingStyle=Soft|Hard``. Reading never raises: what is wrong comes back as problems, each
naming the field, and a task groups annotation with any problem gives no gang at all (the application
is scheduled without one, as upstream), so no placeholder is ever made from half a declaration.
"""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from dataclasses import dataclass

from si.constants import PODS
from si.quantity import QuantityError, from_kubernetes
from si.resources import Resource

SOFT, HARD = "Soft", "Hard"
DEFAULT_TIMEOUT = 15 * 60.0
_OPTIONAL_MAPS = ("nodeSelector", "labels", "annotations")


@dataclass(frozen=True, slots=True)
class TaskGroup:
    """One task group. ``min_resource`` is one member's, in SI units, with its ``pods`` slot; the
    Kubernetes parts are kept as the pod spec spells them, for the placeholders' pods."""

    name: str
    min_member: int
    min_resource: Resource
    requests: Mapping[str, str]
    node_selector: Mapping[str, str]
    tolerations: tuple
    affinity: Mapping | None
    topology_spread: tuple
    labels: Mapping[str, str]
    annotations: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Gang:
    groups: tuple[TaskGroup, ...]
    timeout: float = DEFAULT_TIMEOUT  # seconds the placeholders may wait for the whole gang
    style: str = SOFT

    @property
    def size(self) -> int:
        """How many placeholders the gang has."""
        return sum(g.min_member for g in self.groups)

    def group(self, name: str) -> TaskGroup | None:
        return next((g for g in self.groups if g.name == name), None)

    @property
    def placeholder_ask(self) -> Resource:
        """All the placeholders' room together: what the application's queue must be able to hold."""
        total = Resource()
        for group in self.groups:
            total = total + group.min_resource.multiply(group.min_member)
        return total


def read_task_groups(text: str) -> tuple[tuple[TaskGroup, ...], list[str]]:
    """The task groups of the annotation, or none and the problems found."""
    try:
        document = json.loads(text)
    except ValueError as error:
        return (), [f"task groups are not valid JSON: {error}"]
    if not isinstance(document, list):
        return (), ["task groups must be a JSON list"]
    groups, problems, names = [], [], set()
    for position, item in enumerate(document):
        group = _task_group(item, position, problems)
        if group is None:
            continue
        if group.name in names:
            problems.append(f"task group {group.name!r} is declared twice")
        names.add(group.name)
        groups.append(group)
    return (tuple(groups), []) if not problems else ((), problems)


def _task_group(item, position: int, problems: list[str]) -> TaskGroup | None:
    if not isinstance(item, dict):
        problems.append(f"task group #{position} is not a JSON object")
        return None
    name = item.get("name")
    if not isinstance(name, str) or not name:
        problems.append(f"task group #{position} has no name")
        return None
    where = f"task group {name!r}"
    min_member = item.get("minMember", 0)
    if isinstance(min_member, bool) or not isinstance(min_member, int) or min_member < 0:
        problems.append(f"{where}: minMember must be a whole number of at least 0, not {min_member!r}")
        return None
    requests = item.get("minResource") or {}
    try:
        if not isinstance(requests, dict):
            raise QuantityError("must be a map of resource names to quantities")
        resource = Resource(from_kubernetes(requests))
        if resource.has_negative():
            raise QuantityError(f"negative quantities {resource.negative_components()}")
    except (QuantityError, TypeError) as error:
        problems.append(f"{where}: minResource {error}")
        return None
    maps = {}
    for key in _OPTIONAL_MAPS:
        value = item.get(key) or {}
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            problems.append(f"{where}: {key} must be a map of strings")
            return None
        maps[key] = types.MappingProxyType(value)
    tolerations, spread = item.get("tolerations") or [], item.get("topologySpreadConstraints") or []
    affinity = item.get("affinity") or None
    if not isinstance(tolerations, list) or not isinstance(spread, list) or not isinstance(affinity, (dict, type(None))):
        problems.append(f"{where}: tolerations and topologySpreadConstraints must be lists, affinity an object")
        return None
    return TaskGroup(name, min_member, resource + {PODS: 1}, types.MappingProxyType(dict(requests)),
                     maps["nodeSelector"], tuple(tolerations), affinity, tuple(spread), maps["labels"],
                     maps["annotations"])


def read_policy(text: str) -> tuple[float, str, list[str]]:
    """Timeout (seconds) and style from ``schedulingPolicyParameters``; a bad value keeps its default."""
    timeout, style, problems = DEFAULT_TIMEOUT, SOFT, []
    for pair in text.split():
        key, _, value = pair.partition("=")
        if key == "placeholderTimeoutInSeconds":
            if value.isdigit() and int(value) > 0:
                timeout = float(value)
            else:
                problems.append(f"placeholderTimeoutInSeconds must be a whole number above 0, not {value!r}")
        elif key == "gangSchedulingStyle":
            if value in (SOFT, HARD):
                style = value
            else:
                problems.append(f"gangSchedulingStyle must be Soft or Hard, not {value!r}")
        else:
            problems.append(f"unknown scheduling policy parameter {key!r}")
    return timeout, style, problems


def read_gang(task_groups: str, policy: str) -> tuple[Gang | None, list[str]]:
    """The gang an application's first pod declares (``None`` without placeholders to make)."""
    if not task_groups:
        return None, []
    groups, problems = read_task_groups(task_groups)
    timeout, style, policy_problems = read_policy(policy)
    problems += policy_problems
    if not any(g.min_member for g in groups):
        return None, problems
    return Gang(groups, timeout, style), problems
