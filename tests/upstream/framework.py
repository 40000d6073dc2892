"""Upstream YuniKorn's e2e framework (apache/yunikorn-k8shim, test/e2e/framework/helpers/) in Python, so the
ported suites read like upstream's: ``KubeCtl`` is helpers/k8s/k8s_utils.go over the official client,
``RClient`` is helpers/yunikorn/rest_api_utils.go over plain HTTP to ``/ws/v1``, ``init_sleep_pod`` and
``init_test_pod`` build pods as helpers/k8s/pod_conf.go does (the JSON client-go sends for them), and
``update_config_map_wrapper`` is helpers/yunikorn/wrappers.go.

What differs from a real cluster, and why it keeps upstream's assertions:
- Waits poll as upstream's do (``wait.PollUntilContextTimeout``), with shorter timeouts.
- kubesim's kubelet turns a bound pod Running after a short delay. A ``sleep N`` container's end is
  brought forward: ``wait_for_pod_succeeded`` ends the pod's containers when the wait begins, as the
  kubelet would N seconds later; what the scheduler does next is what upstream then asserts.
"""

from __future__ import annotations

import contextlib
import json
import random
import string
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field

import yaml
from kubernetes import client as k8s

from si.quantity import from_kubernetes
from tests.waiting import wait_for

DEFAULT_PARTITION = "default"
SCHEDULER_NAME = "yunikorn"
CONFIG_MAP = "yunikorn-configs"
POLICY_GROUP = "queues.yaml"
DOMAIN = "yunikorn.apache.org/"
TASK_GROUP_NAME = DOMAIN + "task-group-name"
TASK_GROUPS = DOMAIN + "task-groups"
SCHEDULING_POLICY_PARAMS = DOMAIN + "schedulingPolicyParameters"
ALLOW_PREEMPTION = DOMAIN + "allow-preemption"
PLACEHOLDER_FLAG = "internal.yunikorn.apache.org/placeholder"
# upstream's timeouts are minutes on a real cluster; on kubesim every wait ends in seconds or fails.
TIMEOUT = 12.0


class States:
    """helpers/yunikorn/states.go"""

    class Application:
        New, Submitted, Accepted, Running = "New", "Submitted", "Accepted", "Running"
        Rejected, Completed, Completing = "Rejected", "Completed", "Completing"
        Failing, Failed, Expired = "Failing", "Failed", "Expired"


def consistently(check, duration: float, interval: float = 0.5) -> None:
    """gomega's Consistently: ``check`` (which asserts) holds at every poll for ``duration`` seconds."""
    deadline = time.monotonic() + duration
    while True:
        check()
        if time.monotonic() >= deadline:
            return
        time.sleep(interval)


def eventually(check, timeout: float, interval: float = 0.2) -> None:
    """gomega's Eventually: ``check`` (which asserts) passes once within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            check()
            return
        except AssertionError:
            if time.monotonic() >= deadline:
                raise
        time.sleep(interval)


def rand_seq(n: int) -> str:
    """common.RandSeq"""
    return "".join(random.choices(string.ascii_lowercase + string.digits, k=n))


# ---- pods: helpers/k8s/pod_conf.go --------------------------------------------------------------------

NOT_CONFIG, ALLOW, DENY = 0, 1, 2  # AllowPreemptOpted


@dataclass
class PodAnnotation:
    task_group_name: str = ""
    task_groups: list | None = None
    scheduling_policy_params: str = ""
    other: dict[str, str] = field(default_factory=dict)

    def to_map(self) -> dict[str, str]:
        """PodAnnotationToMap: note that upstream always writes ``task-groups``, as ``null`` without any."""
        result = {}
        if self.task_group_name:
            result[TASK_GROUP_NAME] = self.task_group_name
        if self.scheduling_policy_params:
            result[SCHEDULING_POLICY_PARAMS] = self.scheduling_policy_params
        result[TASK_GROUPS] = json.dumps(self.task_groups, separators=(",", ":"))
        result.update(self.other)
        return result


def task_group(name: str, min_member: int, min_resource: dict[str, str], labels=None, annotations=None,
               node_selector=None, tolerations=None, affinity=None, topology_spread_constraints=None) -> dict:
    """cache.TaskGroup as encoding/json writes it: the Go field names (no json tags), absent ones null."""
    return {"Name": name, "MinMember": min_member, "Labels": labels, "Annotations": annotations,
            "MinResource": min_resource, "NodeSelector": node_selector, "Tolerations": tolerations,
            "Affinity": affinity, "TopologySpreadConstraints": topology_spread_constraints}


def decorate_pod_for_gang_scheduling(placeholder_timeout: int, style: str, task_group_name: str,
                                     task_groups: list, pod: dict) -> dict:
    """gang_job.go DecoratePodForGangScheduling"""
    params = f"placeholderTimeoutInSeconds={placeholder_timeout}" if placeholder_timeout else ""
    if style:
        params = f"{params} gangSchedulingStyle={style}" if params else "gangSchedulingStyle" + style
    annotations = pod["metadata"].setdefault("annotations", {})
    if params:
        annotations[SCHEDULING_POLICY_PARAMS] = params
    annotations[TASK_GROUP_NAME] = task_group_name
    annotations[TASK_GROUPS] = json.dumps(task_groups, separators=(",", ":"))
    return pod


@dataclass
class TestPodConfig:
    __test__ = False  # not a pytest class

    name: str = ""
    namespace: str = ""
    affinity: dict | None = None
    annotations: PodAnnotation | None = None
    labels: dict | None = None
    node_selector: dict | None = None
    resources: dict | None = None
    tolerations: list | None = None
    node_name: str = ""
    owner_references: list | None = None
    priority_class_name: str = ""
    deletion_grace_period_seconds: int | None = None
    topology_spread_constraints: list | None = None
    image: str = ""
    restart_policy: str = ""
    command: list | None = None
    init_container_sleep_secs: int = 0
    ports: list | None = None
    pvc_name: str = ""


def init_test_pod(conf: TestPodConfig) -> dict:
    """InitTestPod: the pod as client-go serializes it (empty fields omitted)."""
    container = {"name": "sleepcontainer", "image": conf.image or "alpine:latest", "imagePullPolicy": "IfNotPresent",
                 "command": conf.command or ["sleep", "300"], "resources": conf.resources or {}}
    if conf.ports:
        container["ports"] = conf.ports
    metadata = {"name": conf.name, "namespace": conf.namespace,
                "annotations": conf.annotations.to_map() if conf.annotations else {}}
    if conf.labels:
        metadata["labels"] = dict(conf.labels)
    if conf.owner_references:
        metadata["ownerReferences"] = conf.owner_references
    if conf.deletion_grace_period_seconds is not None:
        metadata["deletionGracePeriodSeconds"] = conf.deletion_grace_period_seconds
    spec = {"schedulerName": SCHEDULER_NAME, "containers": [container], "terminationGracePeriodSeconds": 1}
    for key, value in (("restartPolicy", conf.restart_policy), ("nodeName", conf.node_name),
                       ("nodeSelector", conf.node_selector), ("affinity", conf.affinity),
                       ("topologySpreadConstraints", conf.topology_spread_constraints),
                       ("tolerations", conf.tolerations), ("priorityClassName", conf.priority_class_name)):
        if value is not None and value != "":
            spec[key] = value
    if conf.init_container_sleep_secs > 0:
        spec["initContainers"] = [{"name": "init-sleep", "image": container["image"], "imagePullPolicy": "IfNotPresent",
                                   "command": ["sleep", str(conf.init_container_sleep_secs)],
                                   "resources": {"requests": {"cpu": "20m", "memory": "20M"}}}]
    if conf.pvc_name:
        spec["volumes"] = [{"name": "vol-" + rand_seq(5), "persistentVolumeClaim": {"claimName": conf.pvc_name}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def init_job_config(name: str, namespace: str, parallelism: int, pod_config: TestPodConfig) -> dict:
    """job_conf.go InitJobConfig"""
    pod = init_test_pod(pod_config)
    pod["spec"]["restartPolicy"] = "Never"
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": namespace},
            "spec": {"completions": parallelism, "parallelism": parallelism,
                     "template": {"metadata": pod["metadata"], "spec": pod["spec"]}}}


def init_test_job(job_name: str, parallelism: int, completions: int, pod: dict) -> dict:
    """gang_job.go InitTestJob"""
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": job_name},
            "spec": {"parallelism": parallelism, "completions": completions,
                     "template": {"metadata": pod["metadata"], "spec": pod["spec"]}}}


@dataclass
class SleepPodConfig:
    name: str = ""
    ns: str = ""
    app_id: str = ""
    time: int = 0
    cpu: int = 0  # millicores
    mem: int = 0  # megabytes (10^6)
    required_node: str = ""
    optedout: int = NOT_CONFIG
    labels: dict | None = None
    best_effort: bool = False


def init_sleep_pod(conf: SleepPodConfig) -> dict:
    """InitSleepPod"""
    required = None
    owners = None
    if conf.required_node:
        owners = [{"apiVersion": "v1", "kind": "DaemonSet", "name": "daemonset job", "uid": "daemonset"}]
        required = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [conf.required_node]}]}]}}}
    other = {ALLOW: {ALLOW_PREEMPTION: "true"}, DENY: {ALLOW_PREEMPTION: "false"}}.get(conf.optedout, {})
    labels = {"app": "sleep", "applicationId": conf.app_id or str(uuid.uuid4()), **(conf.labels or {})}
    resources = None if conf.best_effort else {"requests": {"cpu": f"{conf.cpu or 100}m", "memory": f"{conf.mem or 50}M"}}
    return init_test_pod(TestPodConfig(
        name=conf.name or "sleep-" + rand_seq(5), namespace=conf.ns, restart_policy="Never",
        deletion_grace_period_seconds=0, command=["sleep", str(conf.time or 600)],
        annotations=PodAnnotation(other=other), labels=labels, resources=resources,
        affinity=required if required is not None else {}, owner_references=owners))


# ---- the cluster: helpers/k8s/k8s_utils.go ---------------------------------------------------------------

MASTER_TAINTS = ("node-role.kubernetes.io/master", "node-role.kubernetes.io/control-plane")


def is_master_node(node) -> bool:
    return any(t.key in MASTER_TAINTS for t in node.spec.taints or [])


def get_worker_nodes(nodes) -> list:
    """GetWorkerNodes: the nodes without a NoSchedule taint."""
    return [n for n in nodes.items if not any(t.effect == "NoSchedule" for t in n.spec.taints or [])]


def is_compute_node(node) -> bool:
    role = (node.metadata.labels or {}).get("node-role.kubernetes.io/role")
    return role is None or role == "worker"


class KubeCtl:
    def __init__(self, sim, api_client) -> None:
        self.sim = sim
        self.core = k8s.CoreV1Api(api_client)
        self.scheduling = k8s.SchedulingV1Api(api_client)
        self.batch = k8s.BatchV1Api(api_client)

    # namespaces
    def create_namespace(self, namespace: str, annotations: dict | None = None):
        """CreateNamespace: the namespace, then (as upstream) wait for its ``default`` service account, which
        kubesim's service-account controller makes."""
        created = self.core.create_namespace({"metadata": {"name": namespace, "labels": {"Name": namespace},
                                                           "annotations": annotations}})
        def account_made() -> bool:
            names = self.core.list_namespaced_service_account(namespace, field_selector="metadata.name=default")
            return bool(names.items)
        wait_for(account_made, timeout=TIMEOUT, message=f"the default service account of {namespace}")
        return created

    @contextlib.contextmanager
    def test_namespace(self, namespace: str):
        """BeforeEach's CreateNamespace (the namespace must be Active) and AfterEach's TearDownNamespace."""
        assert self.create_namespace(namespace, None).status.phase == "Active"
        try:
            yield namespace
        finally:
            self.tear_down_namespace(namespace)

    def update_namespace(self, namespace: str, annotations: dict):
        ns = self.core.read_namespace(namespace)
        ns.metadata.annotations = annotations
        return self.core.replace_namespace(namespace, ns)

    def tear_down_namespace(self, namespace: str) -> None:
        self.delete_pods(namespace)
        self.core.delete_namespace(namespace)

    def delete_pods(self, namespace: str) -> None:
        for pod in self.core.list_namespaced_pod(namespace).items:
            self.delete_pod(pod.metadata.name, namespace)

    # pods
    def create_pod(self, pod: dict, namespace: str):
        return self.core.create_namespaced_pod(namespace, pod)

    def get_pod(self, name: str, namespace: str):
        return self.core.read_namespaced_pod(name, namespace)

    def get_pods(self, namespace: str):
        return self.core.list_namespaced_pod(namespace)

    def list_pods(self, namespace: str, selector: str):
        return self.core.list_namespaced_pod(namespace, label_selector=selector)

    def patch_pod(self, pod, namespace: str, patch: list[dict], *subresources: str):
        """PatchPod: a JSON patch, on the pod or (as client-go's variadic ``subresources``) its subresource."""
        if subresources == ("resize",):
            return self.core.patch_namespaced_pod_resize(pod.metadata.name, namespace, patch)
        return self.core.patch_namespaced_pod(pod.metadata.name, namespace, patch)

    def modify_resource_usage(self, pod, namespace: str, new_vcore: int, new_memory: int):
        """ModifyResourceUsage: the first container's cpu and memory requests replaced through pods/resize."""
        return self.patch_pod(pod, namespace, [
            {"op": "replace", "path": "/spec/containers/0/resources/requests/cpu", "value": f"{new_vcore}m"},
            {"op": "replace", "path": "/spec/containers/0/resources/requests/memory", "value": f"{new_memory}Mi"},
        ], "resize")

    def get_kubernetes_version(self):
        """GetKubernetesVersion: the server's version info."""
        return k8s.VersionApi(self.core.api_client).get_code()

    def delete_pod(self, name: str, namespace: str) -> None:
        try:
            self.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
        except k8s.ApiException as error:
            if error.status != 404:
                raise

    def _phase(self, namespace: str, name: str) -> str | None:
        try:
            return self.get_pod(name, namespace).status.phase
        except k8s.ApiException as error:
            if error.status == 404:
                return None
            raise

    def wait_for_pod_state(self, namespace: str, name: str, phase: str, timeout: float = TIMEOUT) -> None:
        wait_for(lambda: self._phase(namespace, name) == phase, timeout=timeout, interval=0.05,
                 message=f"pod {namespace}/{name} to be {phase}")

    def wait_for_pod_running(self, namespace: str, name: str, timeout: float = TIMEOUT) -> None:
        self.wait_for_pod_state(namespace, name, "Running", timeout)

    def wait_for_pod_pending(self, namespace: str, name: str, timeout: float = TIMEOUT) -> None:
        self.wait_for_pod_state(namespace, name, "Pending", timeout)

    def wait_for_pod_succeeded(self, namespace: str, name: str, timeout: float = TIMEOUT) -> None:
        """The pod's ``sleep`` ends now (see the module's docstring), then its phase is awaited."""
        self.wait_for_pod_running(namespace, name, timeout)
        self.sim.complete_pod(namespace, name)
        self.wait_for_pod_state(namespace, name, "Succeeded", timeout)

    def wait_for_pod_by_selector_running(self, namespace: str, selector: str, timeout: float = TIMEOUT) -> None:
        wait_for(lambda: all(p.status.phase == "Running" for p in self.list_pods(namespace, selector).items),
                 timeout=timeout, interval=0.05, message=f"pods {selector} in {namespace} to be Running")

    def pod_unschedulable(self, namespace: str, name: str) -> bool:
        """PodUnschedulable: the PodScheduled condition is False with reason Unschedulable."""
        try:
            conditions = self.get_pod(name, namespace).status.conditions or []
        except k8s.ApiException:
            return False
        return any(c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
                   for c in conditions)

    def wait_for_pod_unschedulable(self, pod, timeout: float = TIMEOUT) -> None:
        wait_for(lambda: self.pod_unschedulable(pod.metadata.namespace, pod.metadata.name), timeout=timeout,
                 interval=0.05, message=f"pod {pod.metadata.name} to be unschedulable")

    def wait_for_pod_scheduled(self, namespace: str, name: str, timeout: float = TIMEOUT) -> None:
        wait_for(lambda: self.get_pod(name, namespace).spec.node_name, timeout=timeout, interval=0.05,
                 message=f"pod {namespace}/{name} to be scheduled")

    def wait_for_pod_terminated(self, namespace: str, name: str, timeout: float = TIMEOUT) -> None:
        """As upstream's, which polls every 100 ms, the first time after 100 ms (PollUntilContextTimeout, not
        immediate): its callers read the scheduler right after, which has had that long to hear of it."""
        time.sleep(0.1)
        wait_for(lambda: self._phase(namespace, name) is None, timeout=timeout, interval=0.1,
                 message=f"pod {namespace}/{name} to be gone")

    def is_pod_event_triggered(self, namespace: str, pod_name: str, reason: str) -> bool:
        return any(e.involved_object.name == pod_name and reason in (e.reason or "")
                   for e in self.core.list_namespaced_event(namespace).items)

    def wait_for_pod_event(self, namespace: str, pod_name: str, reason: str, timeout: float = TIMEOUT) -> None:
        wait_for(lambda: self.is_pod_event_triggered(namespace, pod_name, reason), timeout=timeout,
                 interval=0.05, message=f"event {reason} of pod {namespace}/{pod_name}")

    # deployments (kube-controller-manager's Deployment and ReplicaSet controllers make their pods)
    def create_deployment(self, deployment: dict, namespace: str):
        return k8s.AppsV1Api(self.core.api_client).create_namespaced_deployment(namespace, deployment)

    def wait_for_pod_by_selector(self, namespace: str, selector: str, timeout: float = TIMEOUT) -> None:
        wait_for(lambda: self.list_pods(namespace, selector).items, timeout=timeout, interval=0.05,
                 message=f"pods {selector} in {namespace}")

    def wait_for_n_pods_by_selector_running(self, namespace: str, selector: str, count: int,
                                            timeout: float = TIMEOUT) -> None:
        def running() -> bool:
            pods = self.list_pods(namespace, selector).items
            return len(pods) == count and all(p.status.phase == "Running" for p in pods)
        wait_for(running, timeout=timeout, interval=0.05, message=f"{count} running pods {selector} in {namespace}")

    # jobs (kube-controller-manager's Job controller makes their pods)
    def create_job(self, job: dict, namespace: str):
        return self.batch.create_namespaced_job(namespace, job)

    def delete_job(self, name: str, namespace: str) -> None:
        self.batch.delete_namespaced_job(name, namespace, propagation_policy="Background")

    def wait_for_job_pods_created(self, namespace: str, job_name: str, count: int, timeout: float = TIMEOUT) -> None:
        wait_for(lambda: len(self.list_pods(namespace, f"job-name={job_name}").items) == count, timeout=timeout,
                 interval=0.05, message=f"{count} pods of job {job_name}")

    def wait_for_job_pods_succeeded(self, namespace: str, job_name: str, count: int,
                                    timeout: float = TIMEOUT) -> None:
        wait_for(lambda: sum(p.status.phase == "Succeeded"
                             for p in self.list_pods(namespace, f"job-name={job_name}").items) == count,
                 timeout=timeout, interval=0.05, message=f"{count} succeeded pods of job {job_name}")

    def wait_for_job_pods(self, namespace: str, job_name: str, count: int, timeout: float = TIMEOUT) -> None:
        """WaitForJobPods: ``count`` pods of the job Running."""
        wait_for(lambda: sum(p.status.phase == "Running"
                             for p in self.list_pods(namespace, f"job-name={job_name}").items) == count,
                 timeout=timeout, interval=0.05, message=f"{count} running pods of job {job_name}")

    # placeholders
    def list_placeholders(self, namespace: str, prefix: str) -> list:
        return [p for p in self.get_pods(namespace).items if p.metadata.name.startswith(prefix)
                and (p.metadata.annotations or {}).get(PLACEHOLDER_FLAG) == "true"]

    def wait_for_placeholders(self, namespace: str, prefix: str, count: int, timeout: float = TIMEOUT,
                              phase: str | None = None) -> None:
        wait_for(lambda: sum(phase is None or p.status.phase == phase
                             for p in self.list_placeholders(namespace, prefix)) == count,
                 timeout=timeout, interval=0.05, message=f"{count} placeholders {prefix}* in {namespace}")

    def wait_for_placeholders_stable_state(self, namespace: str, prefix: str, timeout: float = TIMEOUT) -> None:
        """WaitForPlaceholdersStableState: the placeholders' phases unchanged three polls in a row."""
        seen = {"phases": None, "same": 0}

        def stable() -> bool:
            phases = {p.metadata.name: p.status.phase for p in self.list_placeholders(namespace, prefix)}
            seen["same"] = seen["same"] + 1 if phases == seen["phases"] else 0
            seen["phases"] = phases
            return seen["same"] >= 3
        wait_for(stable, timeout=timeout, interval=0.2, message=f"placeholders {prefix}* in a stable state")

    # nodes
    def get_nodes(self):
        return self.core.list_node()

    def taint_nodes(self, names: list[str], key: str, value: str, effect: str) -> None:
        """TaintNodes: each node updated with the taint added (an update, as upstream does: a strategic
        merge patch merges taints by key and cannot remove one)."""
        for name in names:
            node = self.core.read_node(name)
            node.spec.taints = [t for t in node.spec.taints or [] if t.key != key]
            node.spec.taints.append(k8s.V1Taint(key=key, value=value, effect=effect))
            self.core.replace_node(name, node)

    def untaint_nodes(self, names: list[str], key: str) -> None:
        for name in names:
            node = self.core.read_node(name)
            node.spec.taints = [t for t in node.spec.taints or [] if t.key != key]
            self.core.replace_node(name, node)

    def set_node_label(self, name: str, key: str, value: str) -> None:
        self.core.patch_node(name, {"metadata": {"labels": {key: value}}})

    def remove_node_label(self, name: str, key: str, value: str) -> None:
        self.core.patch_node(name, {"metadata": {"labels": {key: None}}})

    def is_node_label_exists(self, name: str, key: str) -> bool:
        return key in (self.core.read_node(name).metadata.labels or {})

    def get_nodes_avail_res(self, nodes) -> dict[str, dict[str, int]]:
        """GetNodesAvailRes: allocatable less what the node's Running pods request (vcore, memory)."""
        available = {}
        for node in nodes.items:
            free = from_kubernetes({k: v for k, v in node.status.allocatable.items() if k in ("cpu", "memory")})
            for pod in self.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node.metadata.name}").items:
                if pod.status.phase != "Running":
                    continue
                for container in pod.spec.containers:
                    used = from_kubernetes((container.resources and container.resources.requests) or {})
                    for name in free:
                        free[name] -= used.get(name, 0)
            available[node.metadata.name] = free
        return available

    # priority classes
    def create_priority_class(self, name: str, value: int, preemption_policy: str = "PreemptLowerPriority"):
        return self.scheduling.create_priority_class({"metadata": {"name": name}, "value": value,
                                                      "preemptionPolicy": preemption_policy})

    def delete_priority_class(self, name: str) -> None:
        self.scheduling.delete_priority_class(name)

    # configmaps
    def get_config_map(self, name: str, namespace: str):
        return self.core.read_namespaced_config_map(name, namespace)

    def update_config_map(self, config_map, namespace: str):
        return self.core.replace_namespaced_config_map(config_map.metadata.name, namespace, config_map)


# ---- the scheduler's REST API: helpers/yunikorn/rest_api_utils.go ------------------------------------

class YAPIError(Exception):
    pass


class RClient:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def _get(self, path: str, **query):
        url = f"{self.base_url}/{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
        request = urllib.request.Request(url, headers={"Accept": "application/json",
                                                       "User-Agent": "Golang_Spider_Bot/3.0"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            body = json.loads(error.read() or b"{}")
            raise YAPIError(f"YAPIError: {body.get('status_code')}, {body.get('message')}, "
                            f"{body.get('description')}") from None

    def get_queues(self, partition: str):
        return self._get(f"ws/v1/partition/{partition}/queues")

    def get_queue(self, partition: str, queue_name: str, with_children: bool = False):
        if with_children:
            return self._get(f"ws/v1/partition/{partition}/queue/{queue_name}", subtree="true")
        return self._get(f"ws/v1/partition/{partition}/queue/{queue_name}")

    def get_apps(self, partition: str, queue_name: str):
        return self._get(f"ws/v1/partition/{partition}/queue/{queue_name}/applications")

    def get_app_info(self, partition: str, queue_name: str, app_id: str):
        if not queue_name:
            return self._get(f"ws/v1/partition/{partition}/application/{app_id}")
        return self._get(f"ws/v1/partition/{partition}/queue/{queue_name}/application/{app_id}")

    def get_completed_app_info(self, partition: str, app_id: str):
        """The latest of ``app_id`` among the completed (Completed, Failed, Expired) applications."""
        apps = [a for a in self._get(f"ws/v1/partition/{partition}/applications/completed")
                if a["applicationID"] == app_id]
        if not apps:
            raise YAPIError(f"no application found with ID {app_id} in 'Failed', 'Expired', 'Completed' state")
        return max(apps, key=lambda a: a["submissionTime"])

    def get_nodes(self, partition: str):
        return self._get(f"ws/v1/partition/{partition}/nodes")

    def get_partitions(self):
        return self._get("ws/v1/partitions")

    def get_user_usage(self, partition: str, user: str):
        return self._get(f"ws/v1/partition/{partition}/usage/user/{user}")

    def get_group_usage(self, partition: str, group: str):
        return self._get(f"ws/v1/partition/{partition}/usage/group/{group}")

    def get_groups_usage(self, partition: str):
        return self._get(f"ws/v1/partition/{partition}/usage/groups")

    def get_health_check(self):
        return self._get("ws/v1/scheduler/healthcheck")

    def get_failed_health_checks(self) -> str:
        """GetFailedHealthChecks: one line per failed check, '' when healthy."""
        health = self.get_health_check()
        if health["Healthy"]:
            return ""
        return "".join(f"Name: {c['Name']} Message: {c['DiagnosisMessage']}\n"
                       for c in health["HealthChecks"] if not c["Succeeded"])

    def get_allocation_log(self, partition: str, queue_name: str, app_id: str, pod_name: str):
        for request in self.get_app_info(partition, queue_name, app_id).get("requests") or []:
            if request.get("allocationTags", {}).get("kubernetes.io/meta/podName") == pod_name \
                    and request.get("allocationLog"):
                return request["allocationLog"]
        raise YAPIError("allocation is empty")

    def wait_for_registration(self, partition: str, timeout: float = TIMEOUT) -> None:
        """WaitForRegistration: the partition is listed."""
        def present() -> bool:
            try:
                return any(p["name"] == partition for p in self.get_partitions())
            except (YAPIError, OSError):
                return False
        wait_for(present, timeout=timeout, interval=0.1, message=f"partition {partition} registered")

    def wait_for_allocation_log(self, partition: str, queue_name: str, app_id: str, pod_name: str,
                                timeout: float = TIMEOUT) -> None:
        def present() -> bool:
            try:
                return bool(self.get_allocation_log(partition, queue_name, app_id, pod_name))
            except YAPIError:
                return False
        wait_for(present, timeout=timeout, interval=0.1, message=f"an allocation log of {pod_name}")

    def _app_state_is(self, partition: str, queue: str, app_id: str, state: str) -> bool:
        try:
            app = self.get_app_info(partition, queue, app_id)
        except YAPIError:
            return False
        if app["applicationState"] == States.Application.Rejected and state != States.Application.Rejected:
            raise AssertionError(f"app not in desired state: {state}")
        return app["applicationState"] == state

    def wait_for_app_state_transition(self, partition: str, queue: str, app_id: str, state: str,
                                      timeout: float = TIMEOUT) -> None:
        wait_for(lambda: self._app_state_is(partition, queue, app_id, state), timeout=timeout, interval=0.1,
                 message=f"application {app_id} in {queue} to be {state}")

    def _completed_state_is(self, partition: str, app_id: str, state: str) -> bool:
        try:
            return self.get_completed_app_info(partition, app_id)["applicationState"] == state
        except YAPIError:
            return False

    def wait_for_completed_app_state_transition(self, partition: str, app_id: str, state: str,
                                                timeout: float = TIMEOUT) -> None:
        wait_for(lambda: self._completed_state_is(partition, app_id, state), timeout=timeout, interval=0.1,
                 message=f"completed application {app_id} to be {state}")

    def wait_for_all_exec_pods_allocated(self, partition: str, queue: str, app_id: str, count: int,
                                         timeout: float = TIMEOUT) -> None:
        def allocated() -> bool:
            try:
                return len(self.get_app_info(partition, queue, app_id).get("allocations") or []) >= count
            except YAPIError:
                return False
        wait_for(allocated, timeout=timeout, interval=0.1, message=f"{count} allocations of {app_id}")

    def wait_for_queue_ts(self, queue_path: str, ts: str, timeout: float = TIMEOUT) -> None:
        def current() -> bool:
            try:
                return self.get_queue(DEFAULT_PARTITION, queue_path)["properties"].get("timestamp") == ts
            except YAPIError:
                return False
        wait_for(current, timeout=timeout, interval=0.05, message=f"queue {queue_path} timestamp {ts}")


def alloc_log_to_strings(log: list) -> list[str]:
    return [entry["message"] for entry in log]


def resource_value(resources: dict | None, name: str) -> int:
    """ResourceUsage.GetResourceValue"""
    return (resources or {}).get(name, 0)


# ---- configuration: helpers/common/test_queues_configs.go and helpers/yunikorn/wrappers.go --------------

def create_basic_config_map() -> dict:
    """CreateBasicConfigMap: one partition, the namespace as the queue (created), root open to all."""
    return {"partitions": [{"name": "default",
                            "placementrules": [{"name": "tag", "value": "namespace", "create": True}],
                            "queues": [{"name": "root", "submitacl": "*"}]}]}


def get_queue_config(config: dict, queue_path: str, partition: str = "default") -> dict:
    queues = next(p for p in config["partitions"] if p["name"] == partition)["queues"]
    for name in queue_path.split("."):
        queue = next(q for q in queues if q["name"] == name)
        queues = queue.setdefault("queues", [])
    return queue


def add_queue(config: dict, partition: str, parent: str, queue: dict) -> None:
    get_queue_config(config, parent, partition).setdefault("queues", []).append(queue)


def set_scheduling_policy(config: dict, partition: str, queue_path: str, policy: str) -> None:
    template = get_queue_config(config, queue_path, partition).setdefault("childtemplate", {})
    template.setdefault("properties", {})["application.sort.policy"] = policy


class ConfigMaps:
    """UpdateConfigMapWrapper / UpdateCustomConfigMapWrapper / RestoreConfigMapWrapper."""

    def __init__(self, kube: KubeCtl, rest: RClient, namespace: str) -> None:
        self.kube = kube
        self.rest = rest
        self.namespace = namespace
        self._ts = int(time.time())

    def _timestamp(self) -> str:
        # upstream sleeps a second so that two updates never share a timestamp; a counter does the same.
        self._ts = max(self._ts + 1, int(time.time()))
        return str(self._ts)

    def update(self, sched_policy: str = "", mutator=None, custom_map: dict | None = None):
        """Returns the configmap as it was, for ``restore``."""
        current = self.kube.get_config_map(CONFIG_MAP, self.namespace)
        old = k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name=CONFIG_MAP), data=dict(current.data or {}))
        config = create_basic_config_map()
        if sched_policy:
            set_scheduling_policy(config, "default", "root", sched_policy)
        ts = self._timestamp()
        get_queue_config(config, "root").setdefault("properties", {})["timestamp"] = ts
        if mutator is not None:
            mutator(config)
        current.data = {**(current.data or {}), POLICY_GROUP: yaml.safe_dump(config, sort_keys=False),
                        **(custom_map or {})}
        current.binary_data = None
        self.kube.update_config_map(current, self.namespace)
        try:
            self.rest.wait_for_queue_ts("root", ts)
        except AssertionError:  # refused: the configmap gets back what the scheduler still runs
            current = self.kube.get_config_map(CONFIG_MAP, self.namespace)
            current.data = old.data
            self.kube.update_config_map(current, self.namespace)
            raise
        return old

    def restore(self, old) -> None:
        current = self.kube.get_config_map(CONFIG_MAP, self.namespace)
        config = yaml.safe_load(old.data[POLICY_GROUP])
        ts = self._timestamp()
        get_queue_config(config, "root").setdefault("properties", {})["timestamp"] = ts
        current.data = {**old.data, POLICY_GROUP: yaml.safe_dump(config, sort_keys=False)}
        current.binary_data = old.binary_data
        self.kube.update_config_map(current, self.namespace)
        self.rest.wait_for_queue_ts("root", ts)
