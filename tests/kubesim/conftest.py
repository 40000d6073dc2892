"""Fixtures of the kubesim tests: the official client's CoreV1Api on a fresh kubesim."""

import pytest
from kubernetes import client

from kubesim import KubeSim


@pytest.fixture
def core(kube_api):
    return client.CoreV1Api(kube_api)


@pytest.fixture
def sim():
    """A kubesim with kubelets (pods run at once when bound, their times a hundredth of what they say)
    and two nodes."""
    with KubeSim(kubelet_delay=0.0, time_factor=0.01) as started:
        started.seed_nodes(2)
        yield started


@pytest.fixture
def sim_api(sim):
    with sim.api_client() as made:
        yield made


@pytest.fixture
def sim_core(sim_api):
    return client.CoreV1Api(sim_api)


@pytest.fixture
def apps(sim_api):
    return client.AppsV1Api(sim_api)


@pytest.fixture
def batch(sim_api):
    return client.BatchV1Api(sim_api)
