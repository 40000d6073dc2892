"""The core's settings of the extra configuration: checked, applied on registration and on every
configuration update, and refused as a whole when a value is bad."""

import threading
import time

from actors.core import settings
from actors.core.plugins import NoPredicates
from si import si_pb2
from tests.coreharness import OPEN_CONFIG

E = si_pb2.EventRecord


class Gate(NoPredicates):
    """Predicates that hold the partition in its scheduling cycle until the gate opens."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.entered = threading.Event()

    def ask_constrained(self, tags) -> bool:
        return True

    def check(self, ask_tags, node_id, node_attributes, node_allocation_tags, view):
        self.entered.set()
        self.open.wait(10)
        return None


def test_every_key_has_a_reader_or_is_reported():
    assert settings.unsupported({"service.schedulingInterval": "1s", "kubernetes.qps": "5", "log.core.level": "debug",
                                 "admissionController.filtering.defaultQueue": "root.a", "other.yaml": "",
                                 "preemption.enabled": "true", "log.nowhere.level": "info",
                                 "service.volumeBindTimeout": "1m"}) == [
        "log.nowhere.level", "preemption.enabled"]


def test_a_full_core_makes_requests_wait_up_to_the_dispatch_timeout_then_drops_them(core_factory):
    gate = Gate()
    core = core_factory(OPEN_CONFIG, predicates=gate,
                        extra={"service.eventChannelCapacity": "2", "service.dispatchTimeout": "300ms"})
    core.nodes(1)
    core.app("app", queue="root.a")
    core.asks("app", 1)
    assert gate.entered.wait(5), "the partition is held in its cycle"
    core.nodes(1, prefix="a-")
    core.nodes(1, prefix="b-")  # two requests wait: the core is full
    started = time.monotonic()
    core.nodes(1, prefix="c-")
    waited = time.monotonic() - started
    assert 0.3 <= waited < 3 and core.scheduler.dropped_requests == 1
    gate.open.set()
    nodes = {n.node_id for p in core.snapshot().partitions for n in p.nodes}
    assert nodes == {"node-0", "a-0", "b-0"}, "the request that found no room within the timeout was dropped"


def test_event_request_capacity_bounds_the_events_of_one_batch(core_factory):
    core = core_factory(OPEN_CONFIG, extra={"event.requestCapacity": "3"})
    core.nodes(10)
    core.settle()
    ring = core.scheduler.events
    assert len(ring) == 3 and ring.not_channeled == 7


def test_the_resource_manager_hears_request_capacity_events_a_push_interval_and_every_ask_event(core_factory):
    core = core_factory(OPEN_CONFIG, extra={"event.requestCapacity": "3"})
    core.nodes(4, prefix="a-")
    core.nodes(4, prefix="b-")  # same interval: the store has no room left
    core.settle()
    told = [e.objectID for e in core.callback.events if e.type == E.NODE]
    assert told == ["a-0", "a-1", "a-2"] and core.scheduler.events.not_stored == 5
    core.advance(2.0)  # upstream's publisher empties the store every 2 s
    core.nodes(4, prefix="c-")
    core.app("app-1", queue="root.a")
    core.asks("app-1", 5)  # each allocated ask is told, whatever the room
    core.settle()
    told = [e.objectID for e in core.callback.events if e.type == E.NODE]
    assert told[3:] == ["c-0", "c-1", "c-2"]
    assert len({e.objectID for e in core.callback.events if e.type == E.REQUEST}) == 5
    _, _, ring = core.scheduler.events.batch(0, 100)
    assert [e.objectID for _, e in ring if e.message == "node added"] == ["a-0", "a-1", "a-2", "b-0", "b-1", "b-2",
                                                                        "c-0", "c-1", "c-2"], "the ring keeps its own"


def test_a_bad_value_refuses_the_update_and_keeps_the_settings(core_factory):
    core = core_factory(OPEN_CONFIG, extra={"event.RESTResponseSize": "5"})
    refused = core.scheduler.update_configuration(si_pb2.UpdateConfigurationRequest(
        rmID="rm", config=OPEN_CONFIG, extraConfig={"event.RESTResponseSize": "0"}))
    assert refused == "event.RESTResponseSize: '0' is not usable: must be at least 1"
    assert core.scheduler.events.rest_response_size == 5
