"""Serialized JSON of snapshot objects, reused for as long as the core hands out the same object.

The core keeps a node's and an application's snapshot object from one partition snapshot to the next
while it is unchanged, so what a reader made of it can be kept too: a node or an application that did
not change is not serialized again. A changed one is serialized whole, its allocations with it: one
``orjson`` call per object costs less than keeping a fragment per allocation would. Fragments are
embedded verbatim by ``orjson``.

An entry lives exactly as long as its snapshot object: when the core drops the object (the node or
application changed or went away), a weak reference's callback drops the fragment.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import orjson

from rest import daos


class Fragments:
    """JSON fragments of snapshot objects, keyed by the objects' identity; safe to share between threads."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref, orjson.Fragment]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def _get(self, obj: Any, render: Callable[[Any], Any]) -> orjson.Fragment:
        key = id(obj)
        entry = self._entries.get(key)
        if entry is not None and entry[0]() is obj:
            return entry[1]
        fragment = orjson.Fragment(orjson.dumps(render(obj)))
        self._entries[key] = (weakref.ref(obj, lambda _, key=key: self._forget(key)), fragment)
        return fragment

    def _forget(self, key: int) -> None:
        entry = self._entries.get(key)
        if entry is not None and entry[0]() is None:  # the id may already belong to a newer object
            del self._entries[key]

    def node(self, node) -> orjson.Fragment:
        return self._get(node, daos.node)

    def application(self, app) -> orjson.Fragment:
        return self._get(app, daos.application)
