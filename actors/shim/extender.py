"""kube-scheduler's extender calls, answered from the plugin-mode handoff.

``Extender`` is called by the REST app's threads (``rest/extender.py`` speaks the HTTP and JSON): a
filter call for a pod that names no application passes every node (kube-scheduler schedules it as
usual); for a YuniKorn pod the handoff actor decides. A bind call binds through the Binding API once
the handoff agrees, then settles the allocation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pykka

from actors.shim.client import BindError, KubeClient
from actors.shim.handoff import FilterVerdict
from actors.shim.messages import BindAsk, FilterAsk, Settled
from actors.shim.pods import parse_pod


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
        """Bind the pod to ``node``; ``""`` when bound, else why not.

        A pod the handoff holds no allocation for is one YuniKorn does not manage (kube-scheduler only
        binds a managed pod after our filter let it through to its allocated node), so it is bound as asked.
        """
        refusal = self._handoff.ask(BindAsk(uid, node), timeout=self._timeout)
        if refusal:
            return refusal
        try:
            self._client.bind(namespace, name, node, uid)
        except BindError as error:
            return str(error)
        self._handoff.tell(Settled(uid))
        return ""
