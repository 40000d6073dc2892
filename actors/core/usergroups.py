"""User and group resolution: a partition's ``usergroupresolver.type``.

``""`` (none, the default): an application's groups are those the resource manager sends (on Kubernetes,
the admission controller's ``user.info``). ``os``: an application sent without groups gets its user's
groups from the scheduler host's user database, as upstream's OS resolver: the primary group, then the
supplementary groups, by name (a group without a name keeps its number), remembered for five minutes;
the application of a user the database does not know is rejected. Upstream's ``ldap`` and ``test``
resolvers are refused by the configuration until they are supported.
"""

from __future__ import annotations

import grp
import os
import pwd
import time
from collections.abc import Callable

OS = "os"
SUPPORTED = ("", OS)
CACHE_SECONDS = 300.0  # upstream's cache time


class UnknownUser(LookupError):
    """The user database does not know the user."""


class GroupResolver:
    def __init__(self, kind: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.kind = kind
        self._clock = clock
        self._cache: dict[str, tuple[float, tuple[str, ...]]] = {}

    def groups(self, user: str, given: tuple[str, ...]) -> tuple[str, ...]:
        """The groups of ``user`` whose application came with ``given``; ``UnknownUser`` when they must
        be resolved and cannot be."""
        if given or self.kind != OS:
            return given
        now = self._clock()
        cached = self._cache.get(user)
        if cached is None or cached[0] <= now:
            cached = self._cache[user] = (now + CACHE_SECONDS, _os_groups(user))
        return cached[1]


def _os_groups(user: str) -> tuple[str, ...]:
    try:
        primary = pwd.getpwnam(user).pw_gid
    except KeyError:
        raise UnknownUser(f"user {user} is not known to the scheduler host's user database") from None
    ids = [primary, *(gid for gid in os.getgrouplist(user, primary) if gid != primary)]
    return tuple(dict.fromkeys(_group_name(gid) for gid in ids))


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)
