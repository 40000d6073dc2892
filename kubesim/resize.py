"""In-place pod resize (Kubernetes 1.33+): the ``pods/{name}/resize`` subresource as kube-apiserver serves it.

A resize writes only ``spec.containers[*].resources`` and ``resizePolicy`` (and those of sidecars, the init
containers with ``restartPolicy: Always``); whatever else the request carries is dropped, as the resize
strategy copies the stored pod and takes only those. It is then validated as ``ValidatePodResize`` does:
no pod-level resources, no static or Windows pod, the QoS class kept, requests and limits not removed, a
memory limit neither lowered nor added unless the container restarts for memory, nothing but cpu and memory
changed. The pod's kubelet applies what was accepted (``kubelet``)."""

from __future__ import annotations

import functools
from fractions import Fraction

from kubesim import errors
from kubesim.resources import POD
from kubesim.store import clone
from si.quantity import parse_quantity

RESIZABLE = ("cpu", "memory")
RESTART_POLICIES = ("NotRequired", "RestartContainer")
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


def resized(current: dict, requested: dict, qos_class) -> dict:
    """The stored pod with the resources ``requested`` asks for; 422 (nothing changed) when kube-apiserver
    would refuse them. ``qos_class(spec)`` is the QoS class a spec gives."""
    name = current["metadata"]["name"]
    spec = requested.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("containers"), list):
        raise errors.invalid(POD, name, [("spec.containers", "Required value")])
    merged = clone(current)
    version = (requested.get("metadata") or {}).get("resourceVersion")
    if version is not None:
        merged["metadata"]["resourceVersion"] = version
    for field in ("containers", "initContainers"):
        wanted = {c.get("name"): c for c in spec.get(field) or () if isinstance(c, dict)}
        for container in merged["spec"].get(field) or ():
            if field == "initContainers" and container.get("restartPolicy") != "Always":
                continue
            asked = wanted.get(container.get("name"))
            if asked is None:
                continue
            for key in ("resources", "resizePolicy"):
                if asked.get(key) is None:
                    container.pop(key, None)
                else:
                    container[key] = clone(asked[key])
    causes = _refusals(current, merged, qos_class)
    if causes:
        raise errors.invalid(POD, name, causes)
    return merged


def _refusals(current: dict, new: dict, qos_class) -> list[tuple[str, str]]:
    old_spec, new_spec = current["spec"], new["spec"]
    for spec in (old_spec, new_spec):
        pod_level = spec.get("resources") or {}
        if isinstance(pod_level, dict) and (pod_level.get("requests") or pod_level.get("limits")):
            return [("", "Forbidden: pods with pod-level resources cannot be resized")]
    if MIRROR_ANNOTATION in (current["metadata"].get("annotations") or {}):
        return [("", "Forbidden: static pods cannot be resized")]
    if (old_spec.get("os") or {}).get("name") == "windows":
        return [("", "Forbidden: windows pods cannot be resized")]
    causes = []
    for field in ("containers", "initContainers"):
        for i, container in enumerate(new_spec.get(field) or ()):
            causes += container_problems(container, f"spec.{field}[{i}]", new_spec.get("restartPolicy"))
    current_class = (current.get("status") or {}).get("qosClass") or qos_class(old_spec)
    if current_class != qos_class(new_spec):
        causes.append(("spec", f'Invalid value: "{current_class}": Pod QOS Class may not change as a result of '
                               "resizing"))
    if not _resize_supported(current):
        causes.append(("spec", "Forbidden: Pod running on node without support for resize"))
    resizable = [("containers", i) for i in range(len(old_spec.get("containers") or ()))]
    resizable += [("initContainers", i) for i, c in enumerate(old_spec.get("initContainers") or ())
                  if c.get("restartPolicy") == "Always"]
    for field, i in resizable:
        causes += _resize_problems(new_spec[field][i], old_spec[field][i], f"spec.{field}[{i}].resources")
    for field, i in resizable:
        if _without_cpu_memory_changes(new_spec[field][i], old_spec[field][i]) != old_spec[field][i]:
            what = "resources" if field == "containers" else "resources for sidecar containers"
            causes.append(("spec", f"Forbidden: only cpu and memory {what} are mutable"))
    return causes


def container_problems(container: dict, path: str, pod_restart_policy: str | None) -> list[tuple[str, str]]:
    """What kube-apiserver's container validation says of its resources and resize policy (on creation too)."""
    causes = []
    resources = container.get("resources") or {}
    requests, limits = (resources.get(key) or {} for key in ("requests", "limits")) if isinstance(resources, dict) \
        else (None, None)
    if not isinstance(requests, dict) or not isinstance(limits, dict):
        return [(f"{path}.resources", "Invalid value: requests and limits must be maps of quantities")]
    amounts = {}
    for key, values in (("limits", limits), ("requests", requests)):
        for name, text in values.items():
            amount = quantity(text)
            if amount is None:
                causes.append((f"{path}.resources.{key}[{name}]", f'Invalid value: "{text}": quantities must match '
                               "the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"))
            elif amount < 0:
                causes.append((f"{path}.resources.{key}[{name}]", f'Invalid value: "{text}": must be greater than '
                               "or equal to 0"))
            else:
                amounts[key, name] = amount
    for name, text in requests.items():
        if ("requests", name) in amounts and ("limits", name) in amounts \
                and amounts["requests", name] > amounts["limits", name]:
            causes.append((f"{path}.resources.requests", f'Invalid value: "{text}": must be less than or equal to '
                           f"{name} limit of {limits[name]}"))
    seen = set()
    policies = container.get("resizePolicy") or []
    where = f"{path}.resizePolicy"
    if not isinstance(policies, list):
        return [*causes, (where, "Invalid value: must be a list of resize policies")]
    for i, policy in enumerate(policies):
        if not isinstance(policy, dict):
            causes.append((f"{where}[{i}]", "Invalid value: a resize policy must be an object"))
            continue
        resource, restart = policy.get("resourceName") or "", policy.get("restartPolicy") or ""
        if resource in seen:
            causes.append((f"{where}[{i}]", f'Duplicate value: "{resource}"'))
        seen.add(resource)
        for value, supported in ((resource, RESIZABLE), (restart, RESTART_POLICIES)):
            if not value:
                causes.append((where, "Required value"))
            elif value not in supported:
                listed = ", ".join(f'"{s}"' for s in supported)
                causes.append((where, f'Unsupported value: "{value}": supported values: {listed}'))
        if pod_restart_policy == "Never" and restart != "NotRequired":
            causes.append((where, f"Invalid value: \"{restart}\": must be 'NotRequired' when `restartPolicy` is "
                                  "'Never'"))
    return causes


def _resize_problems(new: dict, old: dict, path: str) -> list[tuple[str, str]]:
    """validateContainerResize: requests and limits are not removed; a memory limit is neither lowered nor
    added unless the container restarts for memory."""
    causes = []
    new_resources, old_resources = _mapping(new.get("resources")), _mapping(old.get("resources"))
    for key, word in (("requests", "requests"), ("limits", "limits")):
        if set(_mapping(old_resources.get(key))) - set(_mapping(new_resources.get(key))):
            causes.append((f"{path}.{key}", f"Forbidden: resource {word} cannot be removed"))
    policies = new.get("resizePolicy") if isinstance(new.get("resizePolicy"), list) else ()
    memory_policy = next((p.get("restartPolicy") for p in policies
                          if isinstance(p, dict) and p.get("resourceName") == "memory"), "")
    if memory_policy in ("NotRequired", "", None):
        new_limit = quantity(_mapping(new_resources.get("limits")).get("memory"))
        old_limit = quantity(_mapping(old_resources.get("limits")).get("memory"))
        if new_limit is not None and old_limit is not None and new_limit < old_limit:
            causes.append((f"{path}.limits[memory]", "Forbidden: memory limits cannot be decreased unless "
                                                     "resizePolicy is RestartContainer"))
        elif new_limit is not None and old_limit is None:
            causes.append((f"{path}.limits[memory]", "Forbidden: memory limits cannot be added unless "
                                                     "resizePolicy is RestartContainer"))
    return causes


def _without_cpu_memory_changes(new: dict, old: dict) -> dict:
    """``new`` with its cpu and memory put back as ``old`` has them: what must then equal ``old``."""
    kept = clone(new)
    new_resources, old_resources = _mapping(new.get("resources")), _mapping(old.get("resources"))
    resources = {}
    for key in ("limits", "requests"):
        if old_resources.get(key) is None:
            continue
        values = {n: v for n, v in _mapping(new_resources.get(key)).items() if n not in RESIZABLE}
        values.update({n: v for n, v in old_resources[key].items() if n in RESIZABLE})
        resources[key] = values
    if resources or "resources" in old:
        kept["resources"] = resources
    else:
        kept.pop("resources", None)
    return kept


def _resize_supported(pod: dict) -> bool:
    """The node's kubelet reports container resources (isPodResizeRequestSupported)."""
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        if (status.get("state") or {}).get("running") is not None:
            return status.get("resources") is not None
    return True


def _mapping(value) -> dict:
    return value if isinstance(value, dict) else {}


def quantity(text) -> Fraction | None:
    """The quantity ``text`` says, or ``None`` when it is none."""
    if isinstance(text, str):
        return _parsed(text)
    if text is None:
        return None
    try:
        return parse_quantity(text)
    except (TypeError, ValueError, ArithmeticError):
        return None


@functools.lru_cache(maxsize=256)
def _parsed(text: str) -> Fraction | None:
    """A quantity written as text, kept: every pod of a workload repeats the same few ("100m", "128Mi"),
    and parsing one into a Fraction was a sixth of kubesim's time creating pods."""
    try:
        return parse_quantity(text)
    except (TypeError, ValueError, ArithmeticError):
        return None
