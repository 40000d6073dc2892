"""``/ws/v1/config``: upstream's ``dao.ConfigDAOInfo``, the validated ``configs.SchedulerConfig`` with the
extra configuration, as yunikorn-core marshals it.

JSON (encoding/json) names each field as the Go struct does and leaves out empty strings, numbers,
booleans, lists and maps marked ``omitempty``, but always writes a nested struct (``Resources``,
``Filter``, ``ChildTemplate``, ``Preemption``, ``NodeSortPolicy``, ``UserGroupResolver``). YAML
(go-yaml) lowercases the field names and also leaves out a nested struct that is empty. The values
are the configuration's own text (a quantity stays ``200M``), after the validation's changes: a
root queue inserted when missing and always a parent, partition limits copied to a root without
limits, an unnamed partition named ``default``.
"""

from __future__ import annotations

from typing import Any

DEADLOCK_TIMEOUT_SECONDS = 60  # upstream's default; this scheduler has no lock tracking
ALWAYS, OMIT, STRUCT = "always", "omitempty", "struct"


class _Go:
    """Writes Go struct fields in one of the two encodings."""

    def __init__(self, yaml: bool) -> None:
        self.yaml = yaml

    def struct(self, fields: list[tuple[str, Any, str]]) -> dict:
        """``fields``: (Go name, value, how): ``ALWAYS`` written, ``OMIT`` left out when empty, ``STRUCT``
        a nested struct with omitempty (JSON writes it always, YAML not when empty)."""
        out = {}
        for name, value, how in fields:
            if (how == OMIT and _empty(value)) or (how == STRUCT and self.yaml and _zero(value)):
                continue
            out[name.lower() if self.yaml else name] = value
        return out


def _empty(value: Any) -> bool:
    return value is None or value is False or value == 0 or value == "" or value == [] or value == {}


def _zero(struct: dict) -> bool:
    """go-yaml's omitempty on a struct: every field of it is its zero value."""
    return all(_zero(v) if isinstance(v, dict) else v is None or v == "" or v == [] or (v == 0 and v is not False)
               for v in struct.values())  # a *bool set to false is not zero


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _strings(value: Any) -> dict[str, str]:
    return {str(k): _text(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _names(value: Any) -> list[str]:
    return [_text(v) for v in _list(value)]


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _node(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _resources(go: _Go, node: Any) -> dict:
    node = _node(node)
    return go.struct([("Guaranteed", _strings(node.get("guaranteed")), OMIT), ("Max", _strings(node.get("max")), OMIT)])


def _limit(go: _Go, node: Any) -> dict:
    node = _node(node)
    return go.struct([("Limit", _text(node.get("limit")), ALWAYS), ("Users", _names(node.get("users")), OMIT),
                      ("Groups", _names(node.get("groups")), OMIT),
                      ("MaxResources", _strings(node.get("maxresources")), OMIT),
                      ("MaxApplications", _count(node.get("maxapplications")), OMIT)])


def _queue(go: _Go, node: dict) -> dict:
    template = _node(node.get("childtemplate"))
    return go.struct([
        ("Name", _text(node.get("name")), ALWAYS), ("Parent", node.get("parent") is True, OMIT),
        ("Resources", _resources(go, node.get("resources")), STRUCT),
        ("MaxApplications", _count(node.get("maxapplications")), OMIT),
        ("Properties", _strings(node.get("properties")), OMIT),
        ("AdminACL", _text(node.get("adminacl")), OMIT), ("SubmitACL", _text(node.get("submitacl")), OMIT),
        ("ChildTemplate", go.struct([("MaxApplications", _count(template.get("maxapplications")), OMIT),
                                     ("Properties", _strings(template.get("properties")), OMIT),
                                     ("Resources", _resources(go, template.get("resources")), STRUCT)]), STRUCT),
        ("Queues", [_queue(go, _node(q)) for q in _list(node.get("queues"))], OMIT),
        ("Limits", [_limit(go, limit) for limit in _list(node.get("limits"))], OMIT)])


def _rule(go: _Go, node: Any) -> dict:
    node = _node(node)
    found = _node(node.get("filter"))
    parent = node.get("parent")
    return go.struct([
        ("Name", _text(node.get("name")), ALWAYS), ("Create", node.get("create") is True, OMIT),
        ("Filter", go.struct([("Type", _text(found.get("type")), ALWAYS), ("Users", _names(found.get("users")), OMIT),
                              ("Groups", _names(found.get("groups")), OMIT)]), STRUCT),
        ("Parent", _rule(go, parent) if isinstance(parent, dict) else None, OMIT),
        ("Value", _text(node.get("value")), OMIT)])


def _root(partition: dict) -> dict:
    """The partition's root queue as validation leaves it."""
    queues = [_node(q) for q in _list(partition.get("queues"))]
    if len(queues) == 1 and _text(queues[0].get("name")).lower() == "root":
        root = {**queues[0], "parent": True}
    else:
        root = {"name": "root", "parent": True, "queues": queues}
    if partition.get("limits") and not root.get("limits"):
        root["limits"] = partition["limits"]
    return root


def _partition(go: _Go, node: dict) -> dict:
    preemption, policy = _node(node.get("preemption")), _node(node.get("nodesortpolicy"))
    name = _text(node.get("name"))
    weights = policy.get("resourceweights")
    return go.struct([
        ("Name", "default" if not name or name.lower() == "default" else name, ALWAYS),
        ("Queues", [_queue(go, _root(node))], ALWAYS),
        ("PlacementRules", [_rule(go, r) for r in _list(node.get("placementrules"))], OMIT),
        ("Limits", [_limit(go, limit) for limit in _list(node.get("limits"))], OMIT),
        ("Preemption", go.struct([(key, preemption[key.lower()], ALWAYS) for key in ("Enabled", "QuotaPreemptionEnabled")
                                  if isinstance(preemption.get(key.lower()), bool)]), STRUCT),  # *bool: set or absent
        ("NodeSortPolicy", go.struct([("Type", _text(policy.get("type")), ALWAYS),
                                      ("ResourceWeights", dict(weights) if isinstance(weights, dict) else {}, OMIT)]),
         STRUCT),
        ("UserGroupResolver", {"type": _text(_node(node.get("usergroupresolver")).get("type"))}
         if _node(node.get("usergroupresolver")).get("type") else {}, STRUCT)])


def config_dao(document: Any, checksum: str, extra: dict[str, str], yaml: bool) -> dict:
    """The ConfigDAOInfo of the configuration ``document`` (its parsed YAML) in JSON's or YAML's shape."""
    go = _Go(yaml)
    partitions = [_partition(go, _node(p)) for p in _list(_node(document).get("partitions"))]
    return go.struct([("Partitions", partitions, ALWAYS), ("Checksum", checksum, OMIT), ("Extra", extra, OMIT),
                      ("DeadlockDetectionEnabled", False, ALWAYS),
                      ("DeadlockTimeoutSeconds", DEADLOCK_TIMEOUT_SECONDS, ALWAYS)])
