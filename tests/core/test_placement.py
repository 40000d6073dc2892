"""Placement rules and ACLs against a real queue tree."""

import pytest

from actors.core import config as cfg
from actors.core.acl import ACL
from actors.core.placement import AppPlacementInfo, PlacementManager, PlacementRejected
from actors.core.queue import QueueTree

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: ' '
        queues:
          - name: default
            submitacl: '*'
          - name: fixedq
            submitacl: '*'
          - name: users
            parent: true
            submitacl: '*'
          - name: locked
            submitacl: 'alice admins'
"""


def tree():
    return QueueTree(cfg.parse(CONFIG).partitions[0])


def rules(text):
    return PlacementManager(cfg.parse(f"partitions: [{{name: default, placementrules: {text}, queues: [{{name: root}}]}}]")
                            .partitions[0].placement_rules)


def app(queue="", user="bob", groups=(), **tags):
    return AppPlacementInfo("app", queue, user, tuple(groups), tags)


@pytest.mark.parametrize(("text", "info", "expected"), [
    ("[{name: provided}]", app("root.fixedq"), ("root.fixedq", False)),
    ("[{name: provided}]", app("fixedq"), ("root.fixedq", False)),
    ("[{name: provided, create: true}]", app("root.users.x"), ("root.users.x", True)),
    ("[{name: fixed, value: fixedq}]", app(), ("root.fixedq", False)),
    ("[{name: user, create: true, parent: {name: fixed, value: users}}]", app(user="a.b"), ("root.users.a_dot_b", True)),
    ("[{name: tag, value: namespace, create: true, parent: {name: fixed, value: root.users}}]", app(namespace="ns1"),
     ("root.users.ns1", True)),
    ("[{name: provided}]", app("root.missing"), ("root.default", False)),
    ("[{name: user, filter: {type: deny, users: [bob]}, create: true}, {name: fixed, value: fixedq}]", app(),
     ("root.fixedq", False)),
    ("[{name: user, create: true, parent: {name: fixed, value: users}, filter: {type: allow, groups: ['dev.*']}}]",
     app(groups=("devops",)), ("root.users.bob", True)),
    ("[{name: provided}]", app("root.locked", user="carol", groups=("admins",)), ("root.locked", False)),
])
def test_rules(text, info, expected):
    placement = rules(text).place(info, tree())
    assert (placement.queue_path, placement.create) == expected


def test_acl_denied_falls_back_to_default_then_rejects():
    queues = tree()
    assert rules("[{name: provided}]").place(app("root.locked"), queues).queue_path == "root.default"
    del queues.by_path["root.default"]
    with pytest.raises(PlacementRejected, match="no placement rule matched"):
        rules("[{name: provided}]").place(app("root.locked"), queues)


def test_forced_applications_go_to_the_recovery_queue():
    queues = tree()
    del queues.by_path["root.default"]
    placement = rules("[{name: provided}]").place(app("root.gone", **{"application.create.force": "true"}), queues)
    assert (placement.queue_path, placement.create) == ("root.@recovery@", True)


def test_a_leaf_cannot_be_a_parent_for_created_queues():
    with pytest.raises(PlacementRejected):
        q = tree()
        del q.by_path["root.default"]
        rules("[{name: user, create: true, parent: {name: fixed, value: fixedq}}]").place(app(), q)


@pytest.mark.parametrize(("text", "user", "groups", "allowed"), [
    ("*", "anyone", (), True), ("", "alice", ("g",), False), (" ", "alice", (), False), (None, "alice", (), False),
    ("alice,bob", "bob", (), True), ("alice,bob", "carol", ("alice",), False), ("alice admins", "x", ("admins",), True),
    (" admins,ops", "x", ("ops",), True), (" admins", "admins", (), False),
])
def test_acl(text, user, groups, allowed):
    assert ACL.parse(text).allows(user, groups) is allowed


def test_describe_lists_the_implicit_recovery_rule():
    described = rules("[{name: tag, value: namespace, create: true, filter: {type: allow, users: [a]}}]").describe()
    assert described[0]["name"] == "tag" and described[0]["parameters"] == {"create": "true", "value": "namespace"}
    assert described[0]["filter"]["userList"] == ["a"]
    assert described[-1] == {"name": "recovery", "parameters": {"queue": "root.@recovery@"}}
