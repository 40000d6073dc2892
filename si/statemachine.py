"""The one state-machine style of the core and the shim.

A machine is a table ``event -> (states it may fire from, state it leads to)`` whose events are the
members of one ``Enum``: an event of another machine, or a bare string, is refused like an event the
current state does not allow, with ``InvalidTransition``, and nothing changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum


class InvalidTransition(Exception):
    """An event fired in a state that does not allow it (or not an event of the machine)."""


class Transitions:
    """A transition table over the events of one ``Enum``."""

    __slots__ = ("_table", "_kind")

    def __init__(self, table: Mapping[Enum, tuple[Iterable[str], str]]) -> None:
        kinds = {type(event) for event in table}
        if len(kinds) != 1 or not issubclass(kind := kinds.pop(), Enum):
            raise TypeError("a transition table's events are the members of one Enum")
        self._kind = kind
        # Keyed by the member's name, the type checked apart: hashing a member is a Python call
        # (``Enum.__hash__``), a third of a transition's cost, and every pod's task takes a few as it recovers.
        self._table = {event.name: (frozenset(sources), target) for event, (sources, target) in table.items()}

    def _entry(self, event: Enum) -> tuple[frozenset[str], str] | None:
        return self._table.get(event._name_) if type(event) is self._kind else None

    def allows(self, state: str, event: Enum) -> bool:
        entry = self._entry(event)
        return entry is not None and state in entry[0]

    def target(self, state: str, event: Enum, what: str) -> str:
        """The state ``event`` leads to from ``state``; ``InvalidTransition`` naming ``what`` if it may not fire."""
        entry = self._entry(event)
        if entry is None:
            raise InvalidTransition(f"{what}: unknown event {event!r}")
        sources, target = entry
        if state not in sources:
            raise InvalidTransition(f"{what}: event {event.value!r} not allowed in state {state}")
        return target


class StateMachine:
    """One object's current state under a transition table."""

    __slots__ = ("state", "_transitions", "_what")

    def __init__(self, transitions: Transitions, initial: str, what: str) -> None:
        self._transitions = transitions
        self._what = what
        self.state = initial

    def can(self, event: Enum) -> bool:
        return self._transitions.allows(self.state, event)

    def fire(self, event: Enum) -> str:
        """Move to the state ``event`` leads to and return it; ``InvalidTransition`` if the current state
        does not allow ``event``."""
        self.state = self._transitions.target(self.state, event, self._what)
        return self.state
