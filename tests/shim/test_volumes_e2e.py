"""Pods with persistent volume claims end to end: claims, volumes and storage classes created with the
official client in kubesim; the cases of kube-scheduler's VolumeBinding filter, named after them."""

from __future__ import annotations

from kubernetes import client as k8s

from actors.core.config import DEFAULT_QUEUES_YAML
from tests.shim.doubles import wait_for

ZONE = "topology.kubernetes.io/zone"
VOLUME = {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}


def storage(cluster):
    return k8s.StorageV1Api(cluster.api)


def storage_class(cluster, name: str, mode: str = "WaitForFirstConsumer",
                  provisioner: str = "kubernetes.io/no-provisioner") -> None:
    storage(cluster).create_storage_class({"metadata": {"name": name}, "provisioner": provisioner,
                                           "volumeBindingMode": mode})


def volume(cluster, name: str, class_name: str, zone: str | None = None, size: str = "1Gi",
           claim: str = "") -> None:
    spec = {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": class_name}
    if zone:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}]}}
    if claim:
        spec["claimRef"] = {"namespace": "default", "name": claim}
    cluster.core_api.create_persistent_volume({"metadata": {"name": name}, "spec": spec})
    if claim:
        cluster.core_api.patch_persistent_volume_status(name, {"status": {"phase": "Bound"}})


def claim(cluster, name: str, class_name: str, bound_to: str = "", size: str = "1Gi") -> None:
    spec = {"accessModes": ["ReadWriteOnce"], "storageClassName": class_name,
            "resources": {"requests": {"storage": size}}}
    if bound_to:
        spec["volumeName"] = bound_to
    cluster.core_api.create_namespaced_persistent_volume_claim("default", {"metadata": {"name": name}, "spec": spec})
    if bound_to:
        cluster.core_api.patch_namespaced_persistent_volume_claim_status(name, "default",
                                                                         {"status": {"phase": "Bound"}})


def two_zones(cluster) -> None:
    cluster.node("a1", labels={ZONE: "a"})
    cluster.node("b1", labels={ZONE: "b"})


def test_volumebinding_bound_pvc_with_node_affinity_conflict_is_placed_only_where_its_volume_is(cluster):
    two_zones(cluster)
    storage_class(cluster, "local", mode="Immediate")
    volume(cluster, "pv-b", "local", zone="b", claim="data")
    claim(cluster, "data", "local", bound_to="pv-b")
    cluster.start_scheduler()
    names = [f"p{i}" for i in range(3)]
    for name in names:
        cluster.pod(name, volumes=[VOLUME])
    cluster.wait_bound(*names)
    assert {cluster.node_of(n) for n in names} == {"b1"}
    cluster.pod("too-big", cpu="3900m", volumes=[VOLUME])  # b1 is too full for it, a1 in the wrong zone
    wait_for(lambda: cluster.events("FailedScheduling", "too-big"))
    (event,) = cluster.events("FailedScheduling", "too-big")
    assert event.message == ("0/2 nodes are available: 1 Insufficient vcore, "
                             "1 node(s) had volume node affinity conflict.")
    cluster.assert_consistent()


def test_volumebinding_pvc_not_found_and_unbound_immediate_pvc_wait_with_a_reason(cluster):
    two_zones(cluster)
    storage_class(cluster, "fast", mode="Immediate")
    cluster.start_scheduler()
    cluster.pod("no-claim", volumes=[VOLUME])
    wait_for(lambda: cluster.events("FailedScheduling", "no-claim"))
    assert cluster.events("FailedScheduling", "no-claim")[0].message == 'persistentvolumeclaim "data" not found'
    claim(cluster, "data", "fast")
    wait_for(lambda: any(e.message == "pod has unbound immediate PersistentVolumeClaims"
                         for e in cluster.events("FailedScheduling", "no-claim")))
    assert not cluster.bound("no-claim")
    volume(cluster, "pv-a", "fast", zone="a", claim="data")
    cluster.core_api.patch_namespaced_persistent_volume_claim("data", "default", {"spec": {"volumeName": "pv-a"}})
    cluster.core_api.patch_namespaced_persistent_volume_claim_status("data", "default", {"status": {"phase": "Bound"}})
    cluster.wait_bound("no-claim")
    assert cluster.node_of("no-claim") == "a1"


def test_volumebinding_wait_for_first_consumer_binds_a_matching_available_pv_before_the_pod(cluster):
    two_zones(cluster)
    storage_class(cluster, "local")
    volume(cluster, "pv-small-a", "local", zone="a", size="1Gi")
    volume(cluster, "pv-b", "local", zone="b", size="5Gi")
    claim(cluster, "data", "local", size="2Gi")  # only pv-b is big enough: the pod must go to zone b
    cluster.start_scheduler()
    cluster.pod("consumer", volumes=[VOLUME])
    cluster.wait_bound("consumer")
    assert cluster.node_of("consumer") == "b1"
    bound = cluster.core_api.read_namespaced_persistent_volume_claim("data", "default")
    assert bound.spec.volume_name == "pv-b" and bound.status.phase == "Bound"
    assert cluster.core_api.read_persistent_volume("pv-b").spec.claim_ref.name == "data"
    cluster.assert_consistent()


def test_volumebinding_wait_for_first_consumer_without_a_pv_is_explained(cluster):
    two_zones(cluster)
    storage_class(cluster, "local")
    claim(cluster, "data", "local")
    cluster.start_scheduler()
    cluster.pod("consumer", volumes=[VOLUME])
    wait_for(lambda: cluster.events("FailedScheduling", "consumer"))
    assert cluster.events("FailedScheduling", "consumer")[0].message == (
        "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind.")
    volume(cluster, "pv-a", "local", zone="a")
    cluster.wait_bound("consumer")
    assert cluster.node_of("consumer") == "a1"


def test_volumebinding_dynamic_provisioning_annotates_the_selected_node_and_times_out(cluster):
    cluster.node("a1", labels={ZONE: "a"})
    storage_class(cluster, "dynamic", provisioner="csi.example.com")
    claim(cluster, "data", "dynamic")
    cluster.configure(DEFAULT_QUEUES_YAML, **{"service.volumeBindTimeout": "1s"})
    cluster.start_scheduler()
    cluster.pod("consumer", volumes=[VOLUME])
    wait_for(lambda: cluster.events("PodVolumesBindFailure", "consumer"))
    annotations = cluster.core_api.read_namespaced_persistent_volume_claim("data", "default").metadata.annotations
    assert annotations["volume.kubernetes.io/selected-node"] == "a1"
    assert "timed out waiting for claim \"data\"" in cluster.events("PodVolumesBindFailure", "consumer")[0].message
    assert not cluster.bound("consumer")
    # A provisioner answers: the next attempt finds the claim bound and binds the pod.
    volume(cluster, "pv-new", "dynamic", zone="a", claim="data")
    cluster.core_api.patch_namespaced_persistent_volume_claim("data", "default", {"spec": {"volumeName": "pv-new"}})
    cluster.core_api.patch_namespaced_persistent_volume_claim_status("data", "default", {"status": {"phase": "Bound"}})
    cluster.wait_bound("consumer", timeout=30)
    cluster.assert_consistent()


def test_volumebinding_recovery_takes_bound_pods_volumes_as_given(cluster):
    two_zones(cluster)
    storage_class(cluster, "local", mode="Immediate")
    volume(cluster, "pv-a", "local", zone="a", claim="data")
    claim(cluster, "data", "local", bound_to="pv-a")
    cluster.pod("running", node="b1", volumes=[VOLUME])  # bound before we started, against its volume
    cluster.start_scheduler()
    cluster.pod("new", volumes=[VOLUME])
    cluster.wait_bound("new")
    assert cluster.node_of("new") == "a1" and cluster.node_of("running") == "b1"
    assert not cluster.events("FailedScheduling", "running")


def test_a_read_write_once_pod_claim_is_warned_as_not_enforced(cluster):
    two_zones(cluster)
    storage_class(cluster, "local", mode="Immediate")
    volume(cluster, "pv-a", "local", zone="a", claim="solo")
    cluster.core_api.create_namespaced_persistent_volume_claim("default", {"metadata": {"name": "solo"}, "spec": {
        "accessModes": ["ReadWriteOncePod"], "storageClassName": "local", "volumeName": "pv-a",
        "resources": {"requests": {"storage": "1Gi"}}}})
    cluster.core_api.patch_namespaced_persistent_volume_claim_status("solo", "default", {"status": {"phase": "Bound"}})
    cluster.start_scheduler()
    cluster.pod("only", volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "solo"}}])
    cluster.wait_bound("only")
    (event,) = wait_for(lambda: cluster.events("UnenforcedConstraints", "only"))
    assert "ReadWriteOncePod" in event.message and cluster.node_of("only") == "a1"
