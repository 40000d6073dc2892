"""Placement rules: which queue an application goes to.

The configured rules are tried in order (only ``provided`` when none are configured). A rule names a
fully qualified queue path or passes:

* ``provided``: the queue the application asked for; ``user``: the submitting user; ``tag``: the value
  of the application tag named by ``value`` (``namespace``, say); ``fixed``: the queue in ``value``.
* A name that is not already a full path (``root.``...) goes under the queue its ``parent`` rule names
  (else under ``root``); dots in a user, tag or requested name become ``_dot_`` so one name stays one
  queue. A ``fixed`` value keeps its dots: it is a path.
* A ``filter`` (``allow`` or ``deny``; a list of users or groups, or one regular expression) decides
  which submitters the rule applies to.
* Without ``create`` the queue must exist.

A named queue is used when it is a leaf, not draining and open to the submitter (a queue that does not
exist yet is judged by its nearest existing ancestor, and must be creatable). Otherwise the next rule is
tried. After the last rule an application tagged ``application.create.force=true`` (one that was
already running before a restart) goes to ``root.@recovery@``; any other goes to ``root.default`` when
that is usable, or is rejected.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from actors.base import record
from actors.core.acl import ACL, GROUP_NAME, USER_NAME
from actors.core.config import (
    QUEUE_NAME,
    ROOT,
    FilterConfig,
    PartitionConfig,
    PlacementRuleConfig,
    QueueConfig,
)
from si.constants import APP_TAG_CREATE_FORCE, RECOVERY_QUEUE

DEFAULT_QUEUE = "root.default"
DOT_REPLACEMENT = "_dot_"
NO_RULE_MATCHED = "application rejected: no placement rule matched"


class QueueDirectory(Protocol):
    """What placement needs to know about a partition's queues (paths are fully qualified)."""

    def exists(self, path: str) -> bool: ...

    def is_leaf(self, path: str) -> bool: ...

    def is_draining(self, path: str) -> bool: ...

    def submit_allowed(self, path: str, user: str, groups: Sequence[str]) -> bool:
        """Submit or admin ACL of the queue or an ancestor admits the user; a missing queue is judged by
        its nearest existing ancestor."""
        ...

    def can_create(self, path: str) -> bool:
        """``path`` does not exist and its nearest existing ancestor is an active parent queue."""
        ...


@dataclass(frozen=True, slots=True)
class AppPlacementInfo:
    application_id: str
    queue_name: str
    user: str
    groups: tuple[str, ...] = ()
    tags: Mapping[str, str] = field(default_factory=dict)


@record
class Placement:
    """Where the application goes; ``create``: the caller creates that leaf (and missing parents)."""

    queue_path: str
    create: bool


class PlacementRejected(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _is_qualified(name: str) -> bool:
    return name == ROOT or name.startswith(ROOT + ".")


def _is_valid_path(path: str) -> bool:
    parts = path.split(".")
    return parts[0] == ROOT and len(parts) > 1 and all(
        QUEUE_NAME.match(part) and part.lower() != ROOT for part in parts[1:])


class _Filter:
    """Which submitters a rule applies to; a lone entry that is not a plain name is a regular expression."""

    def __init__(self, config: FilterConfig | None) -> None:
        self.allow = config is None or config.type != "deny"
        self.empty = config is None or not (config.users or config.groups)
        self.user_matches = self._matcher(config.users if config else (), USER_NAME)
        self.group_matches = self._matcher(config.groups if config else (), GROUP_NAME)

    @staticmethod
    def _matcher(entries: tuple[str, ...], plain_name: re.Pattern):
        if len(entries) == 1 and not plain_name.match(entries[0]):
            return re.compile(entries[0]).search  # unanchored, as upstream matches
        return frozenset(entries).__contains__

    def admits(self, user: str, groups: Sequence[str]) -> bool:
        if self.empty:
            return self.allow
        if self.user_matches(user) or any(self.group_matches(group) for group in groups):
            return self.allow
        return not self.allow


class _Rule:
    def __init__(self, config: PlacementRuleConfig) -> None:
        self.config = config
        self.filter = _Filter(config.filter)
        self.parent = _Rule(config.parent) if config.parent is not None else None

    def target(self, app: AppPlacementInfo, queues: QueueDirectory) -> str | None:
        """The fully qualified queue this rule names for ``app``, or None when it does not apply."""
        if not self.filter.admits(app.user, app.groups):
            return None
        name = self._name(app)
        if not name:
            return None
        if not _is_qualified(name):
            parent = self._parent_path(app, queues)
            if parent is None:
                return None
            name = f"{parent}.{name}"
        if not self.config.create and not queues.exists(name):
            return None
        return name

    def _name(self, app: AppPlacementInfo) -> str:
        """The queue name or path the rule takes from the application or the configuration."""
        kind = self.config.name
        if kind == "fixed":
            return self.config.value
        if kind == "user":
            return app.user.replace(".", DOT_REPLACEMENT)
        raw = app.queue_name if kind == "provided" else _tag(app.tags, self.config.value)
        return raw if _is_qualified(raw) else raw.replace(".", DOT_REPLACEMENT)

    def _parent_path(self, app: AppPlacementInfo, queues: QueueDirectory) -> str | None:
        if self.parent is None:
            return ROOT
        parent = self.parent.target(app, queues)
        if parent is not None and queues.exists(parent) and queues.is_leaf(parent):
            raise PlacementRejected(f"application rejected: parent rule returned a leaf queue: {parent}")
        return parent


def _tag(tags: Mapping[str, str], name: str) -> str:
    """The tag ``name`` (lower case in the configuration) whatever case the application used."""
    value = tags.get(name)
    if value is None:
        value = next((v for k, v in tags.items() if k.lower() == name), "")
    return value


class PlacementManager:
    """Places applications by the rules of one partition."""

    def __init__(self, rules: tuple[PlacementRuleConfig, ...]) -> None:
        self.configs = rules or (PlacementRuleConfig("provided"),)
        self._rules = tuple(_Rule(r) for r in self.configs)

    def place(self, app: AppPlacementInfo, queues: QueueDirectory) -> Placement:
        """The queue for ``app``; raises :class:`PlacementRejected` with the reason when there is none."""
        forced = app.tags.get(APP_TAG_CREATE_FORCE, "").lower() == "true"
        try:
            for rule in self._rules:
                path = rule.target(app, queues)
                if path is not None and _is_valid_path(path) and _usable(path, app, queues):
                    return Placement(path, not queues.exists(path))
        except PlacementRejected:
            if not forced:  # an application that already runs is never turned away
                raise
        if forced:
            return Placement(RECOVERY_QUEUE, not queues.exists(RECOVERY_QUEUE))
        if queues.exists(DEFAULT_QUEUE) and _usable(DEFAULT_QUEUE, app, queues):
            return Placement(DEFAULT_QUEUE, False)
        requested = f" (requested queue {app.queue_name!r})" if app.queue_name else ""
        raise PlacementRejected(f"{NO_RULE_MATCHED}{requested}")

    def describe(self) -> list[dict]:
        """The active rules as the REST API shows them, the implicit recovery rule last."""
        return [*(_describe(r) for r in self.configs), {"name": "recovery", "parameters": {"queue": RECOVERY_QUEUE}}]


def _usable(path: str, app: AppPlacementInfo, queues: QueueDirectory) -> bool:
    if queues.exists(path):
        if not queues.is_leaf(path) or queues.is_draining(path):
            return False
    elif not queues.can_create(path):
        return False
    return queues.submit_allowed(path, app.user, app.groups)


def _describe(rule: PlacementRuleConfig) -> dict:
    parameters = {"create": str(rule.create).lower()}
    if rule.name == "tag":
        parameters["tagName"] = rule.value
    elif rule.name == "fixed":
        parameters["queue"] = rule.value
    entry: dict = {"name": rule.name, "parameters": parameters}
    if rule.filter is not None:
        entry["filter"] = _describe_filter(rule.filter)
    if rule.parent is not None:
        entry["parentRule"] = _describe(rule.parent)
    return entry


def _describe_filter(config: FilterConfig) -> dict:
    described: dict = {"type": config.type}
    for entries, pattern, list_key, exp_key in ((config.users, USER_NAME, "userList", "userExp"),
                                                (config.groups, GROUP_NAME, "groupList", "groupExp")):
        if len(entries) == 1 and not pattern.match(entries[0]):
            described[exp_key] = entries[0]
        elif entries:
            described[list_key] = list(entries)
    return described


class StaticQueueDirectory:
    """The :class:`QueueDirectory` of a partition as configured: no dynamic queues, nothing draining.

    Lets placement be tried against a configuration alone (a validator, a test).
    """

    def __init__(self, partition: PartitionConfig) -> None:
        self._queues: dict[str, QueueConfig] = {}
        self._acls: dict[str, tuple[ACL, ACL]] = {}

        def walk(queue: QueueConfig, path: str) -> None:
            self._queues[path] = queue
            self._acls[path] = (ACL.parse(queue.submit_acl), ACL.parse(queue.admin_acl))
            for child in queue.queues:
                walk(child, f"{path}.{child.name}")

        walk(partition.root, ROOT)

    def exists(self, path: str) -> bool:
        return path in self._queues

    def is_leaf(self, path: str) -> bool:
        return self._queues[path].is_leaf

    def is_draining(self, path: str) -> bool:
        return False

    def submit_allowed(self, path: str, user: str, groups: Sequence[str]) -> bool:
        for ancestor in self._ancestors(self._nearest(path)):
            submit, admin = self._acls[ancestor]
            if submit.allows(user, groups) or admin.allows(user, groups):
                return True
        return False

    def can_create(self, path: str) -> bool:
        if path in self._queues or not _is_valid_path(path):
            return False
        return not self._queues[self._nearest(path)].is_leaf

    def _nearest(self, path: str) -> str:
        while path not in self._queues and "." in path:
            path = path.rsplit(".", 1)[0]
        return path if path in self._queues else ROOT

    @staticmethod
    def _ancestors(path: str):
        while True:
            yield path
            if "." not in path:
                return
            path = path.rsplit(".", 1)[0]
