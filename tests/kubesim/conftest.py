"""Fixtures of the kubesim tests: the official client's CoreV1Api on a fresh kubesim."""

import pytest
from kubernetes import client


@pytest.fixture
def core(kube_api):
    return client.CoreV1Api(kube_api)
