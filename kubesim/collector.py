"""Garbage collection by owner reference, as kube-controller-manager's garbage collector does it.

When an owner goes, its dependents go too (``Background``, the default), or lose their reference to it
(``Orphan``; done before the owner goes, as the API server's orphan finalizer waits for it); with
``Foreground`` the owner stays, marked for deletion with the ``foregroundDeletion`` finalizer, until its
dependents are gone. A dependent created with owners of kinds kubesim serves, none of which exists,
is collected at once. A dependent keeping another owner only loses the reference to the gone one.
"""

from __future__ import annotations

import logging
import time

from kubesim import errors
from kubesim.api import DeleteOptions
from kubesim.resources import BY_KIND, BY_PLURAL, Kind
from kubesim.store import Event, Store, clone
from kubesim.worker import Worker

log = logging.getLogger(__name__)
FOREGROUND = "foregroundDeletion"
Key = tuple[str, str, str]  # (plural, namespace, name)


def owner_uids(obj: dict) -> set[str]:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return {ref["uid"] for ref in refs if isinstance(ref, dict) and isinstance(ref.get("uid"), str)}


class GarbageCollector(Worker):
    def __init__(self, store: Store, api) -> None:
        super().__init__("kubesim-garbage-collector")
        self._store = store
        self._api = api
        self._keys: dict[str, Key] = {}  # uid -> key, of every object
        self._dependents: dict[str, set[Key]] = {}  # owner uid -> its dependents' keys

    def start(self) -> None:
        with self._store.lock:
            for key, obj in self._store.objects.items():
                self._keys[obj["metadata"]["uid"]] = key
                for owner in owner_uids(obj):
                    self._dependents.setdefault(owner, set()).add(key)
            self._store.listeners.append(self._on_event)
        super().start()

    # Called under the store lock.
    def _on_event(self, event: Event) -> None:
        meta = event.new["metadata"]
        uid, key = meta["uid"], (event.kind.plural, meta.get("namespace", ""), meta["name"])
        before = owner_uids(event.old) if event.old is not None else set()
        after = set() if event.type == "DELETED" else owner_uids(event.new)
        for owner in before - after:
            self._forget(owner, key)
        for owner in after - before:
            self._dependents.setdefault(owner, set()).add(key)
        if event.type == "DELETED":
            self._keys.pop(uid, None)
            if uid in self._dependents:
                self.schedule(("collect", uid))
            for owner in before:
                self.schedule(("foreground", owner))
            return
        self._keys[uid] = key
        if event.type == "ADDED" and after and not any(self._servable_owner_exists(ref) for ref in _refs(meta)):
            if any(self._servable(ref) for ref in _refs(meta)):
                self.schedule(("dangling", uid))
        if FOREGROUND in (meta.get("finalizers") or ()) and meta.get("deletionTimestamp"):
            self.schedule(("foreground", uid))

    def _forget(self, owner: str, key: Key) -> None:
        dependents = self._dependents.get(owner)
        if dependents is not None:
            dependents.discard(key)
            if not dependents:
                del self._dependents[owner]

    @staticmethod
    def _servable(ref: dict) -> bool:
        return (ref.get("apiVersion"), ref.get("kind")) in BY_KIND

    def _servable_owner_exists(self, ref: dict) -> bool:
        return not self._servable(ref) or ref.get("uid") in self._keys

    # Called by the API, under the store lock.
    def orphan(self, owner: str) -> None:
        """The owner's dependents lose their references to it (before it goes)."""
        for key in list(self._dependents.get(owner, ())):
            self._drop_reference(key, owner)

    def delete_foreground(self, kind: Kind, obj: dict) -> dict:
        meta = obj["metadata"]
        if FOREGROUND in (meta.get("finalizers") or ()):
            return obj
        marked = clone(obj)
        marked["metadata"]["finalizers"] = [*(meta.get("finalizers") or ()), FOREGROUND]
        marked["metadata"]["deletionTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        marked["metadata"]["deletionGracePeriodSeconds"] = 0
        return self._store.replace(kind, meta.get("namespace", ""), meta["name"], marked, None)

    # The collector's own thread.
    def handle(self, item) -> None:
        action, uid = item
        with self._store.lock:
            if action == "collect":
                self._collect(uid)
            elif action == "dangling":
                key = self._keys.get(uid)
                obj = self._store.objects.get(key) if key else None
                if obj is not None and not any(self._servable_owner_exists(ref) for ref in _refs(obj["metadata"])):
                    self._delete(key)
            elif action == "foreground":
                self._finish_foreground(uid)

    def _collect(self, owner: str) -> None:
        """The owner is gone: each dependent goes, unless another of its owners is still there."""
        if owner in self._keys:
            return  # an object with this uid exists again: nothing is gone
        for key in list(self._dependents.get(owner, ())):
            obj = self._store.objects.get(key)
            if obj is None:
                continue
            if any(other in self._keys for other in owner_uids(obj) - {owner}):
                self._drop_reference(key, owner)
            else:
                self._delete(key)

    def _finish_foreground(self, uid: str) -> None:
        key = self._keys.get(uid)
        obj = self._store.objects.get(key) if key else None
        if obj is None or FOREGROUND not in (obj["metadata"].get("finalizers") or ()):
            return
        remaining = [k for k in self._dependents.get(uid, ()) if k in self._store.objects]
        for dependent in remaining:
            self._delete(dependent)
        if not remaining:
            self._store.delete(BY_PLURAL[key[0]], key[1], key[2])

    def _delete(self, key: Key) -> None:
        try:  # in background, whatever the kind's default (a Job's would orphan its pods)
            self._api.delete(BY_PLURAL[key[0]], key[1], key[2], DeleteOptions(propagation="Background"))
        except errors.ApiError as error:
            log.debug("garbage collection of %s: %s", key, error.message)

    def _drop_reference(self, key: Key, owner: str) -> None:
        obj = self._store.objects.get(key)
        if obj is None:
            return
        updated = clone(obj)
        kept = [ref for ref in obj["metadata"].get("ownerReferences") or () if ref.get("uid") != owner]
        if kept:
            updated["metadata"]["ownerReferences"] = kept
        else:
            updated["metadata"].pop("ownerReferences", None)
        self._store.replace(BY_PLURAL[key[0]], key[1], key[2], updated, None)


def _refs(meta: dict) -> list[dict]:
    return [ref for ref in meta.get("ownerReferences") or () if isinstance(ref, dict)]
