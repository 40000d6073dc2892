"""Configured queues inherit their parent's properties, as upstream's Queue.mergeProperties."""

from actors.core import config as cfg
from actors.core.queue import QueueTree
from tests.queues import partition, queue


def tree_of(parent_delay: str = "20s", parent_policy: str = "fence") -> tuple[QueueTree, cfg.PartitionConfig]:
    parent = queue("parent", queue("plain"), queue("own", properties={"quota.preemption.delay": "5s",
                                                                      "preemption.delay": "10s"}),
                   properties={"quota.preemption.delay": parent_delay, "priority.offset": "7",
                               "priority.policy": "fence", "preemption.policy": parent_policy},
                   childtemplate={"properties": {"application.sort.policy": "fair"}})
    text = partition(queue("root", parent, properties={"preemption.delay": "45s"}))
    partition_config = cfg.parse(text).partitions[0]
    return QueueTree(partition_config), partition_config


def test_a_child_takes_its_parents_properties_and_its_own_win():
    tree, _ = tree_of()
    plain, own = tree.get("root.parent.plain"), tree.get("root.parent.own")
    assert plain.quota_preemption_delay == 20.0 and plain.preemption_delay == 45.0  # from parent and root
    assert plain.properties["quota.preemption.delay"] == "20s"  # REST shows the merged properties
    assert own.quota_preemption_delay == 5.0 and own.preemption_delay == 10.0


def test_priority_and_preemption_policies_are_not_passed_down_as_written():
    tree, _ = tree_of()
    plain = tree.get("root.parent.plain")
    assert tree.get("root.parent").priority_offset == 7
    assert (plain.priority_offset, plain.priority_fence, plain.preemption_policy) == (0, False, "default")
    assert dict(plain.properties)["priority.offset"] == "0"
    disabled, _ = tree_of(parent_policy="disabled")
    assert disabled.get("root.parent.plain").preemption_policy == "disabled"


def test_a_parents_change_reaches_children_on_reconfigure():
    tree, _ = tree_of()
    _, changed = tree_of(parent_delay="1m")
    tree.apply(changed.root)
    assert tree.get("root.parent.plain").quota_preemption_delay == 60.0
    assert tree.get("root.parent.own").quota_preemption_delay == 5.0


def test_dynamic_queues_take_only_the_template_as_upstream():
    tree, _ = tree_of()
    dynamic = tree.create("root.parent.dyn")
    assert dict(dynamic.properties) == {"application.sort.policy": "fair"}
    assert dynamic.quota_preemption_delay == 0.0
