"""The queue tree: quotas, usage, running-application counts and access, per partition."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from actors.core import config as cfg
from actors.core.acl import ACL
from actors.core.application import Application
from si import gojson
from si.constants import APP_TAG_NAMESPACE_GUARANTEED, APP_TAG_NAMESPACE_MAX_APPS, APP_TAG_NAMESPACE_QUOTA
from si.gonumber import INT64_MAX, in_range, parse_uint
from si.resources import Resource, min_limit, remaining

log = logging.getLogger(__name__)

ACTIVE, DRAINING = "Active", "Draining"


class Queue:
    __slots__ = ("name", "path", "parent", "children", "managed", "leaf", "status", "max", "guaranteed",
                 "max_apps", "properties", "submit_acl", "admin_acl", "template", "allocated", "pending",
                 "apps", "running_apps", "pending_priorities", "sort_policy", "priority_sorting", "priority_fence", "priority_offset",
                 "containers", "app_totals", "preemption_policy", "preemption_delay", "preempting", "awaiting", "quota_preemption_delay",
                 "over_max_since", "ask_backoff", "ask_backoff_delay", "share_memo", "line")

    def __init__(self, name: str, parent: Queue | None, managed: bool, leaf: bool) -> None:
        self.name = name
        self.path = f"{parent.path}.{name}" if parent else name
        self.parent = parent
        # The queue and its ancestors up to the root (a queue never moves): what each usage change walks.
        self.line: tuple[Queue, ...] = (self, *parent.line) if parent else (self,)
        self.children: dict[str, Queue] = {}
        self.managed = managed
        self.leaf = leaf
        self.status = ACTIVE
        self.allocated = Resource()
        self.pending = Resource()
        # Preemptions under way in this subtree: victims' resources still booked, and what their
        # preemptors will take once the victims are gone (see actors.core.preemption).
        self.preempting = Resource()
        self.awaiting = Resource()
        self.over_max_since = 0  # when the usage was first seen above a lowered max (ns; 0: it is not)
        self.apps: dict[str, Application] = {}
        self.share_memo: tuple | None = None  # (allocated, guaranteed, cluster, share) of the last share()
        self.running_apps = 0
        self.pending_priorities: dict[int, int] = {}  # ask priority -> pending asks, in this subtree
        # Cumulative counts for the metrics: allocations placed and released in this queue, and the
        # applications of this queue that completed, failed or were rejected.
        self.containers = {"allocated": 0, "released": 0}
        self.app_totals = {"completed": 0, "failed": 0, "rejected": 0}
        self.configure(cfg.QueueConfig(name))

    def configure(self, config: cfg.QueueConfig, inherited: cfg.QueueProperties = cfg.NO_PROPERTIES) -> None:
        """Take the queue's configuration (its properties already parsed, see ``config.parse_properties``)
        under the ``inherited`` properties (a configured queue's parent's; see ``config.inherit_properties``)."""
        self.max: Resource | None = config.resources.max
        self.guaranteed: Resource | None = config.resources.guaranteed
        self.max_apps = config.max_applications or 0
        self.properties = properties = cfg.inherit_properties(inherited, config.properties)
        self.submit_acl = ACL.parse(config.submit_acl)
        self.admin_acl = ACL.parse(config.admin_acl)
        self.template: cfg.ChildTemplate | None = config.child_template
        self.sort_policy = properties.sort_policy
        self.priority_sorting = properties.priority_sorting
        self.priority_fence = properties.priority_policy == "fence"
        self.priority_offset = properties.priority_offset
        self.preemption_policy = properties.preemption_policy
        self.preemption_delay = properties.preemption_delay
        self.quota_preemption_delay = properties.quota_preemption_delay
        self.ask_backoff = properties.ask_backoff
        self.ask_backoff_delay = properties.ask_backoff_delay

    def apply_limits(self, guaranteed: Resource | None, maximum: Resource | None, max_apps: int) -> None:
        """Limits an application brings for its dynamic queue (a namespace's annotations), as upstream:
        a maximum-applications count replaces the queue's when given; guaranteed and maximum replace both
        of the queue's resources when either is given."""
        if max_apps:
            self.max_apps = max_apps
        if guaranteed is not None or maximum is not None:
            self.guaranteed, self.max = guaranteed, maximum

    def chain(self) -> tuple[Queue, ...]:
        """The queue, its parent, and so on up to the root."""
        return self.line

    def headroom(self) -> Resource | None:
        """What may still be allocated here: min over the path of max - allocated (None: unlimited)."""
        headroom = None
        for queue in self.chain():
            if queue.max is not None:
                headroom = min_limit(headroom, remaining(queue.max, queue.allocated))
        return headroom

    def limiting_max(self, ask: Resource) -> str:
        """Why ``ask`` does not fit the headroom: the first queue on the path whose max it would break."""
        for queue in self.chain():
            if queue.max is not None:
                for name, (_, limit) in (queue.allocated + ask).exceeding(queue.max).items():
                    return f"queue {queue.path}: max {name} {limit} reached ({name} in use {queue.allocated[name]})"
        return ""

    def can_run_another_app(self) -> bool:
        return all(not q.max_apps or q.running_apps < q.max_apps for q in self.chain())

    def add_app(self, app: Application) -> None:
        self.apps[app.application_id] = app

    def remove_app(self, app: Application, outcome: str = "") -> None:
        """``app`` leaves the queue; ``outcome`` (``completed``, ``failed``) counts it for the metrics."""
        self.apps.pop(app.application_id, None)
        if outcome:
            self.app_totals[outcome] += 1

    def add_allocated(self, delta: Resource) -> None:
        for queue in self.line:
            queue.allocated = queue.allocated + delta

    def count_container(self, change: str, count: int = 1) -> None:
        """``count`` allocations were ``allocated`` or ``released`` here (the metrics' cumulative counts)."""
        self.containers[change] += count

    def add_preempting(self, delta: Resource) -> None:
        """Victims being preempted in this subtree (positive) or gone or kept after all (negative)."""
        for queue in self.chain():
            queue.preempting = queue.preempting + delta

    def add_awaiting(self, delta: Resource) -> None:
        for queue in self.chain():
            queue.awaiting = queue.awaiting + delta

    def count_pending(self, resource: Resource, priority: int, count: int) -> None:
        """``count`` pending asks of ``resource`` and ``priority`` arrived (> 0) or left (< 0) somewhere below."""
        if count == -1:  # an ask placed or gone: no negated vector is built for it
            for queue in self.line:
                queue.pending = queue.pending - resource
        else:
            delta = resource if count == 1 else resource.multiply(count)
            for queue in self.line:
                queue.pending = queue.pending + delta
        for queue in self.line:
            counts = queue.pending_priorities
            left = counts.get(priority, 0) + count
            if left:
                counts[priority] = left
            else:
                counts.pop(priority, None)

    def add_running(self, delta: int) -> None:
        for queue in self.chain():
            queue.running_apps += delta

    def submit_allowed(self, user: str, groups: Sequence[str]) -> bool:
        return any(q.submit_acl.allows(user, groups) or q.admin_acl.allows(user, groups) for q in self.chain())

    @property
    def is_empty(self) -> bool:
        return not self.apps and not self.children and self.allocated.is_zero()

    def share(self, cluster: Resource) -> float:
        """Fair-share position: allocated over guaranteed (or over the cluster when none is guaranteed)."""
        allocated, guaranteed = self.allocated, self.guaranteed
        # The cycle sorts siblings by share after each allocation, and one allocation changes one
        # sibling's: the last answer holds while the same (immutable) vectors are in place.
        memo = self.share_memo
        if memo is not None and memo[0] is allocated and memo[1] is guaranteed and memo[2] is cluster:
            return memo[3]
        basis = guaranteed if guaranteed is not None and not guaranteed.is_zero() else cluster
        share = 0.0
        for name, capacity in basis.items():
            used = allocated.get(name, 0)
            if capacity > 0 and used > 0 and used / capacity > share:
                share = used / capacity
        self.share_memo = (allocated, guaranteed, cluster, share)
        return share

    def priority(self) -> int:
        """The highest pending priority below this queue, adjusted by offsets, stopped by fences."""
        if self.leaf:
            best = max(self.pending_priorities, default=None)
        else:
            best = max((c.priority() for c in self.children.values() if c.pending_priorities), default=None)
        if best is None or self.priority_fence:
            return self.priority_offset
        return best + self.priority_offset


class QueueTree:
    """A partition's queues; implements the placement ``QueueDirectory``."""

    def __init__(self, partition: cfg.PartitionConfig) -> None:
        self.root = Queue("root", None, managed=True, leaf=False)
        self.by_path: dict[str, Queue] = {"root": self.root}
        self.apply(partition.root)

    # Configuration.
    def apply(self, root_config: cfg.QueueConfig) -> list[str]:
        """Bring the managed queues in line with ``root_config``; returns what changed (for events)."""
        changes: list[str] = []
        seen: set[str] = set()

        def walk(config: cfg.QueueConfig, queue: Queue) -> None:
            seen.add(queue.path)
            # Parents first, so a parent's change reaches the children that do not set the key.
            queue.configure(config, queue.parent.properties if queue.parent else cfg.NO_PROPERTIES)
            queue.managed = True
            queue.leaf = config.is_leaf
            if queue.status == DRAINING:
                queue.status = ACTIVE
                changes.append(f"{queue.path} active again")
            for child_config in config.queues:
                child = queue.children.get(child_config.name)
                if child is None:
                    child = self._add(child_config.name, queue, managed=True, leaf=child_config.is_leaf)
                    changes.append(f"{child.path} added")
                walk(child_config, child)

        walk(root_config, self.root)
        for path, queue in list(self.by_path.items()):
            if queue.managed and path not in seen and queue.status != DRAINING:
                queue.status = DRAINING
                changes.append(f"{path} draining")
        self.prune()
        return changes

    def _add(self, name: str, parent: Queue, managed: bool, leaf: bool) -> Queue:
        queue = Queue(name, parent, managed, leaf)
        parent.children[name] = queue
        self.by_path[queue.path] = queue
        return queue

    def prune(self) -> list[str]:
        """Remove draining and unused dynamic queues that are empty; returns the removed paths."""
        removed = []
        for path in sorted(self.by_path, key=len, reverse=True):
            queue = self.by_path[path]
            if queue is self.root or not queue.is_empty:
                continue
            if queue.status == DRAINING or not queue.managed:
                del queue.parent.children[queue.name]
                del self.by_path[path]
                removed.append(path)
        return removed

    def create(self, path: str) -> Queue:
        """Create the dynamic leaf ``path`` and any missing parents, applying the nearest child template."""
        parts = path.split(".")
        queue = self.root
        for index, name in enumerate(parts[1:], start=1):
            child = queue.children.get(name)
            if child is None:
                leaf = index == len(parts) - 1
                child = self._add(name, queue, managed=False, leaf=leaf)
                template = next((q.template for q in queue.chain() if q.template is not None), None)
                if template is not None and leaf:
                    child.configure(cfg.QueueConfig(name, resources=template.resources,
                                                    max_applications=template.max_applications,
                                                    properties=template.properties))
            queue = child
        return queue

    # QueueDirectory.
    def get(self, path: str) -> Queue | None:
        return self.by_path.get(path)

    def exists(self, path: str) -> bool:
        return path in self.by_path

    def is_leaf(self, path: str) -> bool:
        return self.by_path[path].leaf

    def is_draining(self, path: str) -> bool:
        return self.by_path[path].status == DRAINING

    def _nearest(self, path: str) -> Queue:
        parts = path.split(".")
        while parts and ".".join(parts) not in self.by_path:
            parts.pop()
        return self.by_path[".".join(parts)] if parts else self.root

    def submit_allowed(self, path: str, user: str, groups: Sequence[str]) -> bool:
        return self._nearest(path).submit_allowed(user, groups)

    def can_create(self, path: str) -> bool:
        if path in self.by_path or not path.startswith("root."):
            return False
        nearest = self._nearest(path)
        return not nearest.leaf and nearest.status != DRAINING


def limits_from_tags(tags: Mapping[str, str]) -> tuple[Resource | None, Resource | None, int]:
    """``(guaranteed, maximum, max applications)`` an application's tags ask of a dynamic queue: the
    namespace's ``namespace.resourceguaranteed``, ``namespace.resourcequota`` (SI JSON resources, e.g.
    ``{"resources": {"vcore": {"value": 1000}}}``) and ``namespace.resourcemaxapps``. A malformed value
    is logged and left out, as upstream does."""
    return (_resource_tag(tags, APP_TAG_NAMESPACE_GUARANTEED), _resource_tag(tags, APP_TAG_NAMESPACE_QUOTA),
            _count_tag(tags, APP_TAG_NAMESPACE_MAX_APPS))


def _resource_tag(tags: Mapping[str, str], key: str) -> Resource | None:
    text = tags.get(key)
    if not text:
        return None
    try:
        document = gojson.loads(text, f"application tag {key}")
        quantities = {name: entry.get("value", 0) for name, entry in (document.get("resources") or {}).items()}
        if not all(in_range(v, 0, INT64_MAX) for v in quantities.values()):
            raise ValueError("values must be whole numbers of 0 to the int64 maximum")
    except (ValueError, TypeError, AttributeError) as error:
        log.warning("application tag %s ignored: %r is not a resource (%s)", key, text, error)
        return None
    return Resource(quantities)


def _count_tag(tags: Mapping[str, str], key: str) -> int:
    text = tags.get(key, "")
    if not text:
        return 0
    try:
        return parse_uint(text)  # as upstream's core: strconv.ParseUint
    except ValueError as error:
        log.warning("application tag %s ignored: %s", key, error)
        return 0
