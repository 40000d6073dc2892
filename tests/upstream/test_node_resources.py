"""Port of upstream's test/e2e/node_resources/node_resources_test.go (suite: node_resources_suite_test.go;
BeforeEach makes a namespace, AfterEach tears it down)."""

from __future__ import annotations

import math

import pytest

from si.quantity import from_kubernetes
from tests.upstream.framework import rand_seq


@pytest.fixture
def ns(yk):
    with yk.kube.test_namespace("ns-" + rand_seq(10)) as made:
        yield made


def test_verify_node_capacity(yk, ns):
    """It("Verify_Node_Capacity"): the scheduler reports each node's capacity as Kubernetes does (memory to the
    megabyte rounded up, cpu to the millicore)."""
    kube_capacities = {n.metadata.name: from_kubernetes({k: v for k, v in n.status.capacity.items()
                                                         if k in ("cpu", "memory")})
                       for n in yk.kube.get_nodes().items}
    yk_nodes = yk.rest.get_nodes("default")
    assert yk_nodes
    for yk_node in yk_nodes:
        kube = kube_capacities[yk_node["nodeID"]]
        capacity = yk_node["capacity"]
        assert math.ceil(kube["memory"] / 10**6) == math.ceil(capacity["memory"] / 10**6)
        assert kube["vcore"] == capacity["vcore"]
