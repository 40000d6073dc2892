"""Informers: one actor per watched kind, keeping the listener's view of the cluster exact.

An informer lists its kind, tells the listener ``Listed`` with every object, then watches from the
list's resourceVersion (bookmarks on, ``timeoutSeconds`` so the server ends the watch, a read timeout so
a dead connection fails instead of hanging) and tells ``Changes`` as events arrive, one message per
chunk read (the pods' watch, after a read that took all there was, lingers a moment before the next:
``Kind.lingers``). A watch that ends on time is resumed from the last resourceVersion seen; on ``410
Gone`` or a broken stream the informer lists again and tells the difference against what it had (adds,
updates, deletes that happened while it was not watching). It keeps the last record of every object, so
an event it has already delivered (same resourceVersion) is never delivered twice, and a delete of an
object it never delivered is dropped.

The blocking list/watch loop runs on the informer's own pump thread; the actor's thread only starts
and stops it and answers ``InformerStatusRequest``.

A kind that reads its objects from their JSON text (pods: ``Kind.read``) gets its lists' objects
undecoded, and a page no decoder reads whole is split by its brackets. An object the parser cannot
read, whatever it raises, is skipped alone and logged once (the others of its list or batch are
delivered); the last version of it that could be read stands until the object is deleted, so a pod
still running keeps its room, and its deletion is delivered (a list again holding an object no decoder
reads, which cannot be told apart, takes no object it misses as deleted). The pump is
supervised like an actor: anything else that ends it stops the informer and is reported with its name
(``Informer(pods)``) to the supervisor, so liveness fails and the scheduler is restarted instead of
running on blind.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import pykka

from actors.base import Actor, Supervisor, record
from actors.shim.client import CONNECTION_ERRORS, ApiError, KubeClient, WatchExpired, WatchStream
from actors.shim.messages import Added, Changes, Deleted, InformerStatusRequest, Listed, Updated

log = logging.getLogger(__name__)


@record
class Kind:
    """A watched kind: its list/watch path and the parser of one object into a record (which has
    ``key`` and ``resource_version``). ``lingers``: its watch waits ``WatchSettings.linger`` after a
    read that took all there was. Only pods come in numbers that make the batches pay; any other kind
    is told as it comes, so a node, namespace or configuration changed before a pod is created is
    not seen after that pod (the API server orders no events across kinds, but the time between them)."""

    name: str
    path: str
    parse: Callable[[Mapping], Any]
    lingers: bool = False
    # ``parse`` of an object's JSON text, decoding only what it reads: lists hand it their objects
    # undecoded (``KubeClient.pages``). It raises as ``parse`` does, and ``ValueError`` for text that is
    # no JSON; the records are ``parse``'s.
    read: Callable[[Any], Any] | None = None


@record
class InformerStatus:
    kind: str
    synced: bool
    objects: int
    lists: int
    watches: int
    resource_version: str


@dataclass(frozen=True, slots=True)  # a default argument: ruff (B008) takes only a dataclass as immutable
class WatchSettings:
    """``timeout`` is the server-side watch length; a connection silent for ``read_timeout`` seconds
    (more than the bookmark interval) is treated as dead; failures back off up to ``max_backoff``.
    ``linger``: seconds the watch of a kind that lingers (``Kind.lingers``: pods) waits, after a read
    that took all there was, for more events to arrive before reading again (``WatchStream.batches``):
    a steady trickle of events (pods created and bound at a paced rate) is told as a few batches, each
    waking the listener and the actors after it once, instead of one or two events a message; the
    first event after a quiet spell is told at once."""

    timeout: int = 300
    read_timeout: float = 330.0
    max_backoff: float = 5.0
    linger: float = 0.01


class Informer(Actor):
    """Lists and watches one kind and tells ``listener`` (see the module docstring)."""

    kind = "informer"
    use_daemon_thread = False

    def __init__(self, client: KubeClient, kind: Kind, listener: pykka.ActorRef,
                 settings: WatchSettings = WatchSettings(), supervisor: Supervisor | None = None) -> None:
        super().__init__(supervisor)
        self._client = client
        self._kind = kind
        self._listener = listener
        self._settings = settings
        self._stopping = threading.Event()
        self._stream: WatchStream | None = None
        self._progress = (0, 0, 0, "")  # objects, lists, watches, resourceVersion: the pump's, as of its last batch
        self._skipped: set[str] = set()  # namespace/name of the objects the parser refused, logged once
        self._pump = threading.Thread(target=self._pump_supervised, name=f"informer-{kind.name}", daemon=True)

    def on_start(self) -> None:
        self._pump.start()

    @property
    def name(self) -> str:
        return f"Informer({self._kind.name})"

    def on_stop(self) -> None:
        self._halt()
        self._pump.join(timeout=self._client.request_timeout + 5)
        if self._pump.is_alive():
            log.warning("informer %s: pump thread still busy at stop", self._kind.name)

    def on_failure(self, *exc_info) -> None:
        self._halt()  # a dead informer must not go on telling its listener
        super().on_failure(*exc_info)

    def _halt(self) -> None:
        self._stopping.set()
        stream = self._stream
        if stream is not None:
            stream.close()

    def on_InformerStatusRequest(self, message: InformerStatusRequest) -> InformerStatus:
        objects, lists, watches, resource_version = self._progress
        return InformerStatus(self._kind.name, lists > 0, objects, lists, watches, resource_version)

    # ---- the pump thread -----------------------------------------------------------------------

    def _pump_supervised(self) -> None:
        try:
            self._run()
        except Exception:
            if self._stopping.is_set():
                return
            self.on_failure(*sys.exc_info())  # halts the pump and tells the supervisor, naming the informer
            self.actor_ref.stop(block=False)

    def _run(self) -> None:
        store: dict[str, Any] = {}
        resource_version = ""
        must_list, delay = True, 0.0
        lists = watches = 0
        while not self._stopping.is_set():
            try:
                if must_list:
                    resource_version = self._list(store, first=lists == 0)
                    lists += 1
                    must_list = False
                    self._publish(store, lists, watches, resource_version)
                stream = self._client.watch(self._kind.path, resource_version, self._settings.timeout,
                                            self._settings.read_timeout)
                watches += 1
                self._stream = stream
                if self._stopping.is_set():
                    stream.close()
                for batch in stream.batches(self._settings.linger if self._kind.lingers else 0.0):
                    changes, resource_version = self._apply(store, batch, resource_version)
                    if changes:
                        self._listener.tell(Changes(self._kind.name, tuple(changes)))
                    delay = 0.0
                    self._publish(store, lists, watches, resource_version)
            except WatchExpired as error:
                log.info("informer %s: %s; listing again", self._kind.name, error)
                must_list = True
            except (ApiError, *CONNECTION_ERRORS, OSError, ValueError) as error:
                if self._stopping.is_set():
                    break
                log.warning("informer %s: %s; listing again", self._kind.name, error)
                must_list = True
                delay = min(max(delay * 2, 0.1), self._settings.max_backoff)
                self._stopping.wait(delay)
            finally:
                self._stream = None

    def _list(self, store: dict[str, Any], first: bool) -> str:
        fresh, resource_version, unknown = {}, "", 0
        read = self._kind.read
        for items, version in self._client.pages(self._kind.path, undecoded=read is not None):  # page by page
            resource_version = version
            for raw in items:
                if read is None:
                    record = self._parse(raw)
                else:
                    try:
                        record = read(raw)
                    except Exception as error:  # one object's, whatever it is: the others go on
                        raw = _decoded(raw)
                        self._skip(raw, error)
                        record = None
                        unknown += raw == {}  # no decoder reads it: which object it is cannot be told
                if record is None:
                    record = store.get(_stored_key(store, raw))  # unreadable now: its last version stands
                if record is not None:
                    fresh[record.key] = record
        if unknown and not first:
            # Any stored object missing from the list may be one of those: none is taken as deleted.
            log.warning("informer %s: %d listed objects cannot be told apart; none missing from the list is "
                        "taken as deleted", self._kind.name, unknown)
            fresh.update((key, record) for key, record in store.items() if key not in fresh)
        if first:
            store.update(fresh)
            self._listener.tell(Listed(self._kind.name, tuple(fresh.values())))
            return resource_version
        changes: list[Added | Updated | Deleted] = []
        for key, record in fresh.items():
            old = store.get(key)
            if old is None:
                changes.append(Added(record))
            elif old.resource_version != record.resource_version:
                changes.append(Updated(old, record))
        changes.extend(Deleted(store[key]) for key in store.keys() - fresh.keys())
        store.clear()
        store.update(fresh)
        if changes:
            self._listener.tell(Changes(self._kind.name, tuple(changes)))
        log.info("informer %s: listed %d objects, %d changes while not watching", self._kind.name,
                 len(fresh), len(changes))
        return resource_version

    def _apply(self, store: dict[str, Any], batch: list[tuple[str, dict]],
               resource_version: str) -> tuple[list[Added | Updated | Deleted], str]:
        changes: list[Added | Updated | Deleted] = []
        for event, obj in batch:
            version = (obj.get("metadata") or {}).get("resourceVersion") or resource_version
            resource_version = version
            if event == "BOOKMARK":
                continue
            record = self._parse(obj)
            if record is None:
                key = _stored_key(store, obj) if event == "DELETED" else None
                if key is not None:  # unreadable, but gone: its last version leaves
                    changes.append(Deleted(store.pop(key)))
                continue
            old = store.get(record.key)
            if event == "DELETED":
                if old is not None:
                    del store[record.key]
                    changes.append(Deleted(record))
            elif old is None:
                store[record.key] = record
                changes.append(Added(record))
            elif old.resource_version != record.resource_version:
                store[record.key] = record
                changes.append(Updated(old, record))
        return changes, resource_version

    def _parse(self, raw: Mapping) -> Any:
        try:
            return self._kind.parse(raw)
        except Exception as error:  # one object's, whatever it is: the others go on
            self._skip(raw, error)
            return None

    def _skip(self, raw: Mapping, error: Exception) -> None:
        metadata = _metadata(raw)
        key = f"{metadata.get('namespace') or ''}/{metadata.get('name') or ''}"
        if key in self._skipped:
            return
        if len(self._skipped) >= 10_000:  # a bound, not a cache: only the logging repeats after it
            self._skipped.clear()
        self._skipped.add(key)
        log.warning("informer %s: object %s skipped, it cannot be read: %s", self._kind.name, key, f"{error!r}"[:512])

    def _publish(self, store: dict[str, Any], lists: int, watches: int, resource_version: str) -> None:
        # One tuple, replaced whole (what a reader takes is of one moment); the status record is made
        # only when asked for, not for every batch of events.
        self._progress = (len(store), lists, watches, resource_version)


def _stored_key(store: Mapping[str, Any], raw: Any) -> str | None:
    """The key under which ``store`` holds the object ``raw`` names, read from its metadata alone
    (records are keyed by uid, ``namespace/name`` or name); ``None`` when it holds none."""
    metadata = _metadata(raw)
    name, namespace = metadata.get("name"), metadata.get("namespace")
    for key in (metadata.get("uid"), f"{namespace}/{name}" if namespace else None, name):
        if isinstance(key, str) and key in store:
            return key
    return None


def _decoded(text: Any) -> Any:
    """An object's JSON text decoded, for its name and key; ``{}`` when no decoder reads it."""
    try:
        return orjson.loads(memoryview(text))
    except (ValueError, TypeError):
        return {}


def _metadata(raw: Any) -> Mapping:
    metadata = raw.get("metadata") if isinstance(raw, Mapping) else None
    return metadata if isinstance(metadata, Mapping) else {}
