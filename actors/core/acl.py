"""Access control lists: ``*`` (everyone), ``"user1,user2 group1,group2"``, empty (nobody)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ACL:
    everyone: bool
    users: frozenset[str]
    groups: frozenset[str]

    @classmethod
    def parse(cls, text: str | None) -> ACL:
        """``None``, ``""`` and ``" "`` deny all; ``"*"`` allows all; else users, a space, groups."""
        if text is None or not text.strip():
            return cls(False, frozenset(), frozenset())
        if text.strip() == "*":
            return cls(True, frozenset(), frozenset())
        users, _, groups = text.partition(" ")
        split = lambda part: frozenset(name.strip() for name in part.split(",") if name.strip())  # noqa: E731
        return cls(False, split(users), split(groups))

    def allows(self, user: str, groups: Sequence[str]) -> bool:
        if self.everyone or user in self.users or "*" in self.users:
            return True
        return any(group in self.groups for group in groups) or ("*" in self.groups and bool(groups))

    @property
    def denies_all(self) -> bool:
        return not self.everyone and not self.users and not self.groups
