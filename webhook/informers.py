"""List-then-watch loops that keep a :class:`~webhook.view.ClusterView` current.

One daemon thread per kind: configmaps in the scheduler's namespace, namespaces, priority classes.
Each lists, hands every object to the view, then watches from the list's resourceVersion. A 410 or a
broken stream re-lists, and objects that vanished meanwhile are reported as deleted, so no change is
lost. Objects reach the view as the API server's JSON (camelCase dicts), never as client models.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from webhook.view import ClusterView

log = logging.getLogger(__name__)

Apply = Callable[[dict, bool], None]  # (object, deleted)


@dataclass(frozen=True)
class _Source:
    name: str
    list_call: Callable
    kwargs: dict
    apply: Apply


class Informer:
    """Keeps one kind of object flowing into ``apply``; ``synced`` is set after the first list."""

    def __init__(self, api_client: client.ApiClient, source: _Source, watch_timeout: int = 60) -> None:
        self._api_client = api_client
        self._source = source
        self._watch_timeout = watch_timeout
        self._known: set[str] = set()
        self.synced = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"informer-{source.name}", daemon=True)

    def start(self) -> Informer:
        self._thread.start()
        return self

    def _run(self) -> None:
        backoff = 0.1
        while True:  # for the worker's lifetime: the thread is a daemon and ends with the process
            try:
                resource_version = self._list()
                backoff = 0.1
                while True:
                    resource_version = self._watch(resource_version)
            except ApiException as error:
                if error.status != 410:
                    log.warning("%s informer: %s; re-listing", self._source.name, error.reason or error)
            except Exception as error:  # noqa: BLE001 - any broken stream means: re-list and carry on
                log.warning("%s informer: %s; re-listing", self._source.name, error)
            time.sleep(backoff)
            backoff = min(backoff * 2, 5.0)

    def _list(self) -> str:
        listing = self._source.list_call(**self._source.kwargs)
        seen = set()
        for item in listing.items:
            obj = self._api_client.sanitize_for_serialization(item)
            seen.add(obj["metadata"]["name"])
            self._source.apply(obj, False)
        for gone in self._known - seen:
            self._source.apply({"metadata": {"name": gone}}, True)
        self._known = seen
        self.synced.set()
        return listing.metadata.resource_version

    def _watch(self, resource_version: str) -> str:
        stream = watch.Watch().stream(self._source.list_call, resource_version=resource_version,
                                      allow_watch_bookmarks=True, timeout_seconds=self._watch_timeout,
                                      _request_timeout=self._watch_timeout + 10, **self._source.kwargs)
        for event in stream:
            kind, raw = event["type"], event["raw_object"]
            if kind == "ERROR":
                raise ApiException(status=raw.get("code", 500), reason=raw.get("message", "watch error"))
            resource_version = raw.get("metadata", {}).get("resourceVersion", resource_version)
            if kind == "BOOKMARK":
                continue
            name = raw["metadata"]["name"]
            deleted = kind == "DELETED"
            (self._known.discard if deleted else self._known.add)(name)
            self._source.apply(raw, deleted)
        return resource_version


def start_informers(api_client: client.ApiClient, view: ClusterView, namespace: str,
                    watch_timeout: int = 60) -> list[Informer]:
    """Start the three informers feeding ``view``; wait on each one's ``synced`` before serving."""
    core = client.CoreV1Api(api_client)
    scheduling = client.SchedulingV1Api(api_client)

    def apply_configmap(obj: dict, deleted: bool) -> None:
        view.set_configmap(obj["metadata"]["name"], None if deleted else obj)

    sources = (
        _Source("configmaps", core.list_namespaced_config_map, {"namespace": namespace}, apply_configmap),
        _Source("namespaces", core.list_namespace, {}, lambda obj, deleted: view.set_namespace(obj, deleted)),
        _Source("priorityclasses", scheduling.list_priority_class, {},
                lambda obj, deleted: view.set_priority_class(obj, deleted)),
    )
    return [Informer(api_client, source, watch_timeout).start() for source in sources]
