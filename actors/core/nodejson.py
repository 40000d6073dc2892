"""Nodes and their allocations as YuniKorn's REST API spells them (upstream's DAO field names), and the
JSON of a partition's nodes as ``/ws/v1/partition/{p}/nodes`` shows them, made on the partition's thread
straight from its live nodes and allocations.

Dashboards poll that list every second while the core allocates, and between two polls most nodes
change (each gains an allocation). Made here from parts kept with the live objects, a changed node's JSON
costs less than a picture of it rendered again by the reader did, and the reader only puts the nodes'
JSON together:

- an allocation's JSON, kept with it (``Allocation.json``) until a field it shows changes: whatever
  changes such a field clears it, with the allocation's picture;
- a node's name, attributes and capacity, kept with the node's entry while it holds the same ones (it
  replaces its attributes dict and capacity whole when they change, never edits them);
- a node's allocations' JSON, appended to while it only gains allocations (see :class:`NodeJson`);
- a node's usage, kept by its capacity's vector and its usage's values; its state made anew.

Only nodes whose version changed since the last rendering are rendered again, so each JSON shows its
node as it is when the snapshot is taken: a read never sees an older state than a picture would show.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice

import orjson

from actors.core.snapshot import AllocationSnapshot, utilized

_NO_TAGS = orjson.Fragment(b"{}")
_PRIORITIES = {0: "0"}


def allocation(a: AllocationSnapshot) -> dict:
    # Once per allocation in a dump of 100,000: the tuple unpacked at once rather than read field by field.
    (key, tags, request_time, allocation_time, resource, priority, node_id, application_id, placeholder,
     task_group_name, _, _, originator, placeholder_used, preempted) = a
    return allocation_fields(key, tags.copy() if tags else _NO_TAGS, request_time, allocation_time, resource, priority,
                             node_id, application_id, placeholder, task_group_name, originator, placeholder_used,
                             preempted)


def allocation_fields(key, tags, request_time, allocation_time, resource, priority, node_id, application_id,
                      placeholder, task_group_name, originator, placeholder_used, preempted) -> dict:
    # No tags and priority 0 (the usual) shared, not built, and the resource's own dict handed to the
    # serializer, which only reads it, instead of a copy.
    delay = allocation_time - request_time
    return {"allocationKey": key, "allocationTags": tags, "requestTime": request_time,
            "allocationTime": allocation_time, "allocationDelay": delay if delay > 0 else 0,
            "resource": resource._q, "priority": _PRIORITIES.get(priority) or str(priority), "nodeId": node_id,
            "applicationId": application_id, "placeholder": placeholder, "placeholderUsed": placeholder_used,
            "taskGroupName": task_group_name, "preempted": preempted, "originator": originator}


def foreign_allocation(a: AllocationSnapshot) -> dict:
    return {"allocationKey": a.allocation_key, "allocationTags": dict(a.allocation_tags),
            "allocationTime": a.allocation_time, "resource": a.resource.as_dict(), "priority": str(a.priority),
            "nodeId": a.node_id, "preemptable": a.preemptable}


# A live allocation's JSON is made by the first read of /nodes after its booking or a change, for every
# allocation a changed node gained, so each step counts: what allocations of one application, shape,
# priority and flags share, the runs of their JSON from the resource to the node's name and from the
# application's name to the end, is serialized once and kept, and handed to the serializer as two
# fragments among the fields of its own.
SHARED_KEPT = 16384
# (resource's id, priority, application, its flags) -> (that resource, the two runs); shared by partitions
# of other threads as ``_usages`` is
_shared: dict[tuple, tuple[object, orjson.Fragment, orjson.Fragment]] = {}


def _share(key: tuple, a) -> tuple[object, orjson.Fragment, orjson.Fragment]:
    fields = orjson.dumps(allocation_fields("", _NO_TAGS, 0, 0, a.resource, a.priority, "", a.application_id,
                                            a.placeholder, a.task_group, a.originator, a.placeholder_used,
                                            a.preempted))
    # Each name below is found where the field is: inside a string a quote is escaped.
    resource, node, application = (fields.index(name) + len(name) for name in (
        b',"resource":', b',"nodeId":', b',"applicationId":'))
    kept = (a.resource, orjson.Fragment(fields[resource:node - len(b',"nodeId":')]),
            orjson.Fragment(fields[application:-1]))
    if len(_shared) >= SHARED_KEPT:
        _shared.clear()
    _shared[key] = kept
    return kept


def allocation_json(a) -> bytes:
    """The JSON of live allocation ``a`` as a node lists it, kept with it until a field it shows changes
    (its tags dict is never changed once made)."""
    resource = a.resource
    key = (id(resource), a.priority, a.application_id, a.placeholder, a.placeholder_used, a.task_group,
           a.preempted, a.originator)
    shared = _shared.get(key)
    if shared is None or shared[0] is not resource:
        shared = _share(key, a)
    requested, allocated = a.request_time, a.allocation_time
    # Kept as a copy: what orjson returns holds a page of memory (4 KiB for these 300 bytes), and while
    # it is kept the next call takes a new page, which the kernel must map (a fault per allocation).
    json = a.json = bytes(memoryview(orjson.dumps({
        "allocationKey": a.key, "allocationTags": a.tags or _NO_TAGS, "requestTime": requested,
        "allocationTime": allocated, "allocationDelay": allocated - requested if allocated > requested else 0,
        "resource": shared[1], "nodeId": a.node_id, "applicationId": shared[2]})))
    return json


# A node's fields in three runs around its allocations, in the order a node's JSON gives them: what
# rarely changes, its usage, and the rest. Each takes a live node or its picture alike.
def node_identity(n) -> dict:
    return {"nodeID": n.node_id, "hostName": n.host_name, "rackName": n.rack_name, "attributes": dict(n.attributes),
            "capacity": n.capacity.as_dict()}


def node_usage(allocated, occupied, available, utilization: dict) -> dict:
    # The vectors' own dicts handed to the serializer, which only reads them, rather than copies.
    return {"allocated": allocated._q, "occupied": occupied._q, "available": available._q, "utilized": utilization}


def node_state(foreign: list[dict], schedulable: bool, reservations: Iterable[str]) -> dict:
    return {"foreignAllocations": foreign, "foreign_allocations": foreign, "schedulable": schedulable,
            "isReserved": bool(reservations), "reservations": list(reservations)}


_ALLOCATIONS = b',"allocations":['
# The state fields of a node without foreign pods or reservations (most), without the opening brace:
# serialized once (rest.fragments ends a pictured node with them too)
PLAIN_STATES = {schedulable: orjson.dumps(node_state([], schedulable, ()))[1:] for schedulable in (False, True)}
_CLOSED = {schedulable: b"]," + state for schedulable, state in PLAIN_STATES.items()}  # ending its allocations


USAGES_KEPT = 4096
# (capacity's id, allocated's and occupied's types and values) -> (that capacity, the usage's JSON); shared
# by partitions of other threads: each step on it is atomic, and an entry is only ever the JSON of its key
_usages: dict[tuple, tuple[object, bytes]] = {}


class NodeJson:
    """The JSON of each node of a partition, rendered again only for the nodes that changed (only the
    partition's thread uses it); ``picture`` gives a live allocation's picture (the core's views keep it).

    Per node it keeps the JSON of its name, attributes and capacity, and that of its allocations, joined:
    while the node's allocations were only added to since (its ``edits`` count is the same, so none was
    removed, replaced or changed), only the ones it gained, last in its list, are looked at and appended.
    Each of the others would cost a cache miss and more: a changed node holds tens of them."""

    __slots__ = ("picture", "entries")

    def __init__(self, picture) -> None:
        self.picture = picture
        # node id -> (the node, its attributes, capacity and their JSON, its edits and allocations counted
        # at the time, its allocations' JSON: a view of them in its JSON)
        self.entries: dict[str, tuple] = {}

    def prune(self, node_ids: Iterable[str]) -> None:
        """Forget the nodes gone, once many are."""
        kept = set(node_ids)
        if len(self.entries) > 2 * len(kept) + 1000:
            self.entries = {name: entry for name, entry in self.entries.items() if name in kept}

    def render(self, node) -> bytes:
        capacity, allocated, occupied, allocations = node.capacity, node.allocated, node.occupied, node.allocations
        kept = self.entries.get(node.node_id)
        if kept is None or kept[0] is not node:
            kept = (node, None, None, b"", -1, 0, b"")
        identity = kept[3]
        if kept[1] is not node.attributes or kept[2] is not capacity:
            identity = orjson.dumps(node_identity(node))[:-1] + b","
        # Nodes of one machine type share their capacity's vector, and their usage repeats (pods of a
        # workload share a shape): its JSON is kept by those values, the capacity held so its id stays its own.
        # A vector's types (strings), then its values (integers): no pairs built, and no two vectors alike.
        used = allocated._q
        key = ((id(capacity), *used, *used.values(), None, *occupied._q, *occupied._q.values()) if occupied._q
               else (id(capacity), *used, *used.values()))
        usage = _usages.get(key)
        if usage is None or usage[0] is not capacity:
            available = capacity - allocated - occupied if occupied else capacity - allocated
            json = orjson.dumps(node_usage(allocated, occupied, available, utilized(capacity, allocated)))
            if len(_usages) >= USAGES_KEPT:
                _usages.clear()
            usage = _usages[key] = (capacity, json[1:-1] + _ALLOCATIONS)
        usage = usage[1]
        count, before = len(allocations), kept[5]
        if kept[4] == node.edits and before <= count:
            if count == before + 1:  # the usual: one gained since
                last = next(reversed(allocations.values()))
                last = last.json or allocation_json(last)
                joined = (kept[6], b",", last) if before else (last,)
            elif count > before:
                gained = list(islice(reversed(allocations.values()), count - before))
                gained.reverse()
                parts = b",".join([a.json or allocation_json(a) for a in gained])
                joined = (kept[6], b",", parts) if before else (parts,)
            else:
                joined = (kept[6],)
        else:
            joined = (b",".join([a.json or allocation_json(a) for a in allocations.values()]),)
        if node.foreign or node.held_by:
            foreign = [foreign_allocation(a.picture or self.picture(a)) for a in node.foreign.values()]
            held = (node.held_by,) if node.held_by else ()
            state = b"]," + orjson.dumps(node_state(foreign, node.schedulable, held))[1:]
        else:
            state = _CLOSED[node.schedulable]
        json = b"".join((identity, usage, *joined, state))
        self.entries[node.node_id] = (node, node.attributes, capacity, identity, node.edits, count,
                                      memoryview(json)[len(identity) + len(usage):len(json) - len(state)])
        return json
