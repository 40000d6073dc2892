"""The ServiceAccount controller, through the official client: each namespace, those kubesim starts with
and those made later, gets a ``default`` ServiceAccount, made again when deleted; and the switch."""

from __future__ import annotations

from kubernetes import client

from kubesim import KubeSim
from tests.waiting import wait_for


def accounts(core, namespace: str) -> list[str]:
    return [a.metadata.name for a in core.list_namespaced_service_account(namespace).items]


def test_every_namespace_gets_a_default_account_made_again_when_deleted(kubesim, core):
    wait_for(lambda: accounts(core, "default") == ["default"] and accounts(core, "kube-system") == ["default"],
             timeout=5, message="the default accounts of the namespaces kubesim starts with")
    core.create_namespace({"metadata": {"name": "team"}})
    wait_for(lambda: accounts(core, "team") == ["default"], timeout=5, message="the default account of team")
    core.delete_namespaced_service_account("default", "team")
    wait_for(lambda: accounts(core, "team") == ["default"], timeout=5, message="the default account made again")


def test_the_serviceaccount_controller_is_switched_off():
    with KubeSim(serviceaccount_controller=False) as sim, sim.api_client() as api:
        core = client.CoreV1Api(api)
        core.create_namespace({"metadata": {"name": "team"}})
        # a Job is made by a controller left on: once its pod exists, the account controller had its turn
        client.BatchV1Api(api).create_namespaced_job("team", {"metadata": {"name": "marker"}, "spec": {
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}})
        wait_for(lambda: sim.objects("pods"), timeout=5, message="the Job's pod")
        assert accounts(core, "team") == [] and accounts(core, "default") == []
