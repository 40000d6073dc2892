"""A namespace's annotations reach the core as application tags; the core gives them to the namespace's
dynamic queue (max, guaranteed, maximum applications) and places the queue under its parent queue."""

import json

from actors.core.config import DEFAULT_QUEUES_YAML
from si.constants import RECOVERY_QUEUE
from tests import queues as built


def resources(**values) -> str:
    return json.dumps({"resources": {k: {"value": v} for k, v in values.items()}})


QUOTA = {"namespace": "team", "namespace.resourcequota": resources(vcore=1000)}


def queue(core, path):
    return core.snapshot().partitions[0].root_queue.find(path)


def test_the_quota_is_the_max_of_the_namespace_queue_and_holds(core_factory):
    core = core_factory(DEFAULT_QUEUES_YAML)
    core.nodes(2)
    core.app("app", **QUOTA)
    keys = core.asks("app", 4, vcore=400, memory=2**20)
    core.settle()
    assert len(core.callback.new()) == 2, "1 vcore of quota takes two asks of 400m"
    team = queue(core, "root.team")
    assert dict(team.max_resource) == {"vcore": 1000} and team.allocated_resource["vcore"] == 800
    assert not team.is_managed
    waiting = [k for k in keys if k not in {a.allocationKey for a in core.callback.new()}]
    assert core.callback.failures(waiting[0])[-1].startswith("queue root.team: max vcore 1000 reached")


def test_guaranteed_and_maximum_applications_come_along(core_factory):
    core = core_factory(DEFAULT_QUEUES_YAML)
    core.nodes(2)
    tags = {**QUOTA, "namespace.resourceguaranteed": resources(vcore=500, memory=2**30),
            "namespace.resourcemaxapps": "1"}
    core.app("first", **tags)
    core.app("second", **tags)
    core.asks("first", 1, vcore=100)
    core.asks("second", 1, vcore=100)
    core.settle()
    team = queue(core, "root.team")
    assert dict(team.guaranteed_resource) == {"vcore": 500, "memory": 2**30} and team.max_running_apps == 1
    assert [a.applicationID for a in core.callback.new()] == ["first"], "one application may run"
    core.release("first")
    core.settle()
    # As upstream: an application that is Completing no longer runs, so the second may start at once.
    assert core.callback.app_states("first")[-1] == "Completing"
    assert [a.applicationID for a in core.callback.new()] == ["first", "second"], "the second once the first stops"


def test_the_parent_queue_annotation_places_the_namespace_queue_under_it(core_factory):
    core = core_factory(DEFAULT_QUEUES_YAML)
    core.nodes(1)
    core.app("qualified", namespace="alpha", **{"namespace.parentqueue": "root.teams"})
    core.app("short", namespace="beta", **{"namespace.parentqueue": "teams"})
    core.app("plain", namespace="gamma")
    core.settle()
    placed = {a.application_id: a.queue_name for a in core.snapshot().partitions[0].applications}
    assert placed == {"qualified": "root.teams.alpha", "short": "root.teams.beta", "plain": "root.gamma"}
    teams = queue(core, "root.teams")
    assert not teams.is_leaf and not teams.is_managed


def test_a_managed_queue_keeps_its_configuration(core_factory):
    config = built.partition(built.queue("root", built.queue("team", max={"vcore": 8}), submitacl="*"),
                             placementrules=[{"name": "tag", "value": "namespace", "create": True}])
    core = core_factory(config)
    core.nodes(1)
    core.app("app", **QUOTA)
    core.settle()
    assert dict(queue(core, "root.team").max_resource) == {"vcore": 8000}


def test_the_recovery_queue_ignores_namespace_limits(core_factory):
    config = built.config(create=False)
    core = core_factory(config)
    core.nodes(1)
    core.app("recovered", queue="root.gone", **{"application.create.force": "true"}, **QUOTA)
    core.settle()
    recovery = queue(core, RECOVERY_QUEUE)
    assert recovery is not None and recovery.max_resource is None


def test_malformed_tags_are_ignored(core_factory):
    core = core_factory(DEFAULT_QUEUES_YAML)
    core.nodes(1)
    core.app("app", namespace="team", **{"namespace.resourcequota": "{vcore: 1", "namespace.resourcemaxapps": "x",
                                         "namespace.resourceguaranteed": resources(vcore=-5)})
    core.asks("app", 2)
    core.settle()
    team = queue(core, "root.team")
    assert team.max_resource is None and team.guaranteed_resource is None and team.max_running_apps == 0
    assert len(core.callback.new()) == 2


def test_tags_that_killed_the_partition_are_ignored_and_it_keeps_scheduling(core_factory):
    core = core_factory(DEFAULT_QUEUES_YAML)
    core.nodes(1)
    core.app("app", namespace="team", **{"namespace.resourcemaxapps": "\u00b2",
                                         "namespace.resourcequota": "[" * 5000 + "]" * 5000,
                                         "namespace.resourceguaranteed": resources(vcore=2**63)})
    core.app("next", namespace="other")
    core.asks("app", 1)
    core.asks("next", 1)
    core.settle()
    team = queue(core, "root.team")
    assert team.max_resource is None and team.guaranteed_resource is None and team.max_running_apps == 0
    assert {a.applicationID for a in core.callback.new()} == {"app", "next"}
