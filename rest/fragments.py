"""Serialized JSON of snapshot objects, reused for as long as the core hands out the same object.

The core keeps a node's and an application's snapshot object from one partition snapshot to the next
while it is unchanged, so what a reader made of it can be kept too:

- a node or an application that did not change is not rendered again; one that changed is rendered
  anew, and so are its allocations, but for a node's name, attributes and capacity while they are the
  same (serialized once, kept with its JSON) and its allocations: while a node only gains allocations (while the
  core allocates, most nodes gain one between two polls of a dashboard), its allocations' JSON is that
  of its last rendering with only the new ones serialized and appended. A node whose earlier
  allocations are not the very same objects, in the same order, at the head of its list (one was
  removed, replaced or moved) has them all serialized again;
- a list of nodes (or applications) is put together from the previous list of the same name: only the
  objects that are not the very ones at the same position are looked up, and that comparison runs in C,
  so a poll of thousands of nodes of which a few changed costs about what sending them costs.

Allocations are not kept one by one from one answer to the next: on a loaded machine a separate piece
per allocation looked up by identity across answers costs more than building its JSON object again
does; a node's are taken as one piece from its last JSON, after a comparison by identity that runs in C.
Within one answer that renders nodes and applications (the full state dump right after a burst), each
allocation is serialized once, under its node, and its bytes are spliced under its application: an
array of allocations is serialized in one call and cut at the text between two of them, which no
allocation's JSON can hold (a quote inside a JSON string is escaped).

An entry is found again only for the very snapshot object it was made of, never by a time or a version
alone, so a changed object is always rendered anew: a read never shows an older state than its
snapshot. An entry lives until the next snapshot of its node or application is rendered, or, once that
object is gone from the core, until entries are pruned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import accumulate, compress, count
from operator import attrgetter, is_, is_not
from typing import Any

import orjson

from actors.core.nodejson import PLAIN_STATES
from rest import daos


def array(parts: Sequence[bytes]) -> bytes:
    """The JSON array of already serialized ``parts``, copied once."""
    return b"".join(array_pieces(parts).pieces)


class Pieces:
    """An answer as its bytes in order, never joined: the REST server sends them as they are (joining
    the 19 MiB of 5,000 nodes cost 11 to 13 ms a read); any other WSGI server iterates them."""

    __slots__ = ("pieces", "ends", "length")

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces
        self.ends = list(accumulate(map(len, pieces)))  # where each piece ends in the answer
        self.length = self.ends[-1] if pieces else 0

    def __iter__(self):
        return iter(self.pieces)


def array_pieces(parts: Sequence[bytes]) -> Pieces:
    """As :func:`array`, but not joined."""
    if not parts:
        return Pieces([b"[]"])
    pieces = [b","] * (2 * len(parts) + 1)
    pieces[0], pieces[-1] = b"[", b"]"
    pieces[1::2] = parts
    return Pieces(pieces)


# An array of allocations as orjson writes it: every allocation's object begins with its key.
_OPEN, _BETWEEN, _CLOSE = b'[{"allocationKey":', b'},{"allocationKey":', b'}]'


def _cut(body: bytes) -> list[bytes]:
    """The allocations of ``body``, a non-empty serialized array of them, each without the text that
    opens, closes or separates them (what :func:`_joined` puts back)."""
    pieces = body.split(_BETWEEN)
    pieces[0] = pieces[0][len(_OPEN):]
    pieces[-1] = pieces[-1][:-len(_CLOSE)]  # the same as the first when there is one
    return pieces


_ALLOCATIONS = b',"allocations":'  # what precedes a node's allocations in its JSON
_NODE_ID, _APPLICATION_ID = attrgetter("node_id"), attrgetter("application_id")


def _joined(pieces: list[bytes]) -> bytes:
    return b"".join((_OPEN, _BETWEEN.join(pieces), _CLOSE)) if pieces else b"[]"


def _spliced(allocs: Sequence, cut: dict[int, bytes]) -> bytes:
    """The JSON array of ``allocs``: the pieces ``cut`` holds, the others serialized now."""
    found = list(map(cut.get, map(id, allocs)))
    missing = [a for a, piece in zip(allocs, found, strict=True) if piece is None]
    if missing:
        fresh = iter(_cut(orjson.dumps([daos.allocation(a) for a in missing])))
        found = [piece if piece is not None else next(fresh) for piece in found]
    return _joined(found)


def _state(node) -> bytes:
    """The JSON of ``node``'s state fields without their opening brace; that of a node without foreign
    pods or reservations (most) serialized once."""
    if node.foreign_allocations or node.reservations:
        return orjson.dumps(daos.state(node))[1:]
    return PLAIN_STATES[node.schedulable]


class Fragments:
    """JSON of snapshot objects, as bytes; safe to share between threads.

    A node's or an application's JSON is kept under its name with the snapshot object it was made of:
    found again only for that very object. The entry holds the object (its name's next snapshot
    replaces it), so its identity cannot pass to another object meanwhile; no weak reference and
    callback per object (a poll of thousands of changed nodes made as many, and the collector scanned
    them all)."""

    def __init__(self) -> None:
        # node id -> (its node last rendered, that node's JSON, where in it the array of its allocations is,
        # the JSON of its first run of fields: see _node)
        self._nodes: dict[str, tuple[Any, bytes, int, int, bytes]] = {}
        self._apps: dict[str, tuple[Any, bytes]] = {}  # application id -> (its application last rendered, its JSON)
        self._arrays: dict[Any, tuple[tuple, list[bytes]]] = {}  # name -> (objects, their JSON)
        self._largest = 0  # the most objects of a list rendered: entries beyond twice as many are pruned

    def __len__(self) -> int:
        return len(self._nodes) + len(self._apps)

    def node(self, node) -> bytes:
        return self.nodes((node,))[0]

    def application(self, app) -> bytes:
        return self.applications((app,))[0]

    def nodes(self, nodes: Sequence, cut: dict[int, bytes] | None = None) -> list[bytes]:
        """``cut``: the nodes rendered now add their allocations' JSON to it, by identity."""
        return self._render(nodes, self._nodes, _NODE_ID, lambda node: self._node(node, cut))

    def _node(self, node, cut: dict[int, bytes] | None) -> bytes:
        """The JSON of ``node``; its allocations' (see the module's doc) added to ``cut`` by their
        identity if given (the caller keeps those allocations alive while it holds them).

        A node's JSON is put together in one join from the runs of fields :func:`daos.node` gives, in its
        order: the first (its name, attributes, capacity) kept with the node's entry and serialized again
        only when one of them changed, its usage, its allocations (as the module's doc says) and the rest."""
        allocs, key = node.allocations, node.node_id
        last = self._nodes.get(key)
        before = last[0] if last is not None else None
        if (before is None or before.attributes is not node.attributes or before.capacity is not node.capacity
                or before.host_name != node.host_name or before.rack_name != node.rack_name):
            identity = orjson.dumps(daos.node_identity(node))[:-1] + b","
        else:
            identity = last[4]
        usage = orjson.dumps(daos.usage(node))[1:-1]
        if before is not None and len(before.allocations) <= len(allocs) and all(map(is_, before.allocations, allocs)):
            _, json, start, stop, _ = last
            if len(allocs) == len(before.allocations):
                body = (memoryview(json)[start:stop],)
            else:
                added = orjson.dumps([daos.allocation(a) for a in allocs[len(before.allocations):]])
                body = (added,) if stop - start == 2 else (memoryview(json)[start:stop - 1], b",", added[1:])
        else:
            body = (orjson.dumps([daos.allocation(a) for a in allocs]),)
        start = len(identity) + len(usage) + len(_ALLOCATIONS)
        stop = start + sum(map(len, body))
        json = b"".join((identity, usage, _ALLOCATIONS, *body, b",", _state(node)))
        if cut is not None and allocs:
            cut.update(zip(map(id, allocs), _cut(json[start:stop]), strict=True))
        self._nodes[key] = (node, json, start, stop, identity)
        return json

    def applications(self, apps: Sequence, cut: dict[int, bytes] | None = None) -> list[bytes]:
        """``cut``: allocations serialized already, by identity; the others are serialized now."""
        def render(app) -> bytes:
            allocations = None if cut is None else orjson.Fragment(_spliced(app.allocations, cut))
            json = orjson.dumps(daos.application(app, allocations))
            self._apps[app.application_id] = (app, json)
            return json

        return self._render(apps, self._apps, _APPLICATION_ID, render)

    def _render(self, objects: Sequence, entries: dict, name: Callable, render: Callable[[Any], bytes]) -> list[bytes]:
        """The JSON of each of ``objects`` (nodes or applications): kept in ``entries`` under its ``name``
        for that very object, or made by ``render`` (which keeps it there)."""
        found = []
        for obj in objects:
            entry = entries.get(name(obj))
            found.append(entry[1] if entry is not None and entry[0] is obj else None)
        if None in found:
            for index, body in enumerate(found):
                if body is None:
                    found[index] = render(objects[index])
            self._prune(entries, objects, name)
        return found

    def _prune(self, entries: dict, objects: Sequence, name: Callable) -> None:
        """Drops the entries of objects gone (removed nodes, applications) once there are more than
        twice as many as the longest list rendered: those not among ``objects``."""
        self._largest = max(self._largest, len(objects))
        if len(entries) > 2 * self._largest + 1000:
            kept = set(map(name, objects))
            for key in list(entries):  # copied at once: other threads may add entries meanwhile
                if key not in kept:
                    entries.pop(key, None)

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
