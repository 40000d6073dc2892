"""Plugin mode's binder: the core's decisions are handed to kube-scheduler instead of bound.

A stock kube-scheduler runs the pods of the ``yunikorn`` profile and consults this process through the
extender API (``rest/extender.py``). The handoff replaces the binder and answers the same messages, but
for each decision it records a *pending allocation* (pod -> node) and annotates the pod, because
kube-scheduler retries a pod it found unschedulable when the pod changes; the task then counts as
bound in the shim's bookkeeping, as in YuniKorn's scheduler plugin.

kube-scheduler's filter call (``FilterAsk``) lets a pod through only on its pending node and moves the
allocation to *in progress*. A second filter call while in progress means the last attempt did not end
in a bind: the task is retracted to the shim context (``RetractTask``), which returns the allocation to
the core to be placed again. Seeing the pod bound, or gone, settles the allocation (``Settled``).
kube-scheduler's bind call (``BindAsk``) is allowed only for the pod, by namespace, name and uid, whose
allocation is in progress, and only to its node.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pykka

from actors.base import Supervisor, record
from actors.shim import keys
from actors.shim.binder import Binder
from actors.shim.client import ApiError, KubeClient
from actors.shim.messages import (
    BindAsk,
    BindOutcome,
    BindRequest,
    FilterAsk,
    RetractTask,
    Settled,
    WaitingReason,
)

log = logging.getLogger(__name__)

NOT_READY = "Pod is not ready for scheduling"


@record
class FilterVerdict:
    """The nodes that pass; every other input node fails, unresolvably, for ``reason``."""

    passed: tuple[str, ...]
    reason: str


@record
class BindVerdict:
    """``placed``: the handoff holds an allocation for the pod; ``refusal``: why it may not be bound now
    (``""``: it may). A pod not placed is refused with the reason the core has not placed it yet."""

    placed: bool
    refusal: str


class AllocationHandoff(Binder):
    """See the module docstring. ``listener`` is the shim context."""

    kind = "handoff"

    def __init__(self, client: KubeClient, listener: pykka.ActorRef, workers: int = 4,
                 supervisor: Supervisor | None = None) -> None:
        super().__init__(client, listener, workers, supervisor)
        self._pending: dict[str, str] = {}
        self._in_progress: dict[str, str] = {}
        self._names: dict[str, tuple[str, str]] = {}  # uid -> (namespace, name) of the pods placed
        self._waiting: dict[str, str] = {}

    def on_FilterAsk(self, message: FilterAsk) -> FilterVerdict:
        return self._filter(message)

    def on_BindAsk(self, message: BindAsk) -> BindVerdict:
        return self._may_bind(message)

    def on_Settled(self, message: Settled) -> None:
        self._forget(message.uid)

    def on_WaitingReason(self, message: WaitingReason) -> None:
        self._waiting[message.uid] = message.reason

    def _filter(self, ask: FilterAsk) -> FilterVerdict:
        uid = ask.uid
        if uid in self._in_progress:
            node = self._in_progress.pop(uid)
            self._retract(uid, node, f"the previous attempt to schedule the pod on {node} did not bind it")
            return FilterVerdict((), f"{NOT_READY}: the attempt on {node} failed, the pod is placed again")
        node = self._pending.get(uid)
        if node is None:
            return FilterVerdict((), self._waiting.get(uid, NOT_READY))
        del self._pending[uid]
        if node not in ask.nodes:
            self._retract(uid, node, f"kube-scheduler found node {node} infeasible")
            return FilterVerdict((), f"{NOT_READY}: node {node} was not among the feasible nodes")
        self._in_progress[uid] = node
        return FilterVerdict((node,), f"Pod is not fit for node (YuniKorn placed it on {node})")

    def _may_bind(self, ask: BindAsk) -> BindVerdict:
        pod = f"{ask.namespace}/{ask.name}"
        node = self._in_progress.get(ask.uid)
        if node is None and ask.uid not in self._pending:
            return BindVerdict(False, f"YuniKorn has not placed pod {pod}: {self._waiting.get(ask.uid, NOT_READY)}")
        if self._names.get(ask.uid) != (ask.namespace, ask.name):
            return BindVerdict(True, f"pod {pod} does not have uid {ask.uid}")
        if node is None:
            return BindVerdict(True, f"pod {pod} has not passed the filter on its allocated node {self._pending[ask.uid]}")
        if node != ask.node:
            return BindVerdict(True, f"pod {pod} is allocated to {node}, not {ask.node}")
        return BindVerdict(True, "")

    def _retract(self, uid: str, node: str, reason: str) -> None:
        log.info("pod %s: %s; returning its allocation to the core", uid, reason)
        self._listener.tell(RetractTask(uid, node, reason))

    def _forget(self, uid: str) -> None:
        self._names.pop(uid, None)
        self._pending.pop(uid, None)
        self._in_progress.pop(uid, None)
        self._waiting.pop(uid, None)

    # ---- the binder's work, replaced -----------------------------------------------------------

    def _accept(self, request: BindRequest) -> bool:
        if not self._draining:
            self._pending[request.uid] = request.node
            self._names[request.uid] = (request.namespace, request.name)
            self._in_progress.pop(request.uid, None)
            self._waiting.pop(request.uid, None)
        return super()._accept(request)

    def _finished(self, outcome: BindOutcome, at: float) -> pykka.ActorRef:
        if not outcome.bound:
            self._pending.pop(outcome.uid, None)
        return super()._finished(outcome, at)

    def _bind_all(self, requests: list[BindRequest]) -> None:
        for request in requests:
            self._bind(request)

    def _bind(self, request: BindRequest) -> None:
        """Announce the decision on the pod, so that kube-scheduler re-evaluates it."""
        try:
            # The time makes every decision a change, even one repeating the node of an earlier one.
            stamp = f"{request.node} {datetime.now(UTC).isoformat(timespec='microseconds')}"
            present = self._client.annotate_pod(request.namespace, request.name,
                                                {keys.ANNOTATION_QUOTA_APPROVED: stamp})
            outcome = BindOutcome(request.uid, request.node, present, gone=not present,
                                  reason="" if present else "pod no longer exists")
        except ApiError as error:
            outcome = BindOutcome(request.uid, request.node, False, reason=f"annotating the pod failed: {error}")
        except Exception as error:  # the outcome must reach the listener whatever went wrong
            log.exception("annotating %s/%s failed unexpectedly", request.namespace, request.name)
            outcome = BindOutcome(request.uid, request.node, False, reason=f"unexpected error: {error}")
        self._report(outcome)
