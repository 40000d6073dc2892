"""User and group limits: how much each user and group may run, per queue along the path.

A limit names users or groups (``*`` for any). For an application the user's own limit applies if one
names the user, else the wildcard; its group is the first of the user's groups a limit names (else the
wildcard group). Limits apply at every queue of the application's path, partition limits at the root.
An application over a limit waits: it is not rejected.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from actors.core.config import LimitConfig, PartitionConfig, QueueConfig
from si.resources import Resource, min_limit, remaining


def _prefixes(path: str) -> list[str]:
    parts = path.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


@dataclass(slots=True)
class _Usage:
    resource: Resource = field(default_factory=Resource)
    apps: set[str] = field(default_factory=set)


@dataclass(slots=True)
class _App:
    user: str
    group: str | None
    queue_path: str


class UsageTracker:
    def __init__(self, partition: PartitionConfig) -> None:
        self._limits: dict[str, tuple[LimitConfig, ...]] = {}
        self._users: dict[tuple[str, str], _Usage] = {}
        self._groups: dict[tuple[str, str], _Usage] = {}
        self._apps: dict[str, _App] = {}
        self.reconfigure(partition)

    def reconfigure(self, partition: PartitionConfig) -> None:
        limits: dict[str, tuple[LimitConfig, ...]] = {}

        def walk(queue: QueueConfig, path: str) -> None:
            if queue.limits:
                limits[path] = limits.get(path, ()) + queue.limits
            for child in queue.queues:
                walk(child, f"{path}.{child.name}")

        if partition.limits:
            limits["root"] = partition.limits
        walk(partition.root, "root")
        self._limits = limits

    # Which limits apply.
    def _user_limit(self, path: str, user: str) -> LimitConfig | None:
        limits = self._limits.get(path, ())
        named = next((lim for lim in limits if user in lim.users), None)
        return named or next((lim for lim in limits if "*" in lim.users), None)

    def _group_limit(self, path: str, group: str | None) -> LimitConfig | None:
        if group is None:
            return None
        return next((lim for lim in self._limits.get(path, ()) if group in lim.groups), None)

    def _resolve_group(self, groups: Sequence[str], queue_path: str) -> str | None:
        for path in _prefixes(queue_path):
            for limit in self._limits.get(path, ()):
                for group in groups:
                    if group in limit.groups:
                        return group
        if groups and any("*" in lim.groups for p in _prefixes(queue_path) for lim in self._limits.get(p, ())):
            return "*"
        return None

    # Questions asked while scheduling.
    def headroom(self, user: str, groups: Sequence[str], queue_path: str) -> Resource | None:
        """What the user may still allocate in ``queue_path`` (None: no limit)."""
        app_group = self._resolve_group(groups, queue_path)
        headroom: Resource | None = None
        for path in _prefixes(queue_path):
            if path not in self._limits:
                continue
            for limit, usage in ((self._user_limit(path, user), self._users.get((user, path))),
                                 (self._group_limit(path, app_group), self._groups.get((app_group, path)))):
                if limit is not None and limit.max_resources is not None:
                    used = usage.resource if usage else Resource()
                    headroom = min_limit(headroom, remaining(limit.max_resources, used))
        return headroom

    def can_run_app(self, user: str, groups: Sequence[str], queue_path: str, app_id: str = "") -> bool:
        app_group = self._resolve_group(groups, queue_path)
        for path in _prefixes(queue_path):
            if path not in self._limits:
                continue
            for limit, usage in ((self._user_limit(path, user), self._users.get((user, path))),
                                 (self._group_limit(path, app_group), self._groups.get((app_group, path)))):
                if limit is None or limit.max_applications is None:
                    continue
                running = usage.apps if usage else set()
                if app_id not in running and len(running) >= limit.max_applications:
                    return False
        return True

    # Book keeping.
    def app_started(self, app_id: str, user: str, groups: Sequence[str], queue_path: str) -> None:
        if app_id in self._apps:
            return
        group = self._resolve_group(groups, queue_path)
        self._apps[app_id] = _App(user, group, queue_path)
        for path in _prefixes(queue_path):
            self._users.setdefault((user, path), _Usage()).apps.add(app_id)
            if group is not None:
                self._groups.setdefault((group, path), _Usage()).apps.add(app_id)

    def tracks(self, app_id: str) -> bool:
        """True while ``app_id`` counts as running here."""
        return app_id in self._apps

    def app_removed(self, app_id: str) -> None:
        app = self._apps.pop(app_id, None)
        if app is None:
            return
        for path in _prefixes(app.queue_path):
            for table, key in ((self._users, (app.user, path)), (self._groups, (app.group, path))):
                usage = table.get(key)
                if usage is not None:
                    usage.apps.discard(app_id)
                    if not usage.apps and usage.resource.is_zero():
                        del table[key]

    def allocated(self, app_id: str, resource: Resource) -> None:
        self._add(app_id, resource)

    def released(self, app_id: str, resource: Resource) -> None:
        self._add(app_id, -resource)

    def _add(self, app_id: str, resource: Resource) -> None:
        app = self._apps.get(app_id)
        if app is None:
            return
        for path in _prefixes(app.queue_path):
            user = self._users.setdefault((app.user, path), _Usage())
            user.resource = user.resource + resource
            if app.group is not None:
                group = self._groups.setdefault((app.group, path), _Usage())
                group.resource = group.resource + resource

    # REST views.
    def users(self) -> list[dict]:
        return self._view(self._users, "userName")

    def groups(self) -> list[dict]:
        return self._view(self._groups, "groupName")

    def _view(self, table: dict, key: str) -> list[dict]:
        by_name: dict[str, list] = {}
        for (name, path), usage in sorted(table.items()):
            by_name.setdefault(name, []).append({"queuePath": path, "resourceUsage": usage.resource.as_dict(),
                                                 "runningApplications": sorted(usage.apps)})
        return [{key: name, "queues": queues} for name, queues in by_name.items()]
