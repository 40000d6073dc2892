"""Placement rules against a configured queue tree: each rule, create, parents, filters, fallbacks."""

import pytest

from actors.core import config as cfg
from actors.core.placement import (
    AppPlacementInfo,
    Placement,
    PlacementManager,
    PlacementRejected,
    StaticQueueDirectory,
)
from actors.core.queue import QueueTree

TREE = """
      - name: root
        submitacl: ' '
        queues:
          - {name: default, submitacl: '*'}
          - {name: fixedq, submitacl: '*'}
          - {name: busy, submitacl: '*'}
          - {name: locked, submitacl: 'alice admins'}
          - name: users
            parent: true
            submitacl: '*'
            queues: [{name: existing}]
          - name: team
            submitacl: '*'
            queues: [{name: a_dot_b}]
          - {name: tenants, parent: true, submitacl: '*'}
          - {name: sealed, parent: true}
"""


def partition(rules: str, tree: str = TREE) -> cfg.PartitionConfig:
    return cfg.parse(f"partitions:\n  - name: default\n    placementrules: {rules}\n    queues:{tree}").partitions[0]


class Directory(StaticQueueDirectory):
    """The configured tree plus what a running partition adds: draining queues and dynamic leaves."""

    def __init__(self, config, draining=(), dynamic=()):
        super().__init__(config)
        self.draining, self.dynamic = set(draining), set(dynamic)

    def exists(self, path):
        return path in self.dynamic or super().exists(path)

    def is_leaf(self, path):
        return path in self.dynamic or super().is_leaf(path)

    def is_draining(self, path):
        return path in self.draining

    def can_create(self, path):
        return path not in self.dynamic and super().can_create(path)


def filtered(spec: str, then: str = "") -> str:
    """A user rule creating queues under root.tenants, with filter ``spec``, optionally another rule after it."""
    rule = f"{{name: user, create: true, parent: {{name: fixed, value: tenants}}, filter: {spec}}}"
    return f"[{rule}, {then}]" if then else f"[{rule}]"


FORCED = {"application.create.force": "true"}


def app(queue="", user="bob", groups=(), **tags):
    return AppPlacementInfo("app-1", queue, user, tuple(groups), tags)


def place(rules: str, info: AppPlacementInfo, **directory) -> tuple[str, bool]:
    config = partition(rules)
    placement = PlacementManager(config.placement_rules).place(info, Directory(config, **directory))
    return placement.queue_path, placement.create


CASES = [
    # provided
    ("[{name: provided}]", app("root.fixedq"), ("root.fixedq", False)),
    ("[{name: provided}]", app("fixedq"), ("root.fixedq", False)),
    ("[{name: provided, create: true}]", app("root.users.new"), ("root.users.new", True)),
    ("[{name: provided, create: true}]", app("root.tenants.x.y"), ("root.tenants.x.y", True)),
    ("[{name: provided}]", app("root.missing"), ("root.default", False)),
    ("[{name: provided, parent: {name: fixed, value: team}}]", app("a.b"), ("root.team.a_dot_b", False)),
    ("[{name: provided, create: true, parent: {name: fixed, value: users}}]", app("root.fixedq"),
     ("root.fixedq", False)),  # a full path skips the parent rule
    # user
    ("[{name: user, create: true, parent: {name: fixed, value: users}}]", app(user="a.b"), ("root.users.a_dot_b", True)),
    ("[{name: user, parent: {name: fixed, value: users}}]", app(user="existing"), ("root.users.existing", False)),
    ("[{name: user, parent: {name: fixed, value: users}}]", app(user="nobody"), ("root.default", False)),
    ("[{name: user, create: true, parent: {name: fixed, value: tenants}}]", app(user="root.x"),
     ("root.tenants.root_dot_x", True)),
    # tag
    ("[{name: tag, value: namespace, create: true, parent: {name: fixed, value: root.users}}]", app(namespace="ns1"),
     ("root.users.ns1", True)),
    ("[{name: tag, value: namespace, create: true}]", app(namespace="root.fixedq"), ("root.fixedq", False)),
    ("[{name: tag, value: namespace, create: true, parent: {name: fixed, value: tenants}}]", app(namespace="my.ns"),
     ("root.tenants.my_dot_ns", True)),
    ("[{name: tag, value: Namespace, create: true, parent: {name: fixed, value: tenants}}]", app(**{"NameSpace": "ns2"}),
     ("root.tenants.ns2", True)),
    ("[{name: tag, value: namespace, create: true}]", app(other="x"), ("root.default", False)),
    # fixed
    ("[{name: fixed, value: fixedq}]", app(), ("root.fixedq", False)),
    ("[{name: fixed, value: root.users.existing}]", app(), ("root.users.existing", False)),
    ("[{name: fixed, value: jobs, create: true, parent: {name: tag, value: namespace, create: true,"
     " parent: {name: fixed, value: tenants}}}]", app(namespace="ns1"), ("root.tenants.ns1.jobs", True)),
    # rules are tried in order
    ("[{name: provided}, {name: fixed, value: fixedq}]", app("root.users.existing"), ("root.users.existing", False)),
    ("[{name: provided}, {name: fixed, value: fixedq}]", app("root.nope"), ("root.fixedq", False)),
    ("[{name: provided}, {name: fixed, value: fixedq}]", app("root.users"), ("root.fixedq", False)),  # not a leaf
    ("[{name: provided, create: true}, {name: fixed, value: fixedq}]", app("root.fixedq.sub"),
     ("root.fixedq", False)),  # cannot create below a leaf
    ("[{name: user, create: true}, {name: fixed, value: fixedq}]", app(user="john doe"), ("root.fixedq", False)),
    ("[{name: provided, create: true}, {name: fixed, value: fixedq}]", app("root..x"), ("root.fixedq", False)),
    # ACLs
    ("[{name: provided}]", app("root.locked", user="alice"), ("root.locked", False)),
    ("[{name: provided}]", app("root.locked", user="carol", groups=("admins",)), ("root.locked", False)),
    ("[{name: provided}]", app("root.locked", user="carol", groups=("dev",)), ("root.default", False)),
    ("[{name: provided, create: true}, {name: fixed, value: fixedq}]", app("root.sealed.x"), ("root.fixedq", False)),
    # filters: lists, one regular expression, allow and deny
    (filtered("{users: [bob, eve]}"), app(user="bob"), ("root.tenants.bob", True)),
    (filtered("{users: [eve]}"), app(user="bob"), ("root.default", False)),
    (filtered("{type: deny, users: [bob]}", then="{name: fixed, value: fixedq}"), app(), ("root.fixedq", False)),
    (filtered("{type: deny, users: [eve]}"), app(), ("root.tenants.bob", True)),
    (filtered("{groups: ['^dev.*']}"), app(groups=("ops", "devops")), ("root.tenants.bob", True)),
    (filtered("{groups: ['^dev.*']}"), app(groups=("ops",)), ("root.default", False)),
    (filtered("{users: ['o+b']}"), app(user="bob"), ("root.tenants.bob", True)),  # unanchored, as upstream
    (filtered("{type: deny, groups: [contractors, guests]}"), app(groups=("guests",)), ("root.default", False)),
    (filtered("{type: deny, users: ['^b']}"), app(user="ann"), ("root.tenants.ann", True)),
    (filtered("{type: deny}"), app(), ("root.default", False)),  # deny without a list denies everyone
    (filtered("{type: allow}"), app(), ("root.tenants.bob", True)),
]


@pytest.mark.parametrize(("rules", "info", "expected"), CASES)
def test_rules(rules, info, expected):
    assert place(rules, info) == expected


@pytest.mark.parametrize(("rules", "info", "expected"), CASES)
def test_the_running_queue_tree_places_the_same_way(rules, info, expected):
    config = partition(rules)
    placement = PlacementManager(config.placement_rules).place(info, QueueTree(config))
    assert (placement.queue_path, placement.create) == expected


def test_without_rules_the_requested_queue_is_used():
    manager = PlacementManager(())
    directory = StaticQueueDirectory(partition("[]"))
    assert manager.place(app("root.fixedq"), directory) == Placement("root.fixedq", False)
    assert manager.place(app("root.absent"), directory) == Placement("root.default", False)


def test_draining_queues_are_skipped():
    rules = "[{name: provided}, {name: fixed, value: fixedq}]"
    assert place(rules, app("root.busy")) == ("root.busy", False)
    assert place(rules, app("root.busy"), draining=["root.busy"]) == ("root.fixedq", False)
    with pytest.raises(PlacementRejected):
        place("[{name: provided}]", app("root.absent"), draining=["root.default"])


def test_an_existing_dynamic_leaf_is_reused_not_created():
    assert place("[{name: user, create: true, parent: {name: fixed, value: users}}]", app(user="zed"),
                 dynamic=["root.users.zed"]) == ("root.users.zed", False)


def test_a_parent_rule_that_names_a_leaf_rejects_the_application():
    rules = "[{name: user, create: true, parent: {name: tag, value: namespace}}, {name: fixed, value: fixedq}]"
    with pytest.raises(PlacementRejected, match="parent rule returned a leaf queue: root.fixedq"):
        place(rules, app(namespace="root.fixedq"))
    assert place(rules, app(namespace="root.fixedq", **FORCED)) == ("root.@recovery@", True), \
        "an application that already runs goes to the recovery queue instead"


def test_a_parent_rule_without_create_needs_its_queue():
    rules = "[{name: user, create: true, parent: {name: tag, value: namespace}}]"
    assert place(rules, app(namespace="users")) == ("root.users.bob", True)
    assert place(rules, app(namespace="nothere")) == ("root.default", False)


def test_rejection_names_the_requested_queue():
    tree = TREE.replace("- {name: default, submitacl: '*'}", "- {name: other, submitacl: '*'}")
    config = partition("[{name: provided}]", tree)
    manager, directory = PlacementManager(config.placement_rules), StaticQueueDirectory(config)
    with pytest.raises(PlacementRejected) as rejected:
        manager.place(app("root.locked", user="mallory"), directory)
    assert rejected.value.reason == "application rejected: no placement rule matched (requested queue 'root.locked')"
    with pytest.raises(PlacementRejected, match=r"no placement rule matched$"):
        manager.place(app(""), directory)


def test_the_default_queue_needs_submit_access():
    tree = TREE.replace("- {name: default, submitacl: '*'}", "- {name: default, submitacl: 'alice'}")
    config = partition("[{name: provided}]", tree)
    manager, directory = PlacementManager(config.placement_rules), StaticQueueDirectory(config)
    assert manager.place(app("root.nope", user="alice"), directory) == Placement("root.default", False)
    with pytest.raises(PlacementRejected):
        manager.place(app("root.nope", user="bob"), directory)


def test_forced_applications_that_match_nothing_go_to_the_recovery_queue():
    assert place("[{name: provided}]", app("root.gone", **FORCED)) == ("root.@recovery@", True)
    assert place("[{name: provided}]", app("root.gone", **FORCED), dynamic=["root.@recovery@"]) == \
        ("root.@recovery@", False)
    assert place("[{name: provided}]", app("root.fixedq", **FORCED)) == ("root.fixedq", False)
    assert place("[{name: provided}]", app("root.locked", user="eve", **{"application.create.force": "TRUE"})) == \
        ("root.@recovery@", True), "the recovery rule ignores ACLs: the application is already running"
    assert place("[{name: provided}]", app("root.gone", **{"application.create.force": "false"})) == \
        ("root.default", False)


def test_describe_lists_the_rules_as_the_rest_api_shows_them():
    config = partition("""
      - {name: provided}
      - name: tag
        value: namespace
        create: true
        parent: {name: fixed, value: root.tenants}
        filter: {type: deny, users: [eve, mallory], groups: ['^guest.*']}""")
    described = PlacementManager(config.placement_rules).describe()
    assert described == [
        {"name": "provided", "parameters": {"create": "false"}},
        {"name": "tag", "parameters": {"create": "true", "tagName": "namespace"},
         "filter": {"type": "deny", "userList": ["eve", "mallory"], "groupExp": "^guest.*"},
         "parentRule": {"name": "fixed", "parameters": {"create": "false", "queue": "root.tenants"}}},
        {"name": "recovery", "parameters": {"queue": "root.@recovery@"}},
    ]
    assert PlacementManager(()).describe()[0] == {"name": "provided", "parameters": {"create": "false"}}


def test_static_directory_answers_the_protocol():
    directory = StaticQueueDirectory(partition("[]"))
    assert directory.exists("root") and directory.exists("root.users.existing") and not directory.exists("root.x")
    assert directory.is_leaf("root.fixedq") and not directory.is_leaf("root.users") and not directory.is_leaf("root")
    assert not directory.is_leaf("root.tenants"), "a parent queue without children is still a parent"
    assert directory.can_create("root.users.new") and directory.can_create("root.tenants.a.b")
    assert not directory.can_create("root.fixedq.sub") and not directory.can_create("root.users")
    assert not directory.can_create("root") and not directory.can_create("other.x")
    assert not directory.is_draining("root.fixedq")
