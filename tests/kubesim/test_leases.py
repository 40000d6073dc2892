"""``coordination.k8s.io/v1`` Leases as the API server has them, through the official client: every verb,
optimistic concurrency (409 on a stale resourceVersion), and faults on renewals only."""

import datetime
import json
import threading
import urllib.request

import pytest
from kubernetes import client, watch
from kubernetes.client import ApiException

from tests.waiting import wait_for


@pytest.fixture
def leases(kube_api):
    return client.CoordinationV1Api(kube_api)


def lease(holder: str, transitions: int = 0, resource_version: str | None = None) -> client.V1Lease:
    now = datetime.datetime.now(datetime.UTC)
    return client.V1Lease(
        metadata=client.V1ObjectMeta(name="sched", resource_version=resource_version),
        spec=client.V1LeaseSpec(holder_identity=holder, lease_duration_seconds=15, acquire_time=now,
                                renew_time=now, lease_transitions=transitions))


def test_every_verb_of_a_lease(leases):
    created = leases.create_namespaced_lease("default", lease("a"))
    assert created.spec.holder_identity == "a" and created.spec.lease_duration_seconds == 15
    assert leases.read_namespaced_lease("sched", "default").metadata.uid == created.metadata.uid
    assert [x.metadata.name for x in leases.list_namespaced_lease("default").items] == ["sched"]
    assert [x.metadata.name for x in leases.list_lease_for_all_namespaces().items] == ["sched"]
    with pytest.raises(ApiException) as exists:
        leases.create_namespaced_lease("default", lease("b"))
    assert exists.value.status == 409
    updated = leases.replace_namespaced_lease("sched", "default", lease("a", 0, created.metadata.resource_version))
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)
    patched = leases.patch_namespaced_lease("sched", "default", {"spec": {"holderIdentity": ""}})
    assert patched.spec.holder_identity in ("", None) and patched.spec.lease_transitions == 0
    leases.delete_namespaced_lease("sched", "default")
    with pytest.raises(ApiException) as gone:
        leases.read_namespaced_lease("sched", "default")
    assert gone.value.status == 404


def test_an_update_with_a_stale_resource_version_is_a_conflict_and_changes_nothing(leases):
    created = leases.create_namespaced_lease("default", lease("a"))
    stale = created.metadata.resource_version
    leases.replace_namespaced_lease("sched", "default", lease("a", 0, stale))  # a renews
    with pytest.raises(ApiException) as conflict:
        leases.replace_namespaced_lease("sched", "default", lease("b", 1, stale))  # b read before the renewal
    assert conflict.value.status == 409
    assert json.loads(conflict.value.body)["reason"] == "Conflict"
    assert leases.read_namespaced_lease("sched", "default").spec.holder_identity == "a"


def test_a_lease_can_be_watched(leases):
    version = leases.list_namespaced_lease("default").metadata.resource_version
    seen = []

    def follow() -> None:
        for event in watch.Watch().stream(leases.list_namespaced_lease, "default", resource_version=version,
                                          timeout_seconds=5):
            seen.append((event["type"], event["object"].spec.holder_identity))
            if len(seen) == 2:
                return

    follower = threading.Thread(target=follow)
    follower.start()
    created = leases.create_namespaced_lease("default", lease("a"))
    leases.replace_namespaced_lease("sched", "default", lease("b", 1, created.metadata.resource_version))
    follower.join(10)
    assert seen == [("ADDED", "a"), ("MODIFIED", "b")]


def test_renew_faults_fail_the_holders_updates_but_not_a_takeover(kubesim, leases):
    created = leases.create_namespaced_lease("default", lease("a"))
    urllib.request.urlopen(urllib.request.Request(  # the admin form
        f"{kubesim.url}/kubesim/faults", data=json.dumps({"action": "fail", "verb": "renew", "resource": "leases",
                                                          "status": 500, "count": None}).encode(), method="POST"))
    with pytest.raises(ApiException) as failed:
        leases.replace_namespaced_lease("sched", "default", lease("a", 0, created.metadata.resource_version))
    assert failed.value.status == 500
    assert leases.read_namespaced_lease("sched", "default").metadata.resource_version == \
        created.metadata.resource_version
    taken = leases.replace_namespaced_lease("sched", "default", lease("b", 1, created.metadata.resource_version))
    assert taken.spec.holder_identity == "b"
    wait_for(lambda: [r.code for r in kubesim.request_log if r.resource == "leases" and r.verb == "update"]
             == [500, 200], timeout=5, message="the request log")
