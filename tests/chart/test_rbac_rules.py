"""The chart's RBAC grants what each command needs and nothing broader: checked with the same
authorizer the coverage tests use, so those tests can fail when a call is not granted."""

from __future__ import annotations

import pytest

from tests.chart.rbac import ApiCall, Authorizer
from tests.chart.rendering import RELEASE_NAMESPACE

NS = RELEASE_NAMESPACE
SCHEDULER_MAY = [
    ApiCall("watch", "pods", "", "", ""),
    ApiCall("list", "nodes", "", "", ""),
    ApiCall("get", "priorityclasses", "", "", "high"),
    ApiCall("create", "pods", "binding", "team-a", "job-1"),
    ApiCall("patch", "pods", "status", "team-a", "job-1"),
    ApiCall("create", "pods", "", "team-a", ""),  # gang placeholders
    ApiCall("delete", "pods", "", "team-a", "placeholder-1"),
    ApiCall("create", "pods", "eviction", "team-a", "victim-1"),
    ApiCall("create", "events", "", "team-a", ""),
    ApiCall("watch", "configmaps", "", NS, ""),
    ApiCall("watch", "persistentvolumeclaims", "", "", ""),
    ApiCall("list", "persistentvolumes", "", "", ""),
    ApiCall("watch", "storageclasses", "", "", ""),
    ApiCall("patch", "persistentvolumes", "", "", "pv-1"),
    ApiCall("patch", "persistentvolumes", "status", "", "pv-1"),
    ApiCall("patch", "persistentvolumeclaims", "", "team-a", "data"),
    ApiCall("patch", "persistentvolumeclaims", "status", "team-a", "data"),
]
SCHEDULER_MAY_NOT = [
    ApiCall("update", "pods", "", "team-a", "job-1"),
    ApiCall("update", "nodes", "", "", "node-1"),
    ApiCall("delete", "persistentvolumes", "", "", "pv-1"),
    ApiCall("create", "persistentvolumeclaims", "", "team-a", ""),
    ApiCall("get", "secrets", "", NS, "admission-controller-secrets"),
    ApiCall("list", "configmaps", "", "team-a", ""),
    ApiCall("create", "mutatingwebhookconfigurations", "", "", ""),
]
CONTROLLER_MAY = [
    ApiCall("watch", "namespaces", "", "", ""),
    ApiCall("list", "priorityclasses", "", "", ""),
    ApiCall("watch", "configmaps", "", NS, ""),
    ApiCall("create", "secrets", "", NS, ""),
    ApiCall("update", "secrets", "", NS, "admission-controller-secrets"),
    ApiCall("create", "validatingwebhookconfigurations", "", "", ""),
    ApiCall("update", "mutatingwebhookconfigurations", "", "", "yunikorn-admission-controller-mutations"),
    ApiCall("delete", "validatingwebhookconfigurations", "", "", "yunikorn-admission-controller-validations"),
]
CONTROLLER_MAY_NOT = [
    ApiCall("get", "secrets", "", NS, "some-other-secret"),
    ApiCall("list", "secrets", "", NS, ""),
    ApiCall("get", "secrets", "", "team-a", "admission-controller-secrets"),
    ApiCall("delete", "mutatingwebhookconfigurations", "", "", "someone-elses-webhook"),
    ApiCall("list", "pods", "", "", ""),
    ApiCall("create", "pods", "binding", "team-a", "job-1"),
]


@pytest.fixture(scope="module")
def accounts(render):
    objects = render()
    return {name: Authorizer(objects, name, NS) for name in ("yunikorn-admin", "yunikorn-admission-controller")}


@pytest.mark.parametrize("account, call, allowed", [
    *[("yunikorn-admin", call, True) for call in SCHEDULER_MAY],
    *[("yunikorn-admin", call, False) for call in SCHEDULER_MAY_NOT],
    *[("yunikorn-admission-controller", call, True) for call in CONTROLLER_MAY],
    *[("yunikorn-admission-controller", call, False) for call in CONTROLLER_MAY_NOT],
], ids=str)
def test_grants(accounts, account, call, allowed):
    assert accounts[account].allows(call) is allowed


def test_a_renamed_service_account_keeps_its_grants(render):
    objects = render({"scheduler": {"serviceAccount": "custom-sa"}})
    assert Authorizer(objects, "custom-sa", NS).allows(SCHEDULER_MAY[0])
    assert not Authorizer(objects, "yunikorn-admin", NS).allows(SCHEDULER_MAY[0])
