"""What an operator sees of the actor system: live actors by kind, and each dispatcher's load."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import pykka

from actors.dispatch import DispatcherStats, running_dispatchers


@dataclass(frozen=True, slots=True)
class ActorCensus:
    actors: Mapping[str, int]
    dispatchers: tuple[DispatcherStats, ...]


def kind_of(actor_class: type) -> str:
    """An actor class's ``kind`` (e.g. ``node``), else its name in lower case."""
    return getattr(actor_class, "kind", "") or actor_class.__name__.lower()


def take_census() -> ActorCensus:
    kinds = Counter(kind_of(ref.actor_class) for ref in pykka.ActorRegistry.get_all())
    return ActorCensus(dict(kinds), tuple(d.stats() for d in running_dispatchers()))
