"""kube-scheduler's extender calls, answered from the plugin-mode handoff.

``Extender`` is called by the REST app's threads (``rest/extender.py`` speaks the HTTP and JSON): a
filter call for a pod that names no application passes every node (kube-scheduler schedules it as
usual); for a YuniKorn pod the handoff actor decides. A bind call binds through the Binding API only
what the core decided: the pod whose allocation is in progress, to its node. A pod the handoff holds
no allocation for is bound only if it is, as read from the API server, a pod of this scheduler that
names no application (kube-scheduler places those alone, as the filter said) and the node exists;
anything else is refused with the reason, which kube-scheduler logs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pykka

from actors.shim.client import CONNECTION_ERRORS, ApiError, BindError, KubeClient
from actors.shim.handoff import FilterVerdict
from actors.shim.messages import BindAsk, FilterAsk, Settled
from actors.shim.pods import parse_pod
from si.kubernetes import SCHEDULER_NAME


class Extender:
    """See the module docstring; ``timeout`` bounds each question to the handoff actor."""

    def __init__(self, client: KubeClient, handoff: pykka.ActorRef, timeout: float = 4.0) -> None:
        self._client = client
        self._handoff = handoff
        self._timeout = timeout

    def filter(self, pod: Mapping, nodes: Sequence[str]) -> FilterVerdict:
        """The nodes ``pod`` (the API's JSON) may go to. ``ValueError`` if the pod has no identity."""
        record = parse_pod(pod)
        if not (record.yunikorn and record.app_id_named):
            return FilterVerdict(tuple(nodes), "")
        return self._handoff.ask(FilterAsk(record.uid, tuple(nodes)), timeout=self._timeout)

    def bind(self, namespace: str, name: str, uid: str, node: str) -> str:
        """Bind the pod to ``node``; ``""`` when bound, else why not (see the module docstring)."""
        verdict = self._handoff.ask(BindAsk(uid, namespace, name, node), timeout=self._timeout)
        refusal = verdict.refusal if verdict.placed else self._refusal_of_unplaced(namespace, name, uid, node,
                                                                                    verdict.refusal)
        if refusal:
            return refusal
        try:
            self._client.bind(namespace, name, node, uid)
        except BindError as error:
            return str(error)
        self._handoff.tell(Settled(uid))
        return ""

    def _refusal_of_unplaced(self, namespace: str, name: str, uid: str, node: str, unplaced: str) -> str:
        """Why a pod YuniKorn holds no allocation for may not go to ``node`` (``""``: it may)."""
        pod = self._read(f"/api/v1/namespaces/{namespace}/pods/{name}", f"pod {namespace}/{name}")
        if isinstance(pod, str):
            return pod
        try:
            record = parse_pod(pod)
        except ValueError as error:
            return str(error)
        if record.uid != uid:
            return f"pod {namespace}/{name} does not have uid {uid}"
        if not record.yunikorn:
            return f"pod {namespace}/{name} is not for {SCHEDULER_NAME} (schedulerName {record.scheduler_name})"
        if record.app_id_named:
            return unplaced
        found = self._read(f"/api/v1/nodes/{node}", f"node {node}")
        return found if isinstance(found, str) else ""

    def _read(self, path: str, what: str) -> dict | str:
        """The object at ``path``, or why it cannot be had."""
        try:
            return self._client.request("GET", path)
        except ApiError as error:
            return f"{what} does not exist" if error.status == 404 else f"reading {what} failed: {error}"
        except CONNECTION_ERRORS as error:
            return f"reading {what} failed: {error}"
