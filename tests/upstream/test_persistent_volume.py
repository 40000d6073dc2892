"""Port of upstream's test/e2e/persistent_volume/persistent_volume_test.go (suite:
persistent_volume_suite_test.go; BeforeEach makes a namespace, AfterEach tears it down).

Verify_dynamic_bindng_with_nfs_server is not ported: it runs an NFS server and provisioner as pods whose
containers serve the volumes, and kubesim runs no containers."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s

from tests.upstream.framework import TestPodConfig, init_test_pod, rand_seq
from tests.waiting import wait_for

STANDARD_SC_NAME = "standard"


@pytest.fixture(scope="module", autouse=True)
def kind_default_class(yk):
    """kind's default StorageClass, which upstream's claims take when they name none."""
    storage = k8s.StorageV1Api(yk.kube.core.api_client)
    storage.create_storage_class({"metadata": {"name": STANDARD_SC_NAME, "annotations": {
        "storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "rancher.io/local-path",
        "reclaimPolicy": "Delete", "volumeBindingMode": "WaitForFirstConsumer"})
    yield
    storage.delete_storage_class(STANDARD_SC_NAME)


@pytest.fixture
def dev(yk):
    with yk.kube.test_namespace("dev-" + rand_seq(5)) as made:
        yield made


def init_persistent_volume(name: str, capacity: str, path: str, storage_class: str) -> dict:
    """InitPersistentVolume of a Local volume, with upstream's node affinity that excludes no node."""
    return {"metadata": {"name": name},
            "spec": {"capacity": {"storage": capacity}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": storage_class,
                     "local": {"path": path},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "fakeKey", "operator": "NotIn", "values": ["fakeValue"]}]}]}}}}


def test_verify_static_binding_of_local_pv(yk, dev):
    """It("Verify_static_binding_of_local_pv")"""
    core = yk.kube.core
    pv_name = "local-pv-" + rand_seq(5)
    core.create_persistent_volume(init_persistent_volume(pv_name, "1Gi", "/tmp", STANDARD_SC_NAME))
    try:
        wait_for(lambda: getattr(core.read_persistent_volume(pv_name).status, "phase", None) == "Available", timeout=10,
                 message=f"volume {pv_name} Available")
        pvc_name = "pvc-" + rand_seq(5)
        core.create_namespaced_persistent_volume_claim(dev, {
            "metadata": {"name": pvc_name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                     "volumeName": pv_name}})
        wait_for(lambda: core.read_namespaced_persistent_volume_claim(pvc_name, dev), timeout=10,
                 message=f"claim {pvc_name}")
        pod_name = "pod-" + rand_seq(5)
        yk.kube.create_pod(init_test_pod(TestPodConfig(name=pod_name, namespace=dev, pvc_name=pvc_name)), dev)
        yk.kube.wait_for_pod_running(dev, pod_name)
    finally:
        core.delete_persistent_volume(pv_name)
