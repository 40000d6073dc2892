"""Trace lines from the history store's finished applications, so last week can be replayed against a
new configuration.

An application becomes one line: submitted when it was (seconds from the earliest exported), in the
queue and as the user and groups it ran as, its pods from the allocations it held (each allocation's
resource and how long it ran, identical ones counted together) and its task groups from its
placeholders. The store keeps a bounded number of allocations in brief per application; the ones it
only counted (``allocations_untold``) are given the shape and the mean duration of those it kept.
Applications that never held an allocation (rejected, or removed while waiting) have no pod to replay
and are left out; so are allocations still held when the application finished.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from si.quantity import format_quantity

NS = 1_000_000_000
STATES = ("Completed", "Failed")


def trace_lines(applications: Iterable) -> list[dict]:
    """Trace lines (dicts) for finished applications (``si.history.FinishedApplication`` records)."""
    apps = [a for a in applications if any(not b.placeholder and b.released_at > b.allocated_at
                                            for b in a.allocations)]
    if not apps:
        return []
    origin = min(a.submission_time for a in apps)
    lines = [_line(app, origin) for app in apps]
    lines.sort(key=lambda line: (line["submit"], line["app"]))
    return lines


def _line(app, origin: int) -> dict:
    pods = Counter()
    held = [b for b in app.allocations if not b.placeholder and b.released_at > b.allocated_at]
    for brief in held:
        pods[(_quantities(brief.resource), round((brief.released_at - brief.allocated_at) / NS, 3),
              brief.task_group)] += 1
    if app.allocations_untold and held:
        mean = round(sum(b.released_at - b.allocated_at for b in held) / len(held) / NS, 3)
        shape = Counter(_quantities(b.resource) for b in held).most_common(1)[0][0]
        pods[(shape, mean, held[0].task_group)] += app.allocations_untold
    line = {"submit": round((app.submission_time - origin) / NS, 3), "app": app.application_id, "queue": app.queue,
            "user": app.user, "groups": list(app.groups),
            "pods": [{"count": count, **dict(shape), "duration": duration, **({"taskGroup": group} if group else {})}
                     for (shape, duration, group), count in sorted(pods.items())]}
    groups = [p for p in app.placeholders if p.count > 0]
    if groups:
        line["taskGroups"] = [{"name": p.task_group, "minMember": p.count, "minResource": dict(_quantities(p.min_resource))}
                              for p in groups]
        named = {p.task_group for p in groups}
        for pod in line["pods"]:
            if pod.get("taskGroup") not in named:
                pod.pop("taskGroup", None)
    return line


def _quantities(resource) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(("cpu" if name == "vcore" else name, format_quantity(name, value))
                        for name, value in resource.items() if value and name in ("vcore", "memory")))


def from_store(dsn: str, partition: str = "default", since: int | None = None, until: int | None = None,
               queue: str | None = None) -> list[dict]:
    """Trace lines of the finished applications a history store holds (``--history-dsn``)."""
    # Imported here: the history store's package and its SQL libraries are only needed for this.
    from actors.history.store import ApplicationQuery, HistoryStore

    store = HistoryStore(dsn)
    try:
        apps, offset, page = [], 0, 1000
        while True:
            batch = store.applications(ApplicationQuery(partition, STATES, queue=queue, since=since, until=until,
                                                        limit=page, offset=offset))
            apps.extend(batch)
            if len(batch) < page:
                break
            offset += page
    finally:
        store.close()
    return trace_lines(apps)
