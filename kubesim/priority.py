"""The Priority admission plugin of kube-apiserver, and the int32 decoding of priorities.

A new pod's ``spec.priority`` and ``spec.preemptionPolicy`` come from the PriorityClass it names, or
from the ``globalDefault`` class when it names none (the lowest-valued one, should several claim it),
or are 0 and ``PreemptLowerPriority``. A pod naming a missing class, or setting a priority or policy
other than the one computed, is refused as Forbidden with kube-apiserver's messages; so is a second
``globalDefault`` class. A priority that is not an int32 fails decoding, as the API server's JSON
decoder refuses it (400).
"""

from __future__ import annotations

from kubesim import errors
from kubesim.resources import BY_PATH, POD, Kind
from kubesim.store import Event, Store

PRIORITY_CLASS = BY_PATH[("scheduling.k8s.io", "v1", "priorityclasses")]
PREEMPT_LOWER = "PreemptLowerPriority"
INT32 = (-(2**31), 2**31 - 1)
# The classes every kube-apiserver creates at start.
SYSTEM_CLASSES = (("system-node-critical", 2000001000, "Used for system critical pods that must not be moved "
                   "from their current node."),
                  ("system-cluster-critical", 2000000000, "Used for system critical pods that must run in the "
                   "cluster, but can be moved to another node if necessary."))


def system_class(name: str, value: int, description: str) -> dict:
    return {"metadata": {"name": name}, "value": value, "description": description, "globalDefault": False,
            "preemptionPolicy": PREEMPT_LOWER}


def check_int32(kind: Kind, value, struct: str, field: str) -> None:
    """A JSON value a Go int32 field would refuse: 400 with the Go decoder's words."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and INT32[0] <= value <= INT32[1]):
        return
    raise undecodable(kind, value, f"{struct}.{field}", "int32")


def undecodable(kind: Kind, value, struct_field: str, go_type: str) -> errors.ApiError:
    """The 400 kube-apiserver answers when its JSON decoder cannot put ``value`` into a Go field."""
    if isinstance(value, bool):
        shown = "bool"
    elif isinstance(value, int | float):
        shown = f"number {value}"
    else:
        shown = {str: "string", list: "array", dict: "object"}.get(type(value), "value")
    return errors.bad_request(f'{kind.kind} in version "{kind.version}" cannot be handled as a {kind.kind}: json: '
                              f"cannot unmarshal {shown} into Go struct field {struct_field} of type {go_type}")


def forbidden(kind: Kind, name: str, why: str) -> errors.ApiError:
    details = {"name": name, "kind": kind.plural}
    if kind.group:
        details["group"] = kind.group
    qualified = f"{kind.plural}.{kind.group}" if kind.group else kind.plural
    return errors.ApiError(403, "Forbidden", f'{qualified} "{name}" is forbidden: {why}', details)


class Defaults:
    """The ``globalDefault`` classes, kept from the store's changes: listing the store for them would read
    every object it holds, at each pod's creation."""

    def __init__(self, store: Store) -> None:
        self.by_name: dict[str, dict] = {}
        with store.lock:
            for priority_class in store.list(PRIORITY_CLASS)[0]:
                self._keep(priority_class, deleted=False)
            store.listeners.append(self._on_event)

    def _keep(self, priority_class: dict, deleted: bool) -> None:
        name = priority_class["metadata"]["name"]
        if priority_class.get("globalDefault") is True and not deleted:
            self.by_name[name] = priority_class
        else:
            self.by_name.pop(name, None)

    def _on_event(self, event: Event) -> None:
        """Called under the store lock."""
        if event.kind is PRIORITY_CLASS:
            self._keep(event.new, event.type == "DELETED")

    def current(self) -> dict | None:
        """The default class (the lowest-valued one, should several claim it), as the plugin picks it."""
        return min(self.by_name.values(), key=lambda pc: pc.get("value", 0), default=None)


def admit_pod(store: Store, defaults: Defaults, pod: dict) -> None:
    """Set a new pod's priority and preemption policy from its class (under the store lock)."""
    meta, spec = pod["metadata"], pod["spec"]
    name = meta.get("name") or meta.get("generateName") or "Unknown"
    class_name = spec.get("priorityClassName")
    if class_name:
        found = store.find(PRIORITY_CLASS, "", class_name) if isinstance(class_name, str) else None
        if found is None:
            raise forbidden(POD, name, f"no PriorityClass with name {class_name} was found")
        priority, policy = found.get("value", 0), found.get("preemptionPolicy", PREEMPT_LOWER)
    else:
        found = defaults.current()
        if found is not None:
            spec["priorityClassName"] = found["metadata"]["name"]
        priority = found.get("value", 0) if found else 0
        policy = found.get("preemptionPolicy", PREEMPT_LOWER) if found else PREEMPT_LOWER
    for field, computed, what in (("priority", priority, "integer value of priority"),
                                  ("preemptionPolicy", policy, "string value of PreemptionPolicy")):
        given = spec.get(field)
        if given is not None and given != computed:
            raise forbidden(POD, name, f"the {what} ({given}) must not be provided in pod spec; priority admission "
                                       f"controller computed {computed} from the given PriorityClass name")
        spec[field] = computed


def admit_class(defaults: Defaults, priority_class: dict, creating: bool) -> None:
    """Refuse a second ``globalDefault`` class (under the store lock)."""
    if priority_class.get("globalDefault") is not True:
        return
    current = defaults.current()
    name = priority_class["metadata"].get("name") or ""
    if current is not None and (creating or current["metadata"]["name"] != name):
        raise forbidden(PRIORITY_CLASS, name or "Unknown", f"PriorityClass {current['metadata']['name']} is already "
                                                           "marked as default. Only one default can exist")
