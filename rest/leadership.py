"""Leader election as the REST API shows it: readiness and the ``yunikorn_leader`` gauge.

With leader election both schedulers of a pair serve the API. A standby is alive but not ready
(``/ws/v1/health/ready`` answers 503 with ``"standby": true``, whether it is ``warm`` (recovered
ahead), and the leader's identity), so anything routed by readiness reaches the leader. Asked ``?standby=ready`` (the
chart's kubelet probe), a warm standby answers 200: the pair is then two Ready pods, which rolling
updates and a PodDisruptionBudget need, and the chart's Service routes by the leader's pod label. The process entry
point gives :class:`~rest.app.SchedulerView` a callable returning the elector's ``Leadership``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from rest.metrics import NAMESPACE, Family, MetricsInput


class Leadership(Protocol):
    """This candidate's identity, whether it leads, and who leads (``actors.shim.election.Leadership``)."""

    @property
    def identity(self) -> str: ...

    @property
    def leading(self) -> bool: ...

    @property
    def leader(self) -> str: ...

    @property
    def warm(self) -> bool: ...


LeadershipSource = Callable[[], Leadership]


def readiness(source: LeadershipSource | None) -> dict:
    """What the readiness answer adds: nothing without leader election; else the identities, and
    ``standby`` (not ready) unless this scheduler leads."""
    if source is None:
        return {}
    status = source()
    found = {"identity": status.identity, "leader": status.leader}
    if not status.leading:
        found["standby"] = True
        found["warm"] = status.warm
        found["reason"] = (f"standby: {status.leader} leads" if status.leader
                           else "standby: waiting for the lease")
    return found


def families(source: LeadershipSource) -> Callable[[MetricsInput], Iterable[Family]]:
    """A metrics provider: ``yunikorn_leader{identity}`` is 1 on the leader, 0 on a standby."""

    def provide(data: MetricsInput) -> Iterable[Family]:
        status = source()
        yield Family(f"{NAMESPACE}_leader", "gauge", "1 when this scheduler holds the leader election lease, "
                     "else 0 (a standby)", ("identity",)).add([status.identity], 1 if status.leading else 0)

    return provide
