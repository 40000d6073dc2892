"""Whether the scheduler's actors are alive, as the REST API reads it.

An actor stopped by a failure (an informer whose list/watch loop ended counts as one) does not come
back, so the process is broken for good: the health report gets a failed ``Actors`` check naming each
such actor, and both probes (liveness and readiness) answer 503, so Kubernetes restarts the pod. The REST API does not know the actors: the
process entry point gives :class:`~rest.app.SchedulerView` a callable returning the failures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from actors.core.snapshot import HealthCheck, HealthReport

CHECK = "Actors"


class ActorFailure(Protocol):
    """One actor stopped by a failure (``actors.base.ActorFailed`` has this shape)."""

    @property
    def actor(self) -> str: ...

    @property
    def error(self) -> str: ...


ActorFailures = Callable[[], Sequence[ActorFailure]]


def failures(source: ActorFailures | None) -> Sequence[ActorFailure]:
    return source() if source is not None else ()


def failed_actors(source: ActorFailures | None) -> dict[str, list[str]]:
    """``{"failedActors": [names]}`` for a probe's answer, or nothing while every actor runs."""
    names = [f.actor for f in failures(source)]
    return {"failedActors": names} if names else {}


def with_actors(report: HealthReport, source: ActorFailures | None) -> HealthReport:
    """``report`` with the ``Actors`` check added (only when there is a source to read)."""
    if source is None:
        return report
    failed = failures(source)
    diagnosis = "; ".join(f"{f.actor} stopped: {f.error}" for f in failed)
    check = HealthCheck(CHECK, not failed, "Check that every actor of the scheduler is running", diagnosis)
    return HealthReport(report.healthy and not failed, (*report.checks, check))
