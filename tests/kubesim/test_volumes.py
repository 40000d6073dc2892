"""The PersistentVolume controller and DefaultStorageClass admission, through the official client: a new
volume turns Available, a claim binds to the volume it names or to the smallest that fits, a
WaitForFirstConsumer claim is left to its pod's scheduler, deletions release and lose, and the switch."""

from __future__ import annotations

import pytest
from kubernetes import client

from kubesim import KubeSim
from tests.waiting import wait_for


@pytest.fixture
def core(sim_api):
    return client.CoreV1Api(sim_api)


def volume(name: str, size: str = "1Gi", storage_class: str = "standard", modes=("ReadWriteOnce",)) -> dict:
    return {"metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": list(modes), "storageClassName": storage_class,
                     "persistentVolumeReclaimPolicy": "Retain", "local": {"path": "/tmp"}}}


def claim(name: str, size: str = "1Gi", storage_class: str | None = "standard", volume_name: str = "") -> dict:
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume_name:
        spec["volumeName"] = volume_name
    return {"metadata": {"name": name}, "spec": spec}


def volume_phase(core, name: str) -> str | None:
    return core.read_persistent_volume(name).status.phase


def claim_phase(core, name: str) -> str | None:
    return core.read_namespaced_persistent_volume_claim(name, "default").status.phase


def test_a_new_volume_turns_available_and_a_claim_naming_it_binds(sim, core):
    core.create_persistent_volume(volume("pv-a"))
    wait_for(lambda: volume_phase(core, "pv-a") == "Available", timeout=5, message="pv-a Available")
    created = core.create_namespaced_persistent_volume_claim("default", claim("data", "500Mi", volume_name="pv-a"))
    wait_for(lambda: claim_phase(core, "data") == "Bound", timeout=5, message="claim Bound")
    bound = core.read_namespaced_persistent_volume_claim("data", "default")
    assert (bound.spec.volume_name, bound.status.capacity, bound.status.access_modes) == (
        "pv-a", {"storage": "1Gi"}, ["ReadWriteOnce"])
    assert bound.metadata.annotations == {"pv.kubernetes.io/bind-completed": "yes"}
    pv = core.read_persistent_volume("pv-a")
    assert pv.status.phase == "Bound"
    assert (pv.spec.claim_ref.namespace, pv.spec.claim_ref.name, pv.spec.claim_ref.uid) == (
        "default", "data", created.metadata.uid)


def test_a_claim_binds_the_smallest_fitting_volume_of_its_class(sim, core):
    for name, size, storage_class in (("big", "10Gi", "standard"), ("small", "2Gi", "standard"),
                                      ("tiny", "500Mi", "standard"), ("other", "2Gi", "fast")):
        core.create_persistent_volume(volume(name, size, storage_class))
    wait_for(lambda: all(v["status"].get("phase") == "Available" for v in sim.objects("persistentvolumes")),
             timeout=5, message="the volumes Available")
    core.create_namespaced_persistent_volume_claim("default", claim("data", "1Gi"))
    wait_for(lambda: claim_phase(core, "data") == "Bound", timeout=5, message="claim Bound")
    assert core.read_namespaced_persistent_volume_claim("data", "default").spec.volume_name == "small"
    annotations = core.read_persistent_volume("small").metadata.annotations
    assert annotations == {"pv.kubernetes.io/bound-by-controller": "yes"}
    core.create_namespaced_persistent_volume_claim("default", claim("huge", "100Gi"))
    core.create_namespaced_persistent_volume_claim("default", claim("marker", "1Gi"))
    wait_for(lambda: claim_phase(core, "marker") == "Bound", timeout=5, message="marker Bound")
    assert claim_phase(core, "huge") == "Pending"  # nothing holds it


def test_the_default_class_is_given_to_a_claim_naming_none(sim, core):
    storage = client.StorageV1Api(core.api_client)
    storage.create_storage_class({"metadata": {"name": "standard", "annotations": {
        "storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "kubernetes.io/no-provisioner"})
    core.create_persistent_volume(volume("pv-a"))
    made = core.create_namespaced_persistent_volume_claim("default", claim("data", storage_class=None, volume_name="pv-a"))
    assert made.spec.storage_class_name == "standard"
    wait_for(lambda: claim_phase(core, "data") == "Bound", timeout=5, message="claim Bound")
    explicit = core.create_namespaced_persistent_volume_claim("default", claim("none", storage_class=""))
    assert explicit.spec.storage_class_name == ""


def test_a_wait_for_first_consumer_claim_is_left_to_the_scheduler(sim, core):
    client.StorageV1Api(core.api_client).create_storage_class({
        "metadata": {"name": "local"}, "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer"})
    core.create_persistent_volume(volume("pv-late", storage_class="local"))
    core.create_namespaced_persistent_volume_claim("default", claim("late", storage_class="local"))
    core.create_persistent_volume(volume("pv-marker"))
    core.create_namespaced_persistent_volume_claim("default", claim("marker"))
    wait_for(lambda: claim_phase(core, "marker") == "Bound", timeout=5, message="marker Bound")
    assert claim_phase(core, "late") == "Pending" and volume_phase(core, "pv-late") == "Available"


def test_deleting_the_claim_releases_its_volume_and_deleting_the_volume_loses_the_claim(sim, core):
    for name in ("pv-a", "pv-b"):
        core.create_persistent_volume(volume(name))
    core.create_namespaced_persistent_volume_claim("default", claim("a", volume_name="pv-a"))
    core.create_namespaced_persistent_volume_claim("default", claim("b", volume_name="pv-b"))
    wait_for(lambda: claim_phase(core, "a") == "Bound" and claim_phase(core, "b") == "Bound", timeout=5,
             message="both claims Bound")
    core.delete_namespaced_persistent_volume_claim("a", "default")
    wait_for(lambda: volume_phase(core, "pv-a") == "Released", timeout=5, message="pv-a Released")
    core.delete_persistent_volume("pv-b")
    wait_for(lambda: claim_phase(core, "b") == "Lost", timeout=5, message="claim b Lost")


def test_the_volume_controller_is_switched_off():
    with KubeSim(volume_controller=False) as sim, sim.api_client() as api:
        core = client.CoreV1Api(api)
        core.create_persistent_volume(volume("pv-a"))
        core.create_namespaced_persistent_volume_claim("default", claim("data", volume_name="pv-a"))
        # a Job is made by a controller left on: once its pod exists, the volume controller had its turn
        client.BatchV1Api(api).create_namespaced_job("default", {"metadata": {"name": "marker"}, "spec": {
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}})
        wait_for(lambda: sim.objects("pods"), timeout=5, message="the Job's pod")
        assert volume_phase(core, "pv-a") == "Pending" and claim_phase(core, "data") == "Pending"
