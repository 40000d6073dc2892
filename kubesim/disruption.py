"""The Eviction API and PodDisruptionBudgets, as the API server applies them.

An eviction (``POST pods/{name}/eviction``, a ``policy/v1`` ``Eviction``) deletes the pod unless a
budget selecting it has no disruption left: then it answers 429 ``TooManyRequests``. A budget's
status is computed over the pods its selector matches in its namespace: ``expectedPods`` (all of
them; for ``maxUnavailable`` or a percentage, the most it has selected, standing in for the scale of
the pods' controller), ``currentHealthy`` (those Ready), ``desiredHealthy`` (from ``minAvailable`` or
``maxUnavailable``, a number or a percentage of the expected pods, rounded up) and
``disruptionsAllowed``. Only a healthy pod uses up a disruption, as in Kubernetes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from kubesim import errors
from kubesim.resources import BY_PATH, POD
from kubesim.store import Event, Store, clone

PDB = BY_PATH[("policy", "v1", "poddisruptionbudgets")]


def _matches(selector: dict | None, labels: dict) -> bool:
    """A ``LabelSelector``; a budget without one (or an empty one) selects every pod, as in policy/v1."""
    selector = selector or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for requirement in selector.get("matchExpressions") or ():
        key, operator, values = requirement.get("key"), requirement.get("operator"), requirement.get("values") or ()
        present = key in labels
        if ((operator == "In" and labels.get(key) not in values) or (operator == "NotIn" and labels.get(key) in values)
                or (operator == "Exists" and not present) or (operator == "DoesNotExist" and present)):
            return False
    return True


def _healthy(pod: dict) -> bool:
    if pod["metadata"].get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _count(value, expected: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * expected / 100)
    return int(value)


def budget_status(store: Store, budget: dict) -> dict:
    """The budget's status computed from the pods it selects now."""
    namespace = budget["metadata"]["namespace"]
    spec = budget.get("spec") or {}
    pods, _ = store.list(POD, namespace, lambda p: _matches(spec.get("selector"), p["metadata"].get("labels") or {}))
    expected = len(pods)
    if spec.get("maxUnavailable") is not None or str(spec.get("minAvailable", "")).endswith("%"):
        # Kubernetes takes these from the pods' controller's scale; kubesim has no controllers, so the
        # most pods the budget has selected stands in for it (an evicted pod is not replaced here).
        expected = max(expected, (budget.get("status") or {}).get("expectedPods", 0))
    healthy = sum(1 for p in pods if _healthy(p))
    if spec.get("maxUnavailable") is not None:
        desired = max(expected - _count(spec["maxUnavailable"], expected), 0)
    else:
        desired = _count(spec.get("minAvailable", 1), expected)
    return {"observedGeneration": budget["metadata"].get("generation", 1), "currentHealthy": healthy,
            "desiredHealthy": desired, "expectedPods": expected,
            "disruptionsAllowed": max(healthy - desired, 0)}


def _refresh(store: Store, budget: dict, status: dict) -> None:
    if budget.get("status") != status:
        updated = clone(budget)
        updated["status"] = status
        meta = budget["metadata"]
        store.replace(PDB, meta["namespace"], meta["name"], updated, None)


class Budgets:
    """The budgets by namespace, kept from the store's changes: listing the store for them would read
    every object it holds, at each eviction."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.by_namespace: dict[str, dict[str, dict]] = {}
        with store.lock:
            for budget in store.list(PDB)[0]:
                self._keep(budget)
            store.listeners.append(self._on_event)

    def _keep(self, budget: dict) -> None:
        meta = budget["metadata"]
        self.by_namespace.setdefault(meta["namespace"], {})[meta["name"]] = budget

    def _on_event(self, event: Event) -> None:
        """Called under the store lock."""
        if event.kind is not PDB:
            return
        if event.type == "DELETED":
            meta = event.new["metadata"]
            self.by_namespace.get(meta["namespace"], {}).pop(meta["name"], None)
        else:
            self._keep(event.new)

    def evict(self, namespace: str, name: str, delete: Callable[[], object]) -> None:
        """``delete()`` the pod unless a budget forbids it (429, naming the budget); budgets' statuses follow."""
        with self.store.lock:
            budgets = list(self.by_namespace.get(namespace, {}).values())
            _evict(self.store, namespace, name, budgets, delete)


def _evict(store: Store, namespace: str, name: str, budgets: list[dict], delete: Callable[[], object]) -> None:
    with store.lock:
        pod = store.get(POD, namespace, name)
        labels = pod["metadata"].get("labels") or {}
        selecting = [b for b in budgets if _matches((b.get("spec") or {}).get("selector"), labels)]
        statuses = [(budget, budget_status(store, budget)) for budget in selecting]
        for budget, status in statuses:
            _refresh(store, budget, status)
            if _healthy(pod) and status["disruptionsAllowed"] <= 0:
                cause = (f"The disruption budget {budget['metadata']['name']} needs {status['desiredHealthy']} "
                         f"healthy pods and has {status['currentHealthy']} currently")
                raise errors.ApiError(429, "TooManyRequests",
                                      "Cannot evict pod as it would violate the pod's disruption budget.",
                                      {"causes": [{"reason": "DisruptionBudget", "message": cause}]})
        delete()
        for budget, _ in statuses:
            _refresh(store, store.get(PDB, namespace, budget["metadata"]["name"]),
                     budget_status(store, store.get(PDB, namespace, budget["metadata"]["name"])))
