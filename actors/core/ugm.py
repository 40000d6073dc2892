"""User and group limits: how much each user and each group may run, per queue along the path.

``limits`` sit on the partition (they apply at ``root``) and on any queue. At one queue a user is held
to the limit that names them, else to the wildcard (``*``) user limit. An application is also tracked
against one group of its user: going from the leaf up to the root, the first queue whose limits name
one of the user's groups decides (the group named first in the configuration wins); a queue with only
a wildcard group limit resolves to the shared ``*`` group. A group is held, at each queue, to the limit
that names it. Limits apply at every queue of the path, each user and group on its own (never added
together). An application over a limit waits for headroom; it is not rejected.

Usage is kept per user and per group at every queue of the application's path, so ``headroom`` and
``allocated`` (called per allocation) cost O(depth).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from actors.base import record
from actors.core.acl import WILDCARD
from actors.core.config import ROOT, LimitConfig, PartitionConfig, QueueConfig
from si.resources import Resource, min_limit, remaining

_GROUP_CACHE_SIZE = 10_000


@lru_cache(maxsize=4096)
def _prefixes(path: str) -> tuple[str, ...]:
    """``root.a.b`` -> ``("root", "root.a", "root.a.b")``."""
    parts = path.split(".")
    return tuple(".".join(parts[: i + 1]) for i in range(len(parts)))


@record
class _Level:
    """The limits configured at one queue, indexed for lookup."""

    users: dict[str, LimitConfig]
    user_wildcard: LimitConfig | None
    groups: dict[str, LimitConfig]  # includes "*" when a wildcard group limit exists
    group_order: tuple[str, ...]  # named groups in configuration order

    @classmethod
    def of(cls, limits: tuple[LimitConfig, ...]) -> _Level:
        users: dict[str, LimitConfig] = {}
        groups: dict[str, LimitConfig] = {}
        for limit in limits:
            for user in limit.users:
                users.setdefault(user, limit)
            for group in limit.groups:
                groups.setdefault(group, limit)
        wildcard = users.pop(WILDCARD, None)
        return cls(users, wildcard, groups, tuple(g for g in groups if g != WILDCARD))

    def user_limit(self, user: str) -> LimitConfig | None:
        return self.users.get(user, self.user_wildcard)


@dataclass(slots=True)
class _Usage:
    resource: Resource = field(default_factory=Resource)
    apps: set[str] = field(default_factory=set)


@dataclass(slots=True)
class _App:
    user: str
    group: str | None
    queue_path: str
    holds: Resource = field(default_factory=Resource)


class UsageTracker:
    """Usage and limits of the users and groups of one partition (owned by the partition actor)."""

    def __init__(self, partition: PartitionConfig) -> None:
        self._levels: dict[str, _Level] = {}
        self._group_of: dict[tuple[tuple[str, ...], str], str | None] = {}
        self._users: dict[str, dict[str, _Usage]] = {}
        self._groups: dict[str, dict[str, _Usage]] = {}
        self._apps: dict[str, _App] = {}
        self.reconfigure(partition)

    def reconfigure(self, partition: PartitionConfig) -> None:
        """Take the limits of ``partition``; running applications keep the group they were tracked under."""
        levels: dict[str, tuple[LimitConfig, ...]] = {ROOT: partition.limits} if partition.limits else {}

        def walk(queue: QueueConfig, path: str) -> None:
            if queue.limits:
                levels[path] = levels.get(path, ()) + queue.limits
            for child in queue.queues:
                walk(child, f"{path}.{child.name}")

        walk(partition.root, ROOT)
        self._levels = {path: _Level.of(limits) for path, limits in levels.items()}
        self._group_of = {}

    def group_for(self, groups: Sequence[str], queue_path: str) -> str | None:
        """The group an application of a user with ``groups`` is tracked under in ``queue_path``."""
        key = (tuple(groups), queue_path)
        if key not in self._group_of:
            if len(self._group_of) >= _GROUP_CACHE_SIZE:
                self._group_of.clear()
            self._group_of[key] = self._resolve_group(key[0], queue_path)
        return self._group_of[key]

    def _resolve_group(self, groups: tuple[str, ...], queue_path: str) -> str | None:
        if not groups:
            return None
        for path in reversed(_prefixes(queue_path)):
            level = self._levels.get(path)
            if level is None:
                continue
            for group in level.group_order:
                if group in groups:
                    return group
            if WILDCARD in level.groups:
                return WILDCARD
        return None

    def _applicable(self, user: str, group: str | None, path: str):
        """(limit, usage) pairs that bind ``user`` and ``group`` at ``path``."""
        level = self._levels.get(path)
        if level is None:
            return
        limit = level.user_limit(user)
        if limit is not None:
            yield limit, self._users.get(user, {}).get(path)
        if group is not None:
            limit = level.groups.get(group)
            if limit is not None:
                yield limit, self._groups.get(group, {}).get(path)

    # Questions asked while scheduling.
    def headroom(self, user: str, groups: Sequence[str], queue_path: str) -> Resource | None:
        """What the user may still allocate in ``queue_path`` under user and group limits (None: no limit)."""
        if not self._levels:  # asked for every application the cycle tries: most partitions set no limits
            return None
        group = self.group_for(groups, queue_path)
        headroom: Resource | None = None
        for path in _prefixes(queue_path):
            for limit, usage in self._applicable(user, group, path):
                if limit.max_resources is not None:
                    used = usage.resource if usage is not None else Resource()
                    headroom = min_limit(headroom, remaining(limit.max_resources, used))
        return headroom

    def can_run_app(self, user: str, groups: Sequence[str], queue_path: str, app_id: str = "") -> bool:
        """Whether one more application (or ``app_id``, if already counted) stays within maxapplications."""
        if not self._levels:
            return True
        group = self.group_for(groups, queue_path)
        for path in _prefixes(queue_path):
            for limit, usage in self._applicable(user, group, path):
                if limit.max_applications is None or usage is None or app_id in usage.apps:
                    continue
                if len(usage.apps) >= limit.max_applications:
                    return False
        return True

    # Book keeping.
    def app_started(self, app_id: str, user: str, groups: Sequence[str], queue_path: str) -> None:
        """``app_id`` runs from now on and counts against its user's and group's limits."""
        if app_id in self._apps:
            return
        group = self.group_for(groups, queue_path)
        self._apps[app_id] = _App(user, group, queue_path)
        for path in _prefixes(queue_path):
            self._users.setdefault(user, {}).setdefault(path, _Usage()).apps.add(app_id)
            if group is not None:
                self._groups.setdefault(group, {}).setdefault(path, _Usage()).apps.add(app_id)

    def tracks(self, app_id: str) -> bool:
        """True while ``app_id`` counts as running here."""
        return app_id in self._apps

    def app_removed(self, app_id: str) -> None:
        """``app_id`` stopped: it no longer counts, and whatever it still held is given back."""
        app = self._apps.get(app_id)
        if app is None:
            return
        if not app.holds.is_zero():
            self._add(app_id, -app.holds)
        del self._apps[app_id]
        for table, name in ((self._users, app.user), (self._groups, app.group)):
            by_path = table.get(name) if name is not None else None
            if by_path is None:
                continue
            for path in _prefixes(app.queue_path):
                usage = by_path.get(path)
                if usage is not None:
                    usage.apps.discard(app_id)
                    if not usage.apps and usage.resource.is_zero():
                        del by_path[path]
            if not by_path:
                del table[name]

    def allocated(self, app_id: str, resource: Resource) -> None:
        self._add(app_id, resource)

    def released(self, app_id: str, resource: Resource) -> None:
        self._add(app_id, -resource)

    def _add(self, app_id: str, resource: Resource) -> None:
        app = self._apps.get(app_id)
        if app is None:
            return
        app.holds = app.holds + resource
        paths = _prefixes(app.queue_path)
        self._add_to(self._users, app.user, paths, resource)
        if app.group is not None:
            self._add_to(self._groups, app.group, paths, resource)

    @staticmethod
    def _add_to(table: dict[str, dict[str, _Usage]], name: str, paths: tuple[str, ...], resource: Resource) -> None:
        by_path = table.get(name)
        if by_path is None:
            by_path = table[name] = {}
        for path in paths:
            usage = by_path.get(path)
            if usage is None:  # not made for setdefault on every allocation: the usage is there but once
                usage = by_path[path] = _Usage()
            usage.resource = usage.resource + resource

    # REST views.
    def users(self) -> list[dict]:
        """Per user: the group of each running application and the usage at each queue."""
        app_groups: dict[str, dict[str, str]] = {}
        for app_id, app in sorted(self._apps.items()):
            app_groups.setdefault(app.user, {})[app_id] = app.group or ""
        return [{"userName": user, "groups": app_groups.get(user, {}),
                 "queues": self._queues_view(by_path, lambda level, u=user: level.user_limit(u))}
                for user, by_path in sorted(self._users.items())]

    def groups(self) -> list[dict]:
        """Per group: its running applications and the usage at each queue."""
        group_apps: dict[str, list[str]] = {}
        for app_id, app in sorted(self._apps.items()):
            if app.group is not None:
                group_apps.setdefault(app.group, []).append(app_id)
        return [{"groupName": group, "applications": group_apps.get(group, []),
                 "queues": self._queues_view(by_path, lambda level, g=group: level.groups.get(g))}
                for group, by_path in sorted(self._groups.items())]

    def _queues_view(self, by_path: dict[str, _Usage], limit_at) -> dict | None:
        """The usage from root down, each queue with its ``children`` (upstream's ResourceUsage tree)."""
        entries: dict[str, dict] = {}
        for path, usage in sorted(by_path.items()):  # a parent sorts before its children
            level = self._levels.get(path)
            limit = limit_at(level) if level is not None else None
            entry = entries[path] = {
                "queuePath": path, "resourceUsage": usage.resource.as_dict(),
                "runningApplications": sorted(usage.apps),
                "maxResources": limit.max_resources.as_dict() if limit and limit.max_resources else None,
                "maxApplications": limit.max_applications if limit else None, "children": []}
            parent = entries.get(path.rpartition(".")[0])
            if parent is not None:
                parent["children"].append(entry)
        return entries.get("root")
