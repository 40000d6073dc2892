"""kube-scheduler's extender API (``kubescheduler.config.k8s.io/v1`` extenders) over HTTP.

kube-scheduler sends its extender types with Go field names (``Pod``, ``Nodes``, ``NodeNames``) because
they carry no JSON tags, while older extenders use lower case; keys are therefore read without regard
to case, and replies use the Go names. The decisions come from the plugin-mode ``Extender`` of the shim
(``actors.shim.extender``), which the process entry point hands over as an :class:`Extender`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Protocol

import falcon
import pykka

MAX_BODY = 16 * 2**20  # a NodeList of thousands of nodes when nodeCacheCapable is off


class Verdict(Protocol):
    """The nodes that pass a filter; every other node fails, unresolvably, for ``reason``."""

    @property
    def passed(self) -> Sequence[str]: ...

    @property
    def reason(self) -> str: ...


class Extender(Protocol):
    """What answers the extender calls. ``filter`` raises ``ValueError`` for a pod without identity;
    ``bind`` returns ``""`` once bound, else why not (refusals included); both may raise ``pykka.Timeout``."""

    def filter(self, pod: Mapping, nodes: Sequence[str]) -> Verdict: ...

    def bind(self, namespace: str, name: str, uid: str, node: str) -> str: ...


def _arguments(req: falcon.Request) -> dict:
    """The request's JSON object, keys lower-cased; 400 for anything else."""
    body = req.bounded_stream.read(MAX_BODY + 1)
    if len(body) > MAX_BODY:
        raise falcon.HTTPContentTooLarge(description=f"body larger than {MAX_BODY} bytes")
    try:
        document = json.loads(body)
    except ValueError as error:
        raise falcon.HTTPBadRequest(title="Invalid JSON", description=str(error)) from None
    if not isinstance(document, dict):
        raise falcon.HTTPBadRequest(title="Invalid arguments", description="expected a JSON object")
    return {str(key).lower(): value for key, value in document.items()}


def _ask(call, *args):
    try:
        return call(*args)
    except pykka.Timeout:
        raise falcon.HTTPServiceUnavailable(title="Scheduler busy",
                                            description="the scheduler did not answer in time") from None


class ExtenderFilter:
    """``POST .../filter``: ExtenderArgs in, ExtenderFilterResult out."""

    def __init__(self, extender: Extender) -> None:
        self._extender = extender

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        args = _arguments(req)
        pod = args.get("pod")
        if not isinstance(pod, Mapping):
            raise falcon.HTTPBadRequest(title="Invalid arguments", description="Pod is missing")
        node_list = args.get("nodes")
        if isinstance(args.get("nodenames"), list):
            names, objects = [str(name) for name in args["nodenames"]], None
        elif isinstance(node_list, Mapping) and isinstance(node_list.get("items"), list):
            objects = {((item.get("metadata") or {}).get("name") or ""): item for item in node_list["items"]
                       if isinstance(item, Mapping)}
            names = list(objects)
        else:
            raise falcon.HTTPBadRequest(title="Invalid arguments", description="neither NodeNames nor Nodes given")
        try:
            verdict = _ask(self._extender.filter, pod, names)
        except ValueError as error:
            raise falcon.HTTPBadRequest(title="Invalid pod", description=str(error)) from None
        passed = set(verdict.passed)
        kept = [name for name in names if name in passed]
        resp.media = {
            "Nodes": None if objects is None else {"apiVersion": "v1", "kind": "NodeList",
                                                   "items": [objects[name] for name in kept]},
            "NodeNames": kept if objects is None else None,
            "FailedNodes": {},
            "FailedAndUnresolvableNodes": {name: verdict.reason for name in names if name not in passed},
            "Error": "",
        }


class ExtenderBind:
    """``POST .../bind``: ExtenderBindingArgs in, ExtenderBindingResult out."""

    def __init__(self, extender: Extender) -> None:
        self._extender = extender

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        args = _arguments(req)
        fields = {key: args.get(key) for key in ("podname", "podnamespace", "poduid", "node")}
        missing = [key for key in fields if not isinstance(fields[key], str) or not fields[key]]
        if missing:
            raise falcon.HTTPBadRequest(title="Invalid arguments",
                                        description=f"missing {', '.join(missing)} (PodName, PodNamespace, PodUID, Node)")
        error = _ask(self._extender.bind, fields["podnamespace"], fields["podname"], fields["poduid"], fields["node"])
        resp.media = {"Error": error}


def add_routes(app: falcon.App, extender: Extender, prefix: str = "/scheduler/extender") -> None:
    app.add_route(f"{prefix}/filter", ExtenderFilter(extender))
    app.add_route(f"{prefix}/bind", ExtenderBind(extender))
