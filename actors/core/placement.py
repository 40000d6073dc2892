"""Placement rules: which queue an application goes to.

Rules are tried in order; the first that yields a usable queue wins. A usable queue is an existing
leaf that is not draining and admits the submitter, or (with ``create``) a leaf that may be created
under a parent that admits them. When every rule fails, ``root.default`` is used if it is usable;
an application tagged ``application.create.force=true`` goes to ``root.@recovery@``; anything else is
rejected with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from actors.core.config import QUEUE_NAME, FilterConfig, PlacementRuleConfig
from si.constants import APP_TAG_CREATE_FORCE, RECOVERY_QUEUE

DEFAULT_QUEUE = "root.default"


class QueueDirectory(Protocol):
    def exists(self, path: str) -> bool: ...
    def is_leaf(self, path: str) -> bool: ...
    def is_draining(self, path: str) -> bool: ...
    def submit_allowed(self, path: str, user: str, groups: Sequence[str]) -> bool: ...
    def can_create(self, path: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class AppPlacementInfo:
    application_id: str
    queue_name: str
    user: str
    groups: tuple[str, ...] = ()
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Placement:
    queue_path: str
    create: bool


class PlacementRejected(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _qualified(name: str, parent: str = "root") -> str:
    return name if name.lower().startswith("root.") or name.lower() == "root" else f"{parent}.{name}"


def _valid(path: str) -> bool:
    parts = path.split(".")
    return parts[0] == "root" and all(QUEUE_NAME.match(p) for p in parts[1:])


class _Filter:
    def __init__(self, config: FilterConfig | None) -> None:
        self.deny = config is not None and config.type == "deny"
        self.users = self._matcher(config.users if config else ())
        self.groups = self._matcher(config.groups if config else ())
        self.empty = not (config and (config.users or config.groups))

    @staticmethod
    def _matcher(entries: tuple[str, ...]):
        if len(entries) == 1 and re.escape(entries[0]) != entries[0]:
            pattern = re.compile(f"^(?:{entries[0]})$")
            return lambda name: bool(pattern.match(name))
        names = set(entries)
        return lambda name: name in names

    def admits(self, user: str, groups: Sequence[str]) -> bool:
        if self.empty:
            return True
        listed = self.users(user) or any(self.groups(g) for g in groups)
        return not listed if self.deny else listed


class _Rule:
    def __init__(self, config: PlacementRuleConfig) -> None:
        self.config = config
        self.filter = _Filter(config.filter)
        self.parent = _Rule(config.parent) if config.parent else None

    def queue(self, app: AppPlacementInfo, queues: QueueDirectory) -> str | None:
        """The queue this rule names for ``app``, or None when it does not apply."""
        if not self.filter.admits(app.user, app.groups):
            return None
        parent = "root"
        if self.parent is not None:
            parent = self.parent.queue(app, queues)
            if parent is None or (queues.exists(parent) and queues.is_leaf(parent)):
                return None
            if not queues.exists(parent) and not (self.parent.config.create and queues.can_create(parent)):
                return None
        name = self.config.name
        if name == "provided":
            return _qualified(app.queue_name, parent) if app.queue_name else None
        if name == "user":
            return f"{parent}.{app.user.replace('.', '_dot_')}" if app.user else None
        if name == "tag":
            value = app.tags.get(self.config.value, "")
            return _qualified(value, parent) if value else None
        if name == "fixed":
            return _qualified(self.config.value, parent)
        return None


class PlacementManager:
    def __init__(self, rules: tuple[PlacementRuleConfig, ...]) -> None:
        self.configs = rules or (PlacementRuleConfig("provided"),)
        self._rules = [_Rule(r) for r in self.configs]

    def place(self, app: AppPlacementInfo, queues: QueueDirectory) -> Placement:
        for rule in self._rules:
            path = rule.queue(app, queues)
            if path is None or not _valid(path):
                continue
            placement = self._usable(path, rule.config.create, app, queues)
            if placement is not None:
                return placement
        default = self._usable(DEFAULT_QUEUE, False, app, queues)
        if default is not None:
            return default
        if app.tags.get(APP_TAG_CREATE_FORCE, "").lower() == "true":
            return Placement(RECOVERY_QUEUE, not queues.exists(RECOVERY_QUEUE))
        requested = f" (requested queue {app.queue_name!r})" if app.queue_name else ""
        raise PlacementRejected(f"application rejected: no placement rule matched{requested}")

    @staticmethod
    def _usable(path: str, create: bool, app: AppPlacementInfo, queues: QueueDirectory) -> Placement | None:
        if queues.exists(path):
            if queues.is_leaf(path) and not queues.is_draining(path) and queues.submit_allowed(path, app.user, app.groups):
                return Placement(path, False)
            return None
        if create and queues.can_create(path) and queues.submit_allowed(path, app.user, app.groups):
            return Placement(path, True)
        return None

    def describe(self) -> list[dict]:
        """The active rules as REST shows them, the implicit recovery rule last."""
        described = [_describe(r) for r in self.configs]
        described.append({"name": "recovery", "parameters": {"queue": RECOVERY_QUEUE}})
        return described


def _describe(rule: PlacementRuleConfig) -> dict:
    entry: dict = {"name": rule.name, "parameters": {"create": str(rule.create).lower()}}
    if rule.value:
        entry["parameters"]["value"] = rule.value
    if rule.filter:
        entry["filter"] = {"type": rule.filter.type, "userList": list(rule.filter.users),
                           "groupList": list(rule.filter.groups)}
    if rule.parent:
        entry["parentRule"] = _describe(rule.parent)
    return entry
