"""The outlet alone, between a recording core and the actors that tell it: the allocations of the pods
on nodes are built straight into the requests the core receives, as the SI of those pods."""

import pytest

from actors.shim import translate
from actors.shim.messages import CountedForeign, FlushToCore, NodeAllocations, PlacedPod, Registered, ToCore
from actors.shim.outlet import CoreOutlet
from actors.shim.pods import parse_pod
from si import constants
from tests.shim.doubles import Inbox, RecordingCore, inbox_messages
from tests.shim.factories import pod_json


@pytest.fixture
def outlet():
    core, reporter = RecordingCore(), Inbox.start()
    ref = CoreOutlet.start(core)
    ref.tell(Registered("rm-1"))
    yield core, ref, reporter
    ref.stop()
    reporter.stop()


def pod(name, **kwargs):
    return parse_pod(pod_json(name, node="n1", labels={"applicationId": "app-1"}, **kwargs))


def on_node(reporter, *pods):
    """``pods``, each ``(pod, priority, foreign, originator)``, reported together by their node ``n1``."""
    return NodeAllocations("n1", tuple(PlacedPod(p, priority, True, foreign, originator)
                                       for p, priority, foreign, originator in pods), reporter)


def test_the_pods_allocations_reach_the_core_as_their_si_in_the_order_told(outlet):
    core, ref, reporter = outlet
    ours, foreign, asked = pod("ours"), pod("foreign", scheduler="default-scheduler"), pod("asked")
    ref.tell(ToCore((on_node(reporter, (ours, 7, False, True)),
                     translate.allocation(asked, 3, constants.DEFAULT_PARTITION, "n1"),
                     on_node(reporter, (foreign, 5, True, False)))))
    ref.ask(FlushToCore())
    [request] = core.of("allocation")
    assert request.rmID == "rm-1"
    assert list(request.allocations) == [
        translate.allocation(ours, 7, constants.DEFAULT_PARTITION, "n1", originator=True),
        translate.allocation(asked, 3, constants.DEFAULT_PARTITION, "n1"),
        translate.foreign_allocation(foreign, 5, constants.DEFAULT_PARTITION)]
    assert inbox_messages(reporter) == []


def test_a_pod_whose_allocation_cannot_be_built_holds_its_room_as_a_foreign_pod(outlet, monkeypatch):
    core, ref, reporter = outlet
    built = translate.allocation

    def allocation(pod, *args, **kwargs):
        if pod.name == "hostile":
            kwargs["into"].add(allocationKey=pod.uid)  # half built when it raises: nothing of it may remain
            raise ValueError("cannot be built")
        return built(pod, *args, **kwargs)

    monkeypatch.setattr(translate, "allocation", allocation)
    hostile, fine = pod("hostile"), pod("fine")
    ref.tell(ToCore((on_node(reporter, (hostile, 7, False, False), (fine, 7, False, False)),)))
    ref.ask(FlushToCore())
    # Released by a node that has not heard yet: released as the foreign pod the core holds.
    ref.tell(ToCore((translate.release(hostile, "pod left the node"),)))
    ref.ask(FlushToCore())
    [allocations, releases] = core.of("allocation")
    assert list(allocations.allocations) == [translate.foreign_allocation(hostile, 0, constants.DEFAULT_PARTITION),
                                             built(fine, 7, constants.DEFAULT_PARTITION, "n1")]
    [release] = releases.releases.allocationsToRelease
    assert (release.allocationKey, release.applicationID) == (hostile.uid, "")
    assert inbox_messages(reporter) == [CountedForeign(hostile.uid)]


def test_a_foreign_pod_whose_allocation_cannot_be_built_is_left_out_alone(outlet, monkeypatch):
    core, ref, reporter = outlet

    def foreign_allocation(*args, **kwargs):
        raise ValueError("cannot be built")

    monkeypatch.setattr(translate, "foreign_allocation", foreign_allocation)
    other, ours = pod("other", scheduler="default-scheduler"), pod("ours")
    ref.tell(ToCore((on_node(reporter, (other, 0, True, False), (ours, 0, False, False)),)))
    ref.ask(FlushToCore())
    assert [a.allocationKey for a in core.allocations()] == [ours.uid]
    assert inbox_messages(reporter) == []


def test_pods_of_one_workload_reach_the_core_each_as_its_own_si(outlet):
    """Their allocations share one shape: no pod's key, node, name, time or constraints reaches another's."""
    core, ref, reporter = outlet
    bodies = [pod_json(f"worker-{i}", node=node, labels={"applicationId": "app-1", "tier": "batch"})
              for i, node in enumerate(("n1", "n2", "n1"))]
    bodies[1]["metadata"]["creationTimestamp"] = "2024-05-01T10:00:07Z"
    pods = [parse_pod(body) for body in bodies]
    assert pods[0].labels is pods[1].labels and pods[0].constraints != pods[1].constraints
    ref.tell(ToCore((*(NodeAllocations(p.node_name, (PlacedPod(p, 3, True, False, i == 0),), reporter)
                       for i, p in enumerate(pods)),
                     NodeAllocations("n1", tuple(PlacedPod(p, 3, True, True) for p in pods), reporter))))
    ref.ask(FlushToCore())
    [request] = core.of("allocation")
    assert list(request.allocations) == [
        *(translate.allocation(p, 3, constants.DEFAULT_PARTITION, p.node_name, originator=i == 0)
          for i, p in enumerate(pods)),
        *(translate.foreign_allocation(p, 3, constants.DEFAULT_PARTITION) for p in pods)]
