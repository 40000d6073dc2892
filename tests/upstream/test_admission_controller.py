"""Port of upstream's test/e2e/admission_controller/admission_controller_test.go (suite:
admission_controller_suite_test.go: BeforeSuite keeps the configmap and makes three priority classes, AfterSuite
removes them; BeforeEach makes a namespace, AfterEach tears it down and wants no failed health check). The
``yunikorn-admission-controller`` command runs beside the scheduler and kubesim calls its webhooks.

The three specs that change the controller's trust settings ("Check that deployment is rejected when controller
users are not trusted", "... when external user is not trusted", "Check that replicaset is not modified if
submitted by system user") send requests as the kubeconfig's admin (``kubernetes-admin``, whom upstream's
externalUsers pattern names) and rely on the Deployment and ReplicaSet controllers acting as their kube-system
service accounts, as kubesim's do. Upstream waits for the changed configmap to reach an informer, then a second
(WaitForAdmissionControllerRefreshConfAfterAction); here the wait is for the controller's own answer to a pod
carrying user.info to show the new setting. Upstream waits 10 s for a refused Deployment's pod not to appear;
here the wait is for the ReplicaSet's FailedCreate event, and then no pod may be there. Upstream leaves the
changed settings for the specs after these last three; here each is restored (and awaited) after its spec,
whatever order the specs run in.

Ported with one step less: "Verifying a pod is created in the bypass namespace" waits for the pod to run, which
the default scheduler does and the emulator has none; the pod is still checked as upstream checks it (its
scheduler is not yunikorn).

Ported on a faster clock: "Check that annotation is added to a CronJob" waits up to 65 s for the first Job of a
``* * * * *`` schedule; here kubesim's CronJob controller runs a schedule's minute in one second (its time factor,
set for that spec alone), and the wait is 65 such seconds plus the suite's usual 10."""

from __future__ import annotations

import http.client
import json
import urllib.request

import pytest
from kubernetes import client as k8s

from tests.upstream.framework import CONFIG_MAP, rand_seq
from tests.waiting import wait_for
from tests.webhook import harness

APP_NAME = "sleep"
BYPASS_NS = "kube-system"
NON_EXISTENT_NODE = "non-existent-node"
DEFAULT_POD_TIMEOUT = 10
CRON_JOB_POD_TIMEOUT = 65
CRON_TIME_FACTOR = 1 / 60
USER_INFO = "yunikorn.apache.org/user.info"
ALLOW_PREEMPTION = "yunikorn.apache.org/allow-preemption"
PRIORITY_CLASSES = {  # name: (allow-preemption annotation, value, preemption policy)
    "yk-test-preempt": ("true", 2000, "PreemptLowerPriority"),
    "yk-test-non-preempt": ("false", 1000, "Never"),
    "yk-test-non-yk": (None, 1500, "PreemptLowerPriority"),
}


def test_pod() -> dict:
    return {"metadata": {"name": "sleepjob", "labels": {"app": APP_NAME}},
            "spec": {"containers": [{"name": "sleepjob", "image": "alpine:latest", "command": ["sleep", "30"]}]}}


test_pod.__test__ = False  # upstream's testPod, not a test


@pytest.fixture(scope="module")
def admission_suite(suite, admission_controller):
    for name, (allow, value, policy) in PRIORITY_CLASSES.items():
        annotations = {ALLOW_PREEMPTION: allow} if allow else None
        suite.kube.scheduling.create_priority_class({"metadata": {"name": name, "annotations": annotations},
                                                     "value": value, "preemptionPolicy": policy})
    yield suite
    for name in PRIORITY_CLASSES:
        suite.kube.delete_priority_class(name)


@pytest.fixture
def ns(admission_suite):
    with admission_suite.kube.test_namespace("ns-" + rand_seq(10)) as namespace:
        yield namespace
    assert admission_suite.rest.get_failed_health_checks() == ""


def create_pod_with_priority(yk, ns: str, name: str, priority_class: str | None):
    pod = test_pod()
    pod["metadata"]["name"] = name
    pod["spec"]["nodeName"] = NON_EXISTENT_NODE
    if priority_class:
        pod["spec"]["priorityClassName"] = priority_class
    return yk.kube.create_pod(pod, ns)


@pytest.mark.parametrize(("pod_name", "priority_class", "allow"), [
    pytest.param("preempt-pod", "yk-test-preempt", "true", id="Verifying pod with preempt priority class"),
    pytest.param(NON_EXISTENT_NODE, "yk-test-non-preempt", "false",
                 id="Verifying pod with non-preempt priority class"),
    pytest.param("non-yk-pod", "yk-test-non-yk", "true", id="Verifying pod with non-YK priority class"),
])
def test_verifying_pod_with_priority_class(admission_suite, ns, pod_name, priority_class, allow):
    """It("Verifying pod with preempt priority class"), It("Verifying pod with non-preempt priority class"),
    It("Verifying pod with non-YK priority class"): has correct properties set."""
    pod = create_pod_with_priority(admission_suite, ns, pod_name, priority_class)
    _, value, policy = PRIORITY_CLASSES[priority_class]
    assert pod.spec.priority == value
    assert pod.spec.preemption_policy == policy
    assert pod.metadata.annotations[ALLOW_PREEMPTION] == allow


def test_verifying_pod_with_no_priority_class(admission_suite, ns):
    """It("Verifying pod with no priority class")"""
    pod = create_pod_with_priority(admission_suite, ns, "no-priority", None)
    assert pod.metadata.annotations[ALLOW_PREEMPTION] == "true"


def test_verifying_a_pod_is_created_in_the_test_namespace(admission_suite, ns):
    """It("Verifying a pod is created in the test namespace"): 1 running pod whose SchedulerName is yunikorn."""
    pod = admission_suite.kube.create_pod(test_pod(), ns)
    admission_suite.kube.wait_for_pod_by_selector_running(ns, f"app={APP_NAME}", timeout=10)
    assert pod.spec.scheduler_name == "yunikorn"


def test_verifying_a_pod_is_created_in_the_bypass_namespace(admission_suite, ns):
    """It("Verifying a pod is created in the bypass namespace"): not given to YuniKorn (see the docstring for
    the wait left out)."""
    pod = admission_suite.kube.create_pod(test_pod(), BYPASS_NS)
    try:
        assert pod.spec.scheduler_name != "yunikorn"
    finally:
        admission_suite.kube.delete_pod(pod.metadata.name, BYPASS_NS)


def test_verifying_the_scheduler_configuration_is_overridden(admission_suite, ns):
    """It("Verifying the scheduler configuration is overridden"): ValidateSchedulerConfig posts the configmap
    object itself, which is no scheduler configuration."""
    invalid = {"metadata": {"name": CONFIG_MAP, "namespace": admission_suite.configmaps.namespace}, "data": {}}
    request = urllib.request.Request(f"{admission_suite.rest.base_url}/ws/v1/validate-conf",
                                     data=json.dumps(invalid).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.loads(response.read())["allowed"] is False


@pytest.fixture
def old_config_map(admission_suite):
    old = admission_suite.kube.get_config_map(CONFIG_MAP, admission_suite.configmaps.namespace)
    yield old
    admission_suite.configmaps.restore(old)


def update_config_map(yk, data: dict):
    namespace = yk.configmaps.namespace
    return yk.kube.core.replace_namespaced_config_map(CONFIG_MAP, namespace, {
        "metadata": {"name": CONFIG_MAP, "namespace": namespace}, "data": data})


def test_configure_the_scheduler_with_an_empty_configmap(admission_suite, ns, old_config_map):
    """It("Configure the scheduler with an empty configmap")"""
    assert update_config_map(admission_suite, {}) is not None


def test_configure_the_scheduler_with_invalid_configmap(admission_suite, ns, old_config_map):
    """It("Configure the scheduler with invalid configmap")"""
    with pytest.raises(k8s.ApiException):
        update_config_map(admission_suite, {"queues.yaml": "invalid"})


def test_check_that_annotation_is_added_to_a_pod_and_cannot_be_modified(admission_suite, ns):
    """It("Check that annotation is added to a pod & cannot be modified")"""
    kube = admission_suite.kube
    pod = kube.create_pod(test_pod(), ns)
    kube.wait_for_pod_by_selector(ns, f"app={APP_NAME}", timeout=10)
    pod = kube.get_pod(pod.metadata.name, ns)
    assert pod.metadata.annotations[USER_INFO]
    pod.metadata.annotations[USER_INFO] = "shouldnotsucceed"
    with pytest.raises(k8s.ApiException):
        kube.core.replace_namespaced_pod(pod.metadata.name, ns, pod)


def pod_template(restart_policy: str) -> dict:
    """getPodSpec"""
    pod = test_pod()
    pod["spec"]["restartPolicy"] = restart_policy
    return pod


def run_workload_test(yk, ns: str, pod_timeout: float = DEFAULT_POD_TIMEOUT) -> None:
    """runWorkloadTest: a pod of the workload appears, with user.info."""
    yk.kube.wait_for_pod_by_selector(ns, f"app={APP_NAME}", timeout=pod_timeout)
    pods = yk.kube.get_pods(ns)
    pod = yk.kube.get_pod(pods.items[0].metadata.name, ns)
    assert pod.metadata.annotations[USER_INFO]


def test_object(spec: dict) -> dict:
    """An upstream test workload: testPod's ObjectMeta and ``spec``."""
    return {"metadata": {"name": "sleepjob", "labels": {"app": APP_NAME}}, "spec": spec}


test_object.__test__ = False  # upstream's test objects' shape, not a test


def delete_workload_and_pods(yk, ns: str, delete) -> None:
    """DeleteWorkloadAndPods (runWorkloadTest's defer): the workload deleted at once (``delete``), the pods
    left deleted, none left after 10 s."""
    delete("sleepjob", ns, grace_period_seconds=0)
    for pod in yk.kube.get_pods(ns).items:
        yk.kube.delete_pod(pod.metadata.name, ns)
    wait_for(lambda: not yk.kube.get_pods(ns).items, timeout=10, interval=0.1, message=f"no pods left in {ns}")


def test_check_that_annotation_is_added_to_a_deployment(admission_suite, ns):
    """It("Check that annotation is added to a deployment")"""
    admission_suite.kube.create_deployment({
        "metadata": {"name": "sleepjob", "labels": {"app": APP_NAME}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": APP_NAME}},
                 "template": pod_template("Always")}}, ns)
    run_workload_test(admission_suite, ns)


def test_check_that_annotation_is_added_to_a_job(admission_suite, ns):
    """It("Check that annotation is added to a Job")"""
    admission_suite.kube.create_job({
        "metadata": {"name": "sleepjob", "labels": {"app": APP_NAME}},
        "spec": {"parallelism": 1, "completions": 1, "template": pod_template("Never")}}, ns)
    run_workload_test(admission_suite, ns)


def test_check_that_annotation_is_added_to_a_replicaset(admission_suite, ns):
    """It("Check that annotation is added to a ReplicaSet")"""
    k8s.AppsV1Api(admission_suite.kube.core.api_client).create_namespaced_replica_set(ns, {
        "metadata": {"name": "sleepjob", "labels": {"app": APP_NAME}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": APP_NAME}},
                 "template": pod_template("Always")}})
    run_workload_test(admission_suite, ns)


def test_check_that_annotation_is_added_to_a_statefulset(admission_suite, ns):
    """It("Check that annotation is added to a StatefulSet")"""
    apps = k8s.AppsV1Api(admission_suite.kube.core.api_client)
    apps.create_namespaced_stateful_set(ns, test_object({
        "selector": {"matchLabels": {"app": APP_NAME}}, "template": pod_template("Always")}))
    try:
        run_workload_test(admission_suite, ns)
    finally:
        delete_workload_and_pods(admission_suite, ns, apps.delete_namespaced_stateful_set)


def test_check_that_annotation_is_added_to_a_daemonset(admission_suite, ns):
    """It("Check that annotation is added to a DaemonSet")"""
    apps = k8s.AppsV1Api(admission_suite.kube.core.api_client)
    apps.create_namespaced_daemon_set(ns, test_object({
        "selector": {"matchLabels": {"app": APP_NAME}}, "template": pod_template("Always")}))
    try:
        run_workload_test(admission_suite, ns)
    finally:
        delete_workload_and_pods(admission_suite, ns, apps.delete_namespaced_daemon_set)


@pytest.fixture
def fast_cron(admission_suite):
    """A schedule's minute lasts a second (see the module's docstring)."""
    controller = admission_suite.sim.cronjobs
    before, controller.time_factor = controller.time_factor, CRON_TIME_FACTOR
    yield
    controller.time_factor = before


def test_check_that_annotation_is_added_to_a_cronjob(admission_suite, ns, fast_cron):
    """It("Check that annotation is added to a CronJob")"""
    batch = admission_suite.kube.batch
    batch.create_namespaced_cron_job(ns, test_object({"schedule": "* * * * *", "jobTemplate": test_object({
        "parallelism": 1, "completions": 1, "template": pod_template("Never")})}))
    try:
        run_workload_test(admission_suite, ns, CRON_JOB_POD_TIMEOUT * CRON_TIME_FACTOR + DEFAULT_POD_TIMEOUT)
    finally:
        delete_workload_and_pods(admission_suite, ns, batch.delete_namespaced_cron_job)


# The admission controller's access-control settings (upstream's amConf.AMAccessControl*).
TRUST_CONTROLLERS = "admissionController.accessControl.trustControllers"
EXTERNAL_USERS = "admissionController.accessControl.externalUsers"
BYPASS_AUTH = "admissionController.accessControl.bypassAuth"
ADMIN = ("kubernetes-admin", ("system:masters", "system:authenticated"))
REPLICASET_CONTROLLER = ("system:serviceaccount:kube-system:replicaset-controller",
                         ("system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"))


def test_deployment() -> dict:
    """testDeployment"""
    return test_object({"replicas": 1, "selector": {"matchLabels": {"app": APP_NAME}},
                        "template": pod_template("Always")})


test_deployment.__test__ = False  # upstream's testDeployment, not a test


class AccessControl:
    """Changes the controller's trust settings in the configmap (GetConfigMap, UpdateConfigMap) and awaits them."""

    def __init__(self, yk, controller, ns: str) -> None:
        self.yk, self.ns = yk, ns
        self.client = harness.HttpsClient(controller.port, harness.registered_bundle(yk.sim))

    def update(self, key: str, value: str) -> None:
        kube, namespace = self.yk.kube, self.yk.configmaps.namespace
        config_map = kube.get_config_map(CONFIG_MAP, namespace)
        config_map.data = {**(config_map.data or {}), key: value}
        kube.update_config_map(config_map, namespace)

    def user_info_accepted(self, user: tuple[str, tuple[str, ...]]) -> bool | None:
        """Whether the controller now lets ``user`` (name, groups) submit a pod that carries user.info."""
        name, groups = user
        carrying = harness.pod(labels={"app": APP_NAME}, annotations={USER_INFO: '{"user":"test"}'})
        carrying["metadata"]["namespace"] = self.ns
        try:
            answer = self.client.review("/mutate", harness.review(carrying, namespace=self.ns, user=name,
                                                                  groups=groups))
        except (OSError, http.client.HTTPException):
            return None  # the controller closed an idle connection: the next try opens another
        return answer["allowed"]

    def wait_for_refresh(self, user: tuple[str, tuple[str, ...]], accepted: bool) -> None:
        """WaitForAdmissionControllerRefreshConfAfterAction: until the controller's answer to ``user`` shows it."""
        wait_for(lambda: self.user_info_accepted(user) is accepted, timeout=10, interval=0.05,
                 message=f"the admission controller to {'accept' if accepted else 'refuse'} user.info from {user[0]}")


@pytest.fixture
def access_control(admission_suite, admission_controller, ns):
    made = AccessControl(admission_suite, admission_controller, ns)
    kube, namespace = admission_suite.kube, admission_suite.configmaps.namespace
    before = dict(kube.get_config_map(CONFIG_MAP, namespace).data or {})
    yield made
    config_map = kube.get_config_map(CONFIG_MAP, namespace)
    config_map.data = before
    kube.update_config_map(config_map, namespace)
    made.wait_for_refresh(REPLICASET_CONTROLLER, accepted=True)
    made.wait_for_refresh(ADMIN, accepted=False)
    made.client.close()


def apps(yk) -> k8s.AppsV1Api:
    return k8s.AppsV1Api(yk.kube.core.api_client)


def test_check_that_deployment_is_rejected_when_controller_users_are_not_trusted(admission_suite, ns,
                                                                                access_control):
    """It("Check that deployment is rejected when controller users are not trusted")"""
    kube = admission_suite.kube
    access_control.update(TRUST_CONTROLLERS, "false")
    access_control.wait_for_refresh(REPLICASET_CONTROLLER, accepted=False)

    kube.create_deployment(test_deployment(), ns)
    try:
        # pod is not expected to appear: the ReplicaSet's pods are refused
        wait_for(lambda: any(e.reason == "FailedCreate" and e.involved_object.kind == "ReplicaSet"
                             for e in kube.core.list_namespaced_event(ns).items),
                 timeout=10, interval=0.05, message="the ReplicaSet's pod refused")
        assert kube.list_pods(ns, f"app={APP_NAME}").items == []
        status = apps(admission_suite).read_namespaced_deployment("sleepjob", ns).status
        assert (status.replicas or 0, status.available_replicas or 0, status.ready_replicas or 0) == (0, 0, 0)

        access_control.update(TRUST_CONTROLLERS, "true")
        access_control.wait_for_refresh(REPLICASET_CONTROLLER, accepted=True)
        # pod is expected to appear
        kube.wait_for_pod_by_selector(ns, f"app={APP_NAME}")
    finally:
        delete_workload_and_pods(admission_suite, ns, apps(admission_suite).delete_namespaced_deployment)


def test_check_that_deployment_is_rejected_when_external_user_is_not_trusted(admission_suite, ns, access_control):
    """It("Check that deployment is rejected when external user is not trusted")"""
    kube = admission_suite.kube
    access_control.update(EXTERNAL_USERS, "")
    access_control.wait_for_refresh(ADMIN, accepted=False)

    deployment = test_deployment()
    deployment["spec"]["template"]["metadata"]["annotations"] = {
        USER_INFO: '{"user":"test","groups":["devops","system:authenticated"]}'}
    with pytest.raises(k8s.ApiException):
        kube.create_deployment(deployment, ns)

    access_control.update(EXTERNAL_USERS, "(^minikube-user$|^kubernetes-admin$)")  # works with Minikube & KIND
    access_control.wait_for_refresh(ADMIN, accepted=True)
    kube.create_deployment(deployment, ns)
    try:
        # pod is expected to appear
        kube.wait_for_pod_by_selector(ns, f"app={APP_NAME}")
    finally:
        delete_workload_and_pods(admission_suite, ns, apps(admission_suite).delete_namespaced_deployment)


def test_check_that_replicaset_is_not_modified_if_submitted_by_system_user(admission_suite, ns, access_control):
    """It("Check that replicaset is not modified if submitted by system user")"""
    kube = admission_suite.kube
    access_control.update(BYPASS_AUTH, "true")
    access_control.wait_for_refresh(ADMIN, accepted=True)

    kube.create_deployment(test_deployment(), ns)
    try:
        kube.wait_for_pod_by_selector(ns, f"app={APP_NAME}")

        access_control.update(BYPASS_AUTH, "false")
        access_control.wait_for_refresh(ADMIN, accepted=False)

        # Read, change and write again while the write conflicts (client-go's RetryOnConflict): the
        # deployment controller writes the deployment's status as its pod starts.
        def updated() -> bool:
            deployment = apps(admission_suite).read_namespaced_deployment("sleepjob", ns)
            deployment.spec.template.spec.containers[0].image = "nginx:1.16.1"
            try:
                apps(admission_suite).replace_namespaced_deployment("sleepjob", ns, deployment)
            except k8s.ApiException as error:
                if error.status != 409:
                    raise
                return False
            return True

        wait_for(updated, timeout=10, interval=0.05, message="the deployment's template updated")

        # the updated template's pod running (upstream waits on the pods it lists at once, the old one among them)
        wait_for(lambda: any(p.spec.containers[0].image == "nginx:1.16.1" and p.status.phase == "Running"
                             for p in kube.list_pods(ns, f"app={APP_NAME}").items),
                 timeout=10, interval=0.05, message="the updated deployment's pod running")
        assert len(apps(admission_suite).list_namespaced_replica_set(ns).items) == 2
    finally:
        delete_workload_and_pods(admission_suite, ns, apps(admission_suite).delete_namespaced_deployment)
