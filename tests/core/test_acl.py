"""ACLs alone, and as placement sees them through a configured queue tree (inheritance, admin grants)."""

import pytest

from actors.core import config as cfg
from actors.core.acl import ACL
from actors.core.placement import StaticQueueDirectory


@pytest.mark.parametrize(("text", "user", "groups", "allowed"), [
    ("*", "anyone", (), True),
    (" * ", "anyone", (), True),
    ("", "alice", ("g",), False),
    (" ", "alice", ("g",), False),
    (None, "alice", ("g",), False),
    ("alice,bob", "bob", (), True),
    ("alice,bob", "carol", ("alice",), False),
    ("alice admins", "x", ("admins",), True),
    ("alice admins", "alice", (), True),
    (" admins,ops", "x", ("dev", "ops"), True),
    (" admins", "admins", (), False),
    ("* ", "x", (), True),
    (" *", "x", (), True),
    ("alice,* ops", "bob", (), False),
    ("alice ", "alice", (), True),
    ("john.doe@corp", "john.doe@corp", (), True),
    ("bad!,alice", "alice", (), True),
])
def test_acl(text, user, groups, allowed):
    assert ACL.parse(text).allows(user, groups) is allowed


@pytest.mark.parametrize("text", ["a b c", "a  b", "alice admins extra"])
def test_more_than_two_parts_is_an_error(text):
    with pytest.raises(ValueError, match="multiple spaces"):
        ACL.parse(text)


def test_invalid_names_are_dropped_not_matched():
    acl = ACL.parse("alice,invalid!,1bob dev,+ops")
    assert acl.users == {"alice"} and acl.groups == {"dev"}


TREE = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: ' '
        adminacl: 'root-admin'
        queues:
          - name: eng
            submitacl: ' engineers'
            queues:
              - name: backend
                submitacl: 'contractor'
              - name: frontend
          - name: finance
            adminacl: 'cfo auditors'
            queues:
              - name: reports
            parent: true
          - name: closed
"""


@pytest.fixture(scope="module")
def queues():
    return StaticQueueDirectory(cfg.parse(TREE).partitions[0])


@pytest.mark.parametrize(("path", "user", "groups", "allowed"), [
    ("root.eng.backend", "contractor", (), True),  # own ACL
    ("root.eng.backend", "dev1", ("engineers",), True),  # inherited from root.eng
    ("root.eng.frontend", "dev1", ("engineers",), True),
    ("root.eng.frontend", "contractor", (), False),  # a sibling's ACL does not count
    ("root.finance.reports", "cfo", (), True),  # admin on a parent grants submit below
    ("root.finance.reports", "clerk", ("auditors",), True),
    ("root.closed", "anyone", ("engineers",), False),  # root submit is ' ': nobody
    ("root.closed", "root-admin", (), True),  # root admin reaches everything
    ("root.eng.backend.new", "dev1", ("engineers",), True),  # a missing queue is judged by its nearest ancestor
    ("root.finance.new", "clerk", ("auditors",), True),
    ("root.new.deeper", "dev1", ("engineers",), False),
])
def test_submit_access_is_inherited_down_the_tree(queues, path, user, groups, allowed):
    assert queues.submit_allowed(path, user, groups) is allowed
