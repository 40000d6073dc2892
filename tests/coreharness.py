"""A core driven with SI messages, recording what its resource-manager callback receives."""

import threading

from actors.core.partition import Timing
from actors.core.scheduler import Scheduler, Tuning
from si import si_pb2
from si.clock import VirtualClock
from si.resources import Resource
from tests.queues import partition, queue


class RecordingCallback:
    """A resource manager that only records (the core calls it from its own threads)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.allocations: list[si_pb2.AllocationResponse] = []
        self.applications: list[si_pb2.ApplicationResponse] = []
        self.nodes: list[si_pb2.NodeResponse] = []
        self.events: list[si_pb2.EventRecord] = []
        self.states: list[si_pb2.UpdateContainerSchedulingStateRequest] = []

    def update_allocation(self, response):
        with self.lock:
            self.allocations.append(response)

    def update_application(self, response):
        with self.lock:
            self.applications.append(response)

    def update_node(self, response):
        with self.lock:
            self.nodes.append(response)

    def send_events(self, events):
        with self.lock:
            self.events.extend(events)

    def update_container_scheduling_state(self, request):
        with self.lock:
            self.states.append(request)

    # Views.
    def new(self) -> list[si_pb2.Allocation]:
        with self.lock:
            return [a for r in self.allocations for a in r.new]

    def released(self):
        with self.lock:
            return [a for r in self.allocations for a in r.released]

    def rejected_allocations(self):
        with self.lock:
            return [a for r in self.allocations for a in r.rejectedAllocations]

    def accepted_apps(self):
        with self.lock:
            return [a.applicationID for r in self.applications for a in r.accepted]

    def rejected_apps(self):
        with self.lock:
            return {a.applicationID: a.reason for r in self.applications for a in r.rejected}

    def app_states(self, app_id):
        with self.lock:
            return [u.state for r in self.applications for u in r.updated if u.applicationID == app_id]

    def failures(self, key):
        with self.lock:
            return [s.reason for s in self.states if s.allocationKey == key]


# Like the default configuration, plus: a requested queue is used (and created) when it is given.
OPEN_CONFIG = partition(queue("root", submitacl="*"), placementrules=[
    {"name": "provided", "create": True}, {"name": "tag", "value": "namespace", "create": True}])


class Core:
    """A running core plus helpers that build SI messages."""

    def __init__(self, config: str = OPEN_CONFIG, tuning: Tuning | None = None, predicates=None,
                 extra: dict[str, str] | None = None, build_info: dict[str, str] | None = None, **options):
        """``extra``: the extra configuration (``health.checkInterval``...); ``options`` go to the Scheduler.
        The core runs on a virtual clock (``advance`` moves it) unless ``clock`` says otherwise."""
        self.callback = RecordingCallback()
        self.clock = options.setdefault("clock", VirtualClock())
        self.scheduler = Scheduler(predicates=predicates, tuning=tuning or Tuning(
            timing=Timing(completing=0.2, retention=0.5, starting=5.0)), **{"tick_interval": 0.05, **options})
        self.scheduler.register(si_pb2.RegisterResourceManagerRequest(
            rmID="rm", policyGroup="queues", config=config, extraConfig=extra or {}, buildInfo=build_info or {}),
            self.callback)

    def nodes(self, count, vcore=4000, memory=8 * 2**30, prefix="node-", action=si_pb2.NodeInfo.CREATE, **attributes):
        infos = [si_pb2.NodeInfo(nodeID=f"{prefix}{i}", action=action, attributes=attributes,
                                 schedulableResource=Resource.of(vcore=vcore, memory=memory).to_proto())
                 for i in range(count)]
        self.scheduler.update_node(si_pb2.NodeRequest(rmID="rm", nodes=infos))
        return [n.nodeID for n in infos]

    def app(self, app_id, queue="", user="alice", groups=(), **tags):
        self.scheduler.update_application(si_pb2.ApplicationRequest(rmID="rm", new=[si_pb2.AddApplicationRequest(
            applicationID=app_id, queueName=queue, partitionName="default",
            ugi=si_pb2.UserGroupInformation(user=user, groups=list(groups)), tags=tags)]))

    def asks(self, app_id, count, vcore=1000, memory=2**30, priority=0, prefix=None, node="", tags=None):
        prefix = prefix or f"{app_id}-"
        allocations = [si_pb2.Allocation(allocationKey=f"{prefix}{i}", applicationID=app_id, partitionName="default",
                                         priority=priority, nodeID=node, allocationTags=tags or {},
                                         resourcePerAlloc=Resource.of(vcore=vcore, memory=memory).to_proto())
                       for i in range(count)]
        self.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=allocations))
        return [a.allocationKey for a in allocations]

    def release(self, app_id, key="", termination=si_pb2.STOPPED_BY_RM):
        self.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", releases=si_pb2.AllocationReleasesRequest(
            allocationsToRelease=[si_pb2.AllocationRelease(partitionName="default", applicationID=app_id,
                                                           allocationKey=key, terminationType=termination)])))

    def settle(self):
        """Wait until the core has processed everything and finished scheduling."""
        self.scheduler.settle()

    def advance(self, seconds: float) -> None:
        """Move the core's (virtual) clock ``seconds`` on: each of its timers due on the way fires at its
        exact time, and the core settles before time moves again."""
        self.settle()
        self.clock.advance(seconds, between=self.settle)

    def snapshot(self):
        self.settle()
        return self.scheduler.snapshot()

    def configure(self, config: str):
        return self.scheduler.update_configuration(si_pb2.UpdateConfigurationRequest(rmID="rm", config=config))


