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

import types
from collections.abc import Mapping

from actors.base import record
from si import gojson
from si.bounded import shown
from si.constants import PODS
from si.gonumber import INT32_MAX, INT64_MAX, in_range, parse_int
from si.quantity import QuantityError, from_kubernetes
from si.resources import Resource
from si.states import GangStyle

SOFT, HARD = GangStyle.SOFT, GangStyle.HARD
DEFAULT_TIMEOUT = 15 * 60
_OPTIONAL_MAPS = ("nodeSelector", "labels", "annotations")
# Upstream's TaskGroup struct: its fields have no json tags, so Go matches these names case-insensitively.
_FIELDS = ("name", "minMember", "minResource", *_OPTIONAL_MAPS, "tolerations", "affinity", "topologySpreadConstraints")
# The Kubernetes types of a task group's tolerations, affinity and topology spread (k8s.io/api/core/v1):
# Go decodes them by their json tags, as case-insensitively as the group's own fields.
_S, _I32 = gojson.STRING, gojson.INT32
_TOLERATION = {"key": _S, "operator": _S, "value": _S, "effect": _S, "tolerationSeconds": gojson.INT64}
_LABEL_SELECTOR = {"matchLabels": gojson.STRING_MAP, "matchExpressions": [{"key": _S, "operator": _S, "values": [_S]}]}
_NODE_TERM = {kind: [{"key": _S, "operator": _S, "values": [_S]}] for kind in ("matchExpressions", "matchFields")}
_POD_TERM = {"labelSelector": _LABEL_SELECTOR, "namespaces": [_S], "topologyKey": _S,
             "namespaceSelector": _LABEL_SELECTOR, "matchLabelKeys": [_S], "mismatchLabelKeys": [_S]}
_POD_AFFINITY = {"requiredDuringSchedulingIgnoredDuringExecution": [_POD_TERM],
                 "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": _I32, "podAffinityTerm": _POD_TERM}]}
_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [_NODE_TERM]},
                              "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": _I32,
                                                                                   "preference": _NODE_TERM}]},
             "podAffinity": _POD_AFFINITY, "podAntiAffinity": _POD_AFFINITY}
_SPREAD = {"maxSkew": _I32, "topologyKey": _S, "whenUnsatisfiable": _S, "labelSelector": _LABEL_SELECTOR,
           "minDomains": _I32, "nodeAffinityPolicy": _S, "nodeTaintsPolicy": _S, "matchLabelKeys": [_S]}
# The SI carries the timeout in int64 milliseconds.
MAX_TIMEOUT = INT64_MAX // 1000


@record
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


@record
class Gang:
    groups: tuple[TaskGroup, ...]
    timeout: int = DEFAULT_TIMEOUT  # seconds the placeholders may wait for the whole gang
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
    """The task groups of the annotation, or none and the problems found. Read as upstream's Go
    decodes it (``null`` is no task groups; keys match ``Name``, ``MinMember``... case-insensitively)."""
    try:
        document = gojson.loads(text, "task groups")
        if document is None:
            return (), []
        document = gojson.go_list(document, "task groups")
    except gojson.JSONError as error:
        return (), [str(error)]
    groups, problems, names = [], [], set()
    for position, item in enumerate(document):
        try:
            group = _task_group(item, position)
        except gojson.JSONError as error:
            problems.append(str(error))
            continue
        if group.name in names:
            problems.append(f"task group {group.name!r} is declared twice")
        names.add(group.name)
        groups.append(group)
    if not problems:
        problems = _overflowing(groups)
    return (tuple(groups), []) if not problems else ((), problems)


def _task_group(item: object, position: int) -> TaskGroup:
    fields = gojson.go_fields(item, _FIELDS, f"task group #{position}")
    name = fields.get("name", "")
    if not isinstance(name, str) or not name:
        raise gojson.JSONError(f"task group #{position} has no name")
    where = f"task group {shown(name, 60)}"
    min_member = fields.get("minMember", 0)
    if not in_range(min_member, 0, INT32_MAX):
        raise gojson.JSONError(f"{where}: minMember must be a whole number of at least 0 and at most {INT32_MAX}, "
                               f"not {shown(min_member)}")
    requests = {k: "0" if v is None else v
                for k, v in gojson.go_object(fields.get("minResource", {}), f"{where}: minResource").items()}
    try:
        resource = Resource(from_kubernetes(requests))
    except QuantityError as error:
        raise gojson.JSONError(f"{where}: minResource {error}") from None
    maps = {key: types.MappingProxyType(gojson.go_string_map(fields.get(key, {}), f"{where}: {key}"))
            for key in _OPTIONAL_MAPS}
    tolerations = gojson.go_decode(fields.get("tolerations", []), [_TOLERATION], f"{where}: tolerations")
    spread = gojson.go_decode(fields.get("topologySpreadConstraints", []), [_SPREAD],
                              f"{where}: topologySpreadConstraints")
    affinity = gojson.go_decode(fields.get("affinity", {}), _AFFINITY, f"{where}: affinity") or None
    return TaskGroup(name, min_member, resource + {PODS: 1}, types.MappingProxyType(requests),
                     maps["nodeSelector"], tuple(tolerations), affinity, tuple(spread), maps["labels"],
                     maps["annotations"])


def _overflowing(groups: list[TaskGroup]) -> list[str]:
    """The resources whose placeholder ask (every member of every group) an SI int64 cannot carry."""
    totals: dict[str, int] = {}
    for group in groups:
        for name, value in group.min_resource.items():
            totals[name] = totals.get(name, 0) + value * group.min_member
    return [f"the placeholders of all task groups ask more {name} than an int64 holds"
            for name, total in sorted(totals.items()) if total > INT64_MAX]


def read_policy(text: str) -> tuple[int, str, list[str]]:
    """Timeout (seconds) and style from ``schedulingPolicyParameters``; a bad value keeps its default."""
    timeout, style, problems = DEFAULT_TIMEOUT, SOFT, []
    for pair in text.split():
        key, _, value = pair.partition("=")
        if key == "placeholderTimeoutInSeconds":
            try:
                seconds = parse_int(value)
            except ValueError:
                seconds = 0
            if 0 < seconds <= MAX_TIMEOUT:
                timeout = seconds
            else:
                problems.append(f"placeholderTimeoutInSeconds must be a whole number of 1 to {MAX_TIMEOUT}, "
                                f"not {shown(value)}")
        elif key == "gangSchedulingStyle":
            if value in (SOFT, HARD):
                style = value
            else:
                problems.append(f"gangSchedulingStyle must be Soft or Hard, not {shown(value)}")
        else:
            problems.append(f"unknown scheduling policy parameter {shown(key)}")
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
