"""Resource arithmetic: immutable, sparse vectors of int64 quantities keyed by resource name.

A resource type that is absent counts as zero, except where a maximum is read: a queue maximum that
does not name a type puts no limit on it (``fits_in_max``). Subtraction never clamps: a negative
component stays visible, so an over-release is caught by whoever checks ``has_negative``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from si import si_pb2
from si.quantity import from_kubernetes


class Resource(Mapping[str, int]):
    """An immutable resource vector; ``Resource({"vcore": 1000, "memory": 2**30})``."""

    __slots__ = ("_q",)

    def __init__(self, quantities: Mapping[str, int] | None = None) -> None:
        self._q: dict[str, int] = dict(quantities) if quantities else {}

    @classmethod
    def _owning(cls, quantities: dict[str, int]) -> Resource:
        """A vector over a dict nobody else holds (no copy: arithmetic builds many of them)."""
        resource = object.__new__(cls)
        resource._q = quantities
        return resource

    @classmethod
    def of(cls, **quantities: int) -> Resource:
        """Keyword shorthand: ``Resource.of(vcore=1000, memory=1024)``."""
        return cls(quantities)

    @classmethod
    def from_proto(cls, message: si_pb2.Resource | None) -> Resource:
        if message is None:
            return ZERO
        quantities = message.resources  # indexed by key: a protobuf map's items() is Mapping's generic view, slower
        return cls._owning({name: quantities[name].value for name in quantities})

    @classmethod
    def from_kubernetes(cls, resources: Mapping[str, str | int | float] | None) -> Resource:
        """From a Kubernetes resource list (``cpu`` becomes ``vcore`` millicores)."""
        return cls(from_kubernetes(resources))

    def to_proto(self) -> si_pb2.Resource:
        message = si_pb2.Resource()
        for name, value in self._q.items():
            message.resources[name].value = value
        return message

    def as_dict(self) -> dict[str, int]:
        """A fresh plain dict (the REST and JSON view)."""
        return dict(self._q)

    # Mapping protocol: a missing type reads as zero.
    def __getitem__(self, name: str) -> int:
        return self._q.get(name, 0)

    def __iter__(self) -> Iterator[str]:
        return iter(self._q)

    def __len__(self) -> int:
        return len(self._q)

    def __contains__(self, name: object) -> bool:
        return name in self._q

    # Direct views: the Mapping mixins go through __iter__/__getitem__ and cost several times more.
    def get(self, name: str, default: int | None = None) -> int | None:
        return self._q.get(name, default)

    def keys(self):
        return self._q.keys()

    def values(self):
        return self._q.values()

    def items(self):
        return self._q.items()

    def __eq__(self, other: object) -> bool:
        """Equal when every type has the same value, a missing type counting as zero."""
        if other is self or (type(other) is Resource and other._q == self._q):
            return True  # the usual case, cheaply: records of one workload share their resource
        if not isinstance(other, Mapping):
            return NotImplemented
        for name in self._q.keys() | other.keys():
            if self._q.get(name, 0) != other.get(name, 0):
                return False
        return True

    def __hash__(self) -> int:
        return hash(frozenset((k, v) for k, v in self._q.items() if v))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in sorted(self._q.items()))
        return f"Resource({inner})"

    # Arithmetic.
    # The scheduler adds and subtracts several vectors per allocation: these read the other's dict and
    # build the result without a Python call of their own.
    def __add__(self, other: Mapping[str, int]) -> Resource:
        result = self._q.copy()
        get = result.get
        for name, value in (other._q if other.__class__ is Resource else other).items():
            result[name] = get(name, 0) + value
        resource = _new(Resource)
        resource._q = result
        return resource

    def __sub__(self, other: Mapping[str, int]) -> Resource:
        result = self._q.copy()
        get = result.get
        for name, value in (other._q if other.__class__ is Resource else other).items():
            result[name] = get(name, 0) - value
        resource = _new(Resource)
        resource._q = result
        return resource

    def __neg__(self) -> Resource:
        return Resource._owning({k: -v for k, v in self._q.items()})

    def multiply(self, factor: int) -> Resource:
        return Resource._owning({k: v * factor for k, v in self._q.items()})

    def is_zero(self) -> bool:
        """True when no component is non-zero (an empty vector is zero)."""
        return not any(self._q.values())

    def has_negative(self) -> bool:
        values = self._q.values()  # min in C: a generator's step per value cost more (every allocation asks)
        return bool(values) and min(values) < 0

    def negative_components(self) -> dict[str, int]:
        return {k: v for k, v in self._q.items() if v < 0}

    def without_zeros(self) -> Resource:
        return Resource._owning({k: v for k, v in self._q.items() if v})

    def fits_in(self, capacity: Mapping[str, int]) -> bool:
        """Every positive component fits; a type missing from ``capacity`` has none of it (a node)."""
        get = capacity.get
        for name, value in self._q.items():
            if value > 0 and value > get(name, 0):
                return False
        return True

    def fits_in_max(self, maximum: Mapping[str, int] | None) -> bool:
        """Every component fits; a type missing from ``maximum`` is unlimited (a queue or user max)."""
        if maximum is None:
            return True
        for name, limit in maximum.items():
            if self._q.get(name, 0) > limit:
                return False
        return True

    def exceeding(self, maximum: Mapping[str, int]) -> dict[str, tuple[int, int]]:
        """The components above ``maximum`` (missing = unlimited), as ``{name: (value, limit)}``."""
        return {name: (self._q.get(name, 0), limit) for name, limit in maximum.items()
                if self._q.get(name, 0) > limit}

    def dominant_share(self, total: Mapping[str, int]) -> float:
        """The largest ``self[t] / total[t]``; a used type with no total counts as fully used."""
        share = 0.0
        for name, value in self._q.items():
            if value <= 0:
                continue
            capacity = total.get(name, 0)
            part = value / capacity if capacity > 0 else 1.0
            if part > share:
                share = part
        return share


_new = object.__new__
ZERO = Resource()


def component_min(left: Mapping[str, int], right: Mapping[str, int]) -> Resource:
    """Per type the smaller value; a type present on one side only counts as zero on the other."""
    return Resource({k: min(left.get(k, 0), right.get(k, 0)) for k in left.keys() | right.keys()})


def component_max(left: Mapping[str, int], right: Mapping[str, int]) -> Resource:
    """Per type the larger value; a type present on one side only counts as zero on the other."""
    result = dict(left)
    get = result.get
    for name, value in right.items():
        if value > get(name, 0) or name not in result:
            result[name] = max(value, 0) if name not in left else value
    for name, value in left.items():
        if value < 0 and name not in right:
            result[name] = 0
    return Resource._owning(result)


def min_limit(left: Mapping[str, int] | None, right: Mapping[str, int] | None) -> Resource | None:
    """The tighter of two maximums where a missing type (or a missing maximum) means unlimited."""
    if left is None:
        return None if right is None else Resource(right)
    if right is None:
        return Resource(left)
    result = dict(left)
    for name, value in right.items():
        result[name] = min(value, result[name]) if name in result else value
    return Resource(result)


def remaining(maximum: Mapping[str, int], used: Mapping[str, int]) -> Resource:
    """What is left of ``maximum``, for the types it limits only (the others stay unlimited)."""
    return Resource._owning({name: limit - used.get(name, 0) for name, limit in maximum.items()})


def total(resources: Iterable[Resource]) -> Resource:
    """The sum of many vectors, accumulated in one dict. The records of a workload share one vector
    (``actors.core.allocation``): when all are that one, it is multiplied instead (a node's pods mostly)."""
    resources = list(resources)
    if resources and len(set(map(id, resources))) == 1:
        return resources[0].multiply(len(resources))
    result: dict[str, int] = {}
    for resource in resources:
        for name, value in resource.items():
            result[name] = result.get(name, 0) + value
    return Resource._owning(result)
