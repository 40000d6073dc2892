"""Port of upstream's test/e2e/user_group_limit/user_group_limit_test.go (suite: user_group_limit_suite_test.go;
each spec applies a configmap with limits on root.sandbox1 (and an unlimited root.sandbox2), plus upstream's
custom entries: UGM debug logging and the admission controller's bypassAuth, so that a pod may carry its
own ``yunikorn.apache.org/user.info``; AfterEach tears the namespace down and restores the configmap).

Upstream checks that a pod stays Pending by sleeping 5 s first; here the pod's application is awaited in
the scheduler with its request pending, which is what those seconds give it time to reach.

"Verify User info for the non kube admin user" creates a service account, a ClusterRole and its binding and a
``kubernetes.io/service-account-token`` Secret, then creates a pod with a client built from a kubeconfig holding
that token: kubesim's tokens controller fills the Secret, the token authenticates as the service account, RBAC
authorises it, and the admission controller (started for this spec alone, as the suite's other specs run
without one) writes that account into the pod's user.info. Upstream's second configmap update in it replaces
the ``oldConfigMap`` its AfterEach restores; here the configmap as it was before the spec is restored."""

from __future__ import annotations

import base64
import json
import urllib.parse

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as kubeconfig

from tests.upstream.framework import (
    DEFAULT_PARTITION,
    SleepPodConfig,
    YAPIError,
    add_queue,
    init_sleep_pod,
    rand_seq,
)
from tests.waiting import wait_for

LARGE_MEM, MEDIUM_MEM, SMALL_MEM = 100, 50, 30
USER1, USER2, GROUP1, GROUP2 = "user1", "user2", "group1", "group2"
SANDBOX1, SANDBOX2 = "root.sandbox1", "root.sandbox2"
USER, GROUP = "user", "group"
USER_INFO = "yunikorn.apache.org/user.info"
ADMISSION_CUSTOM_CONFIG = {"log.core.scheduler.ugm.level": "debug", "admissionController.accessControl.bypassAuth": "true"}


@pytest.fixture(scope="module")
def suite(yk):
    yield yk
    assert yk.rest.get_failed_health_checks() == ""


class Ugl:
    def __init__(self, yk) -> None:
        self.yk, self.kube, self.rest = yk, yk.kube, yk.rest
        self.dev = "dev" + rand_seq(5)
        assert self.kube.create_namespace(self.dev, None).status.phase == "Active"
        self.old = None

    def configure(self, limits: list[dict], sandbox2: bool = True) -> None:
        def mutate(config: dict) -> None:
            config["partitions"][0].pop("placementrules", None)
            add_queue(config, "default", "root", {"name": "sandbox1", "limits": limits})
            if sandbox2:
                add_queue(config, "default", "root", {"name": "sandbox2"})
        old = self.yk.configmaps.update("", mutate, custom_map=ADMISSION_CUSTOM_CONFIG)
        self.old = self.old or old

    def deploy_sleep_pod(self, usergroup: dict, queue_path: str, expected_running: bool, reason: str):
        pod = init_sleep_pod(SleepPodConfig(ns=self.dev, mem=SMALL_MEM, labels={"queue": queue_path}))
        pod["metadata"]["annotations"][USER_INFO] = json.dumps(usergroup, separators=(",", ":"))
        created = self.kube.create_pod(pod, self.dev)
        name = created.metadata.name
        if expected_running:
            self.kube.wait_for_pod_running(self.dev, name)
        else:
            app_id = created.metadata.labels["applicationId"]

            def pending_in_scheduler() -> bool:
                try:
                    return bool(self.rest.get_app_info(DEFAULT_PARTITION, queue_path, app_id).get("requests"))
                except YAPIError:
                    return False
            wait_for(pending_in_scheduler, timeout=10, interval=0.05, message=f"the request of {name} pending")
            self.kube.wait_for_pod_pending(self.dev, name)
            assert self.kube.get_pod(name, self.dev).status.phase == "Pending", f"{name} can't be scheduled {reason}"
        return created

    def check_usage(self, test_type: str, name: str, queue_path: str, expected_running_pods: list,
                    wildcard_groups: bool = False) -> None:
        """checkUsage, and checkUsageWildcardGroups with ``wildcard_groups`` (the usage tracked under '*')."""
        if wildcard_groups:
            usage = next((g for g in self.rest.get_groups_usage(DEFAULT_PARTITION) if g["groupName"] == "*"), None)
        elif test_type == USER:
            usage = self.rest.get_user_usage(DEFAULT_PARTITION, name)
        else:
            usage = self.rest.get_group_usage(DEFAULT_PARTITION, name)
        assert usage is not None
        root = usage["queues"]
        assert root is not None
        queue = next((q for q in root.get("children") or [] if q["queuePath"] == queue_path), None)
        assert queue is not None
        assert queue["resourceUsage"] is not None
        assert queue["resourceUsage"].get("pods", 0) == len(expected_running_pods)
        assert sorted(queue["runningApplications"] or []) == sorted(
            p.metadata.labels["applicationId"] for p in expected_running_pods)

    def close(self) -> None:
        self.kube.tear_down_namespace(self.dev)
        if self.old is not None:
            self.yk.configmaps.restore(self.old)


@pytest.fixture
def ugl(suite):
    made = Ugl(suite)
    yield made
    made.close()


def limit(kind: str, names: list[str], max_apps: int, memory: int, label: str | None = None) -> dict:
    key = "users" if kind == USER else "groups"
    return {"limit": label or f"{kind} entry", key: names, "maxapplications": max_apps,
            "maxresources": {"memory": f"{memory}M"}}


def ug(user: str, group: str) -> dict:
    return {"user": user, "groups": [group]}


def specific_limit_then_others(ugl: Ugl, test_type: str, name: str, why: str, check_others: bool) -> None:
    usergroup1 = ug(USER1, GROUP1)
    pod1 = ugl.deploy_sleep_pod(usergroup1, SANDBOX1, True, f"because {why} is less than the limit")
    ugl.deploy_sleep_pod(usergroup1, SANDBOX1, False, f"because final {why} is more than the limit")
    ugl.check_usage(test_type, name, SANDBOX1, [pod1])
    sandbox2 = [ugl.deploy_sleep_pod(usergroup1, SANDBOX2, True, "because there is no limit in root.sandbox2")
                for _ in range(2)]
    if check_others:
        ugl.check_usage(USER, USER1, SANDBOX2, sandbox2)
    usergroup2 = ug(USER2, GROUP2)
    others = [ugl.deploy_sleep_pod(usergroup2, SANDBOX1, True, f"because there is no limit for {usergroup2}")
              for _ in range(2)]
    if check_others:
        ugl.check_usage(USER, USER2, SANDBOX1, others)


def test_verify_maxresources_with_a_specific_user_limit(ugl):
    """It("Verify_maxresources_with_a_specific_user_limit")"""
    ugl.configure([limit(USER, [USER1], 2, MEDIUM_MEM)])
    specific_limit_then_others(ugl, USER, USER1, "memory usage", True)


def test_verify_maxapplications_with_a_specific_user_limit(ugl):
    """It("Verify_maxapplications_with_a_specific_user_limit")"""
    ugl.configure([limit(USER, [USER1], 1, LARGE_MEM)])
    specific_limit_then_others(ugl, USER, USER1, "application count", True)


def test_verify_maxresources_with_a_specific_group_limit(ugl):
    """It("Verify_maxresources_with_a_specific_group_limit")"""
    ugl.configure([limit(GROUP, [GROUP1], 2, MEDIUM_MEM)])
    specific_limit_then_others(ugl, GROUP, GROUP1, "memory usage", False)


def test_verify_maxapplications_with_a_specific_group_limit(ugl):
    """It("Verify_maxapplications_with_a_specific_group_limit")"""
    ugl.configure([limit(GROUP, [GROUP1], 1, LARGE_MEM)])
    specific_limit_then_others(ugl, GROUP, GROUP1, "application count", False)


def test_verify_maxresources_with_user_limit_lower_than_group_limit(ugl):
    """It("Verify_maxresources_with_user_limit_lower_than_group_limit")"""
    ugl.configure([limit(USER, [USER1], 2, MEDIUM_MEM), limit(GROUP, [GROUP1], 2, LARGE_MEM)])
    pod1 = ugl.deploy_sleep_pod(ug(USER1, GROUP1), SANDBOX1, True, "because memory usage is less than maxresources")
    ugl.deploy_sleep_pod(ug(USER1, GROUP1), SANDBOX1, False, "because final memory usage is more than maxresources "
                                                             "in user limit")
    ugl.check_usage(USER, USER1, SANDBOX1, [pod1])


def test_verify_maxresources_with_group_limit_lower_than_user_limit(ugl):
    """It("Verify_maxresources_with_group_limit_lower_than_user_limit")"""
    ugl.configure([limit(USER, [USER1], 2, LARGE_MEM), limit(GROUP, [GROUP1], 2, MEDIUM_MEM)])
    pod1 = ugl.deploy_sleep_pod(ug(USER1, GROUP1), SANDBOX1, True, "because memory usage is less than maxresources")
    ugl.deploy_sleep_pod(ug(USER1, GROUP1), SANDBOX1, False, "because final memory usage is more than maxresources "
                                                             "in group limit")
    ugl.check_usage(USER, USER1, SANDBOX1, [pod1])


@pytest.mark.parametrize("kind, name, max_apps, wildcard_apps, wildcard_mem", [
    pytest.param(USER, USER1, 2, 2, MEDIUM_MEM, id="Verify_maxresources_with_a_wildcard_user_limit"),
    pytest.param(USER, USER1, 2, 1, LARGE_MEM, id="Verify_maxapplications_with_a_wildcard_user_limit"),
    pytest.param(GROUP, GROUP1, 2, 2, MEDIUM_MEM, id="Verify_maxresources_with_a_wildcard_group_limit"),
    pytest.param(GROUP, GROUP1, 2, 1, LARGE_MEM, id="Verify_maxapplications_with_a_wildcard_group_limit"),
])
def test_verify_wildcard_limit(ugl, kind, name, max_apps, wildcard_apps, wildcard_mem):
    """It("Verify_maxresources_with_a_wildcard_user_limit"), It("Verify_maxapplications_with_a_wildcard_user_limit"),
    It("Verify_maxresources_with_a_wildcard_group_limit"), It("Verify_maxapplications_with_a_wildcard_group_limit"):
    the named entry lets usergroup1 run two pods, the wildcard entry lets usergroup2 run one."""
    ugl.configure([limit(kind, [name], max_apps, LARGE_MEM),
                   limit(kind, ["*"], wildcard_apps, wildcard_mem, label=f"wildcard {kind} entry")], sandbox2=False)
    usergroup1 = ug(USER1, GROUP1)
    pods = [ugl.deploy_sleep_pod(usergroup1, SANDBOX1, True, "because usage is within the entry's limit")
            for _ in range(2)]
    ugl.check_usage(USER, USER1, SANDBOX1, pods)
    usergroup2 = ug(USER2, GROUP2)
    pod = ugl.deploy_sleep_pod(usergroup2, SANDBOX1, True, "because usage is less than the wildcard entry's limit")
    ugl.deploy_sleep_pod(usergroup2, SANDBOX1, False, "because final usage is more than the wildcard entry's limit")
    ugl.check_usage(USER, USER2, SANDBOX1, [pod])


@pytest.mark.parametrize("kind, valid_name", [
    pytest.param(USER, "user_Test-a_b_#_c_#_d_/_e@dom:ain.com",
                 id="Verify_maxresources_with_a_valid_user_name_and_specific_user_limit"),
    pytest.param(GROUP, "group_Test-a_b_dom:ain.com",
                 id="Verify_maxresources_with_a_valid_group_name_and_specific_group_limit"),
])
def test_verify_maxresources_with_a_valid_name_and_specific_limit(ugl, kind, valid_name):
    """It("Verify_maxresources_with_a_valid_user_name_and_specific_user_limit") and
    It("Verify_maxresources_with_a_valid_group_name_and_specific_group_limit")"""
    ugl.configure([limit(kind, [valid_name], 2, MEDIUM_MEM)])
    usergroup1 = ug(valid_name, GROUP1) if kind == USER else ug(USER1, valid_name)
    pod1 = ugl.deploy_sleep_pod(usergroup1, SANDBOX1, True, "because memory usage is less than maxresources")
    ugl.deploy_sleep_pod(usergroup1, SANDBOX1, False, "because final memory usage is more than maxresources")
    ugl.check_usage(kind, urllib.parse.quote_plus(valid_name), SANDBOX1, [pod1])


def test_verify_queue_name_with_special_characters(ugl):
    """It("Verify_Queue_Name_With_Special_Characters")"""
    queue_name = "root_test22-a_b_#_c_#_d_/_e@dom:ain"

    def mutate(config: dict) -> None:
        config["partitions"][0].pop("placementrules", None)
        add_queue(config, "default", "root", {"name": queue_name, "resources": {"guaranteed": {"memory": "200M"}},
                                              "properties": {"preemption.delay": "1s"}})
    ugl.old = ugl.yk.configmaps.update("", mutate)
    queue_info = ugl.rest.get_queue("default", "root." + urllib.parse.quote_plus(queue_name))
    assert queue_info["queuename"] == "root." + queue_name


def user_and_wildcard(kind: str, wildcard_apps: int) -> list[dict]:
    name = USER1 if kind == USER else GROUP1
    return [limit(kind, [name], 1, MEDIUM_MEM), limit(kind, ["*"], wildcard_apps, LARGE_MEM,
                                                       label=f"wildcard {kind} entry")]


@pytest.mark.parametrize("kind", [pytest.param(USER, id="Verify user limit and wildcard user limit"),
                                  pytest.param(GROUP, id="Verify group limit and wildcard group limit")])
def test_verify_limit_and_wildcard_limit(ugl, kind):
    """It("Verify user limit and wildcard user limit") and It("Verify group limit and wildcard group limit"):
    the named entry holds usergroup1 to one app; the wildcard entry holds usergroup2 to two, then three once
    the configuration raises it, which lets the waiting pod run."""
    wildcard = kind == GROUP
    ugl.configure(user_and_wildcard(kind, 2))
    usergroup1, usergroup2 = ug(USER1, GROUP1), ug(USER2, GROUP2)
    first = USER1 if kind == USER else GROUP1
    pod1 = ugl.deploy_sleep_pod(usergroup1, SANDBOX1, True, "because usage is less than the entry's limit")
    ugl.check_usage(kind, first, SANDBOX1, [pod1])
    ugl.deploy_sleep_pod(usergroup1, SANDBOX1, False, "because final usage is more than the entry's limit")
    ugl.check_usage(kind, first, SANDBOX1, [pod1])
    second = USER2 if kind == USER else GROUP2
    pods = [ugl.deploy_sleep_pod(usergroup2, SANDBOX1, True, "because there is no limit for usergroup2")]
    ugl.check_usage(kind, second, SANDBOX1, pods, wildcard_groups=wildcard)
    pods.append(ugl.deploy_sleep_pod(usergroup2, SANDBOX1, True, "because there is no limit for usergroup2"))
    ugl.check_usage(kind, second, SANDBOX1, pods, wildcard_groups=wildcard)
    pod3 = ugl.deploy_sleep_pod(usergroup2, SANDBOX1, False, "because of the wildcard maxapplications")
    ugl.check_usage(kind, second, SANDBOX1, pods, wildcard_groups=wildcard)

    ugl.configure(user_and_wildcard(kind, 3))
    # upstream checks the usage right after the update; the pod the new limit lets run is awaited first
    ugl.kube.wait_for_pod_running(ugl.dev, pod3.metadata.name)
    pods.append(pod3)
    ugl.check_usage(kind, second, SANDBOX1, pods, wildcard_groups=wildcard)
    ugl.deploy_sleep_pod(usergroup2, SANDBOX1, False, "because of the wildcard maxapplications")
    ugl.check_usage(kind, second, SANDBOX1, pods, wildcard_groups=wildcard)


def test_verify_user_info_for_the_non_kube_admin_user(ugl, spec_admission_controller, tmp_path):
    """It("Verify User info for the non kube admin user")"""
    kube, namespace = ugl.kube, "default"
    service_account_name, pod_name, secret_name = "test-user-sa", "test-pod", "test-user-sa-token"

    def update_config(config: dict) -> None:
        config["partitions"][0].pop("placementrules", None)  # remove placement rules so we can control queue
        add_queue(config, DEFAULT_PARTITION, "root", {"name": "default", "limits": [
            {"limit": "user entry", "users": [USER1], "maxapplications": 1,
             "maxresources": {"memory": f"{MEDIUM_MEM}M"}},
            {"limit": "user2 entry", "users": [USER2], "maxapplications": 2,
             "maxresources": {"memory": f"{LARGE_MEM}M"}}]})
        add_queue(config, DEFAULT_PARTITION, "root", {"name": "sandbox2"})
    # the admission controller reads bypassAuth as it starts, false already: nothing for it to refresh
    ugl.old = ugl.yk.configmaps.update("", update_config, custom_map={
        "log.core.scheduler.ugm.level": "debug", "admissionController.accessControl.bypassAuth": "false"})

    rbac = k8s.RbacAuthorizationV1Api(kube.core.api_client)
    user_client = None
    try:
        sa = kube.core.create_namespaced_service_account(namespace, {"metadata": {"name": service_account_name}})
        rbac.create_cluster_role({"metadata": {"name": "pod-creator-role"}, "rules": [{
            "apiGroups": [""], "resources": ["pods", "serviceaccounts", "test-user-sa"],
            "verbs": ["create", "get", "list", "watch", "delete"]}]})
        # CreateClusterRoleBinding(name, role, namespace, serviceAccount)
        rbac.create_cluster_role_binding({
            "metadata": {"name": "pod-creator-role-binding"},
            "subjects": [{"kind": "ServiceAccount", "name": sa.metadata.name, "namespace": namespace}],
            "roleRef": {"name": "pod-creator-role", "kind": "ClusterRole"}})
        kube.core.create_namespaced_secret(namespace, {
            "metadata": {"name": secret_name, "annotations": {"kubernetes.io/service-account.name": service_account_name}},
            "type": "kubernetes.io/service-account-token"})
        # GetSecretValue(namespace, secretName, "token")
        token = wait_for(lambda: (kube.core.read_namespaced_secret(secret_name, namespace).data or {}).get("token"),
                         timeout=10, interval=0.05, message="the token in the Secret")
        user_token = base64.b64decode(token).decode()

        # WriteConfigToFile with the token alone, then BuildConfigFromFlags from it
        path = tmp_path / "test-user-config"
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "default-context",
            "clusters": [{"name": "default-cluster", "cluster": {"server": ugl.yk.sim.url}}],
            "users": [{"name": "default-auth", "user": {"token": user_token}}],
            "contexts": [{"name": "default-context", "context": {"cluster": "default-cluster",
                                                                  "user": "default-auth"}}]}))
        configuration = k8s.Configuration()
        kubeconfig.load_kube_config(config_file=str(path), client_configuration=configuration)
        user_client = k8s.CoreV1Api(k8s.ApiClient(configuration))

        user_client.create_namespaced_pod(namespace, {
            "metadata": {"name": pod_name, "labels": {"applicationId": "test-app"}, "annotations": {
                "created-by": f"system:serviceaccount:{namespace}:{service_account_name}",
                "user-token": user_token}},
            "spec": {"serviceAccountName": service_account_name,
                     "containers": [{"name": "nginx", "image": "nginx", "ports": [{"containerPort": 80}]}]}})
        created = user_client.read_namespaced_pod(pod_name, namespace)
        user_info = json.loads(created.metadata.annotations[USER_INFO])  # GetUserInfoFromPodAnnotation
        assert "system:serviceaccount:default:test-user-sa" in f"{user_info}"

        def add_root_22(config: dict) -> None:
            config["partitions"][0].pop("placementrules", None)
            add_queue(config, "default", "root", {"name": "root_22",
                                                  "resources": {"guaranteed": {"memory": "200M"}},
                                                  "properties": {"preemption.delay": "1s"}})
        ugl.yk.configmaps.update("", add_root_22)
    finally:
        if user_client is not None:
            user_client.delete_namespaced_pod(pod_name, namespace)
            user_client.delete_namespaced_service_account(service_account_name, namespace)
            user_client.api_client.close()
        rbac.delete_cluster_role("pod-creator-role")
        rbac.delete_cluster_role_binding("pod-creator-role-binding")
