"""Serialized JSON of snapshot objects, reused for as long as the core hands out the same object.

The core keeps a node's and an application's snapshot object from one partition snapshot to the next
while it is unchanged, so what a reader made of it can be kept too:

- a node or an application that did not change is not rendered again; one that changed is rendered
  whole, its allocations with it;
- a list of nodes (or applications) is put together from the previous list of the same name: only the
  objects that are not the very ones at the same position are looked up, and that comparison runs in C,
  so a poll of thousands of nodes of which a few changed costs about what sending them costs.

Allocations are not kept apart: on a loaded machine a separate piece per allocation (its bytes, or its
JSON object shared by its node and its application), looked up by identity, costs more than building
the allocation's JSON object again does, at 100,000 allocations as at a few.

Entries are keyed by the snapshot objects' identity, never by a time or a version alone, so a changed
object is always rendered anew: a read never shows an older state than its snapshot. An entry lives as
long as its snapshot object: a weak reference's callback drops it.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from itertools import compress, count
from operator import is_not
from typing import Any

import orjson

from rest import daos


def array(parts: Sequence[bytes]) -> bytes:
    """The JSON array of already serialized ``parts``, copied once."""
    if not parts:
        return b"[]"
    pieces = [b","] * (2 * len(parts) + 1)
    pieces[0], pieces[-1] = b"[", b"]"
    pieces[1::2] = parts
    return b"".join(pieces)


class Fragments:
    """JSON of snapshot objects, as bytes; safe to share between threads."""

    def __init__(self) -> None:
        self._objects: dict[int, tuple[weakref.ref, bytes]] = {}  # id of a node or application -> its JSON
        self._arrays: dict[Any, tuple[tuple, list[bytes]]] = {}  # name -> (objects, their JSON)

    def __len__(self) -> int:
        return len(self._objects)

    def node(self, node) -> bytes:
        return self.nodes((node,))[0]

    def application(self, app) -> bytes:
        return self.applications((app,))[0]

    def nodes(self, nodes: Sequence) -> list[bytes]:
        return self._render(nodes, daos.node)

    def applications(self, apps: Sequence) -> list[bytes]:
        return self._render(apps, daos.application)

    def _render(self, objects: Sequence, render: Callable[[Any], dict]) -> list[bytes]:
        """The JSON of each of ``objects`` (nodes or applications): kept, or rendered now."""
        entries = self._objects
        found = []
        for obj in objects:
            entry = entries.get(id(obj))
            found.append(entry[1] if entry is not None and entry[0]() is obj else None)
        missing = [obj for obj, body in zip(objects, found, strict=True) if body is None]
        if not missing:
            return found
        bodies = iter([orjson.dumps(render(obj)) for obj in missing])
        for index, body in enumerate(found):
            if body is None:
                obj, found[index] = objects[index], next(bodies)
                key = id(obj)
                entries[key] = (weakref.ref(obj, lambda _, key=key: self._forget(key)), found[index])
        return found

    def _forget(self, key: int) -> None:
        entry = self._objects.get(key)
        if entry is not None and entry[0]() is None:  # the id may already belong to a newer object
            del self._objects[key]

    def parts(self, name: Any, objects: tuple, render: Callable[[Sequence], list[bytes]]) -> list[bytes]:
        """The JSON of each of ``objects`` (``render`` gives the JSON of each of a list of them), taken
        from the last list made under ``name`` for the objects that are the same ones at the same place
        (that comparison runs in C); only the others are rendered (looked up, mostly)."""
        last = self._arrays.get(name)
        if last is not None and last[0] is objects:
            return last[1]
        if last is not None and len(last[0]) == len(objects):
            before, parts = last[0], last[1].copy()
            changed = list(compress(count(), map(is_not, objects, before)))
            for index, body in zip(changed, render([objects[i] for i in changed]), strict=True):
                parts[index] = body
        else:
            known = dict(zip(map(id, last[0]), last[1], strict=True)) if last is not None else {}
            parts = [known.get(id(obj)) for obj in objects]  # last keeps those ids taken
            missing = [i for i, body in enumerate(parts) if body is None]
            for index, body in zip(missing, render([objects[i] for i in missing]), strict=True):
                parts[index] = body
        self._arrays[name] = (objects, parts)
        return parts
