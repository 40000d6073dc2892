"""Access control lists, as YuniKorn writes them on queues (``submitacl``, ``adminacl``).

An ACL is ``"users groups"``: two comma-separated lists with one space between them. ``"*"`` (or a
user or group list that is exactly ``*``) admits everyone; ``""``, ``" "`` and a missing ACL admit
nobody; ``" admins"`` names only groups. More than one space between the lists is an error. Names that
could not be a user or group (``*`` inside a longer list, say) are ignored, as upstream does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from actors.base import record

WILDCARD = "*"
# The names a configuration may give users and groups (limits, placement filters): yunikorn-core's
# UserRegExp and GroupRegExp. ``\Z``, not ``$``: Python's ``$`` also matches before a final newline.
USER_NAME = re.compile(r"^[_a-zA-Z][a-zA-Z0-9:#/_.@-]*[$]?\Z")
GROUP_NAME = re.compile(r"^[_a-zA-Z][a-zA-Z0-9:_.-]*\Z")
# An ACL keeps only the narrower names of yunikorn-core's security package.
_ACL_USER = re.compile(r"^[_a-zA-Z][a-zA-Z0-9_.@-]*[$]?\Z")
_ACL_GROUP = re.compile(r"^[_a-zA-Z][a-zA-Z0-9_-]*\Z")


@record
class ACL:
    """A parsed ACL; ``allows`` answers whether a user with these groups is admitted."""

    everyone: bool
    users: frozenset[str]
    groups: frozenset[str]

    @classmethod
    def parse(cls, text: str | None) -> ACL:
        """The ACL in ``text``; raises ValueError when it has more than two space-separated parts."""
        if text is None:
            return NOBODY
        text = text.rstrip()  # a trailing space only ends the user list
        parts = text.split(" ")
        if len(parts) > 2:
            raise ValueError(f"multiple spaces found in ACL {text!r}: expected 'users groups'")
        if text.strip() == WILDCARD:
            return EVERYONE
        users = parts[0].split(",") if parts[0] else []
        groups = parts[1].split(",") if len(parts) == 2 and parts[1] else []
        if users == [WILDCARD] or groups == [WILDCARD]:
            return EVERYONE
        return cls(False, frozenset(u for u in users if _ACL_USER.match(u)),
                   frozenset(g for g in groups if _ACL_GROUP.match(g)))

    def allows(self, user: str, groups: Sequence[str]) -> bool:
        if self.everyone or user in self.users:
            return True
        return any(group in self.groups for group in groups)


NOBODY = ACL(False, frozenset(), frozenset())
EVERYONE = ACL(True, frozenset(), frozenset())
