"""The reliability scenarios' scheduler: the real core and shim on a kubesim (the ``cluster`` fixture),
with the REST API on loopback, which the invariants read."""

import pytest

from rest.app import SchedulerView
from rest.server import RestServer
from tests.coreharness import OPEN_CONFIG
from tests.reliability.invariants import HEALTH_ON_READ


@pytest.fixture
def scheduler(cluster):
    """``scheduler(queues_yaml)``: configure, start the scheduler, serve its REST API; returns its URL."""
    servers = []

    def start(queues_yaml: str = OPEN_CONFIG) -> str:
        cluster.configure(queues_yaml, **HEALTH_ON_READ)
        cluster.start_scheduler()
        view = SchedulerView(cluster.scheduler, shim_state=cluster.service.latest_state)
        servers.append(RestServer(view, host="127.0.0.1", port=0))
        return servers[-1].url

    yield start
    for server in servers:
        server.stop()
