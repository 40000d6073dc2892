"""``helm lint`` and ``helm template`` of charts/yunikorn: every object is valid Kubernetes, and the
objects say what the chart promises (replicas, probes, affinity, tolerations, PDB, RBAC)."""

from __future__ import annotations

import kubernetes_validate
import pytest
import yaml

from actors.cli import parse_args
from tests.chart.rendering import CHART, RELEASE_NAMESPACE, run_helm

KUBERNETES_VERSION = "1.35.0"
SCHEDULER_LABEL = {"key": "component", "operator": "In", "values": ["yunikorn-scheduler"]}

VARIANTS = {
    "defaults": {},
    "one admission replica": {"admissionController": {"replicaCount": 1}},
    "three admission replicas": {"admissionController": {"replicaCount": 3}},
    "no admission controller": {"embedAdmissionController": False},
    "custom queues": {"queues": "partitions:\n  - name: default\n    queues:\n      - name: root\n"
                                "        queues:\n          - name: batch\n",
                      "yunikornDefaults": {"service.schedulingInterval": "2s", "log.level": 0}},
    "host network, no co-location": {"admissionController": {"hostNetwork": True, "colocateWithScheduler": False,
                                                             "tolerateAllTaints": False}},
}


def test_lint_strict_passes(helm):
    done = run_helm(helm, "lint", "--strict", str(CHART))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 chart(s) failed" in done.stdout


@pytest.mark.parametrize("values", VARIANTS.values(), ids=VARIANTS.keys())
def test_every_object_is_valid_kubernetes(render, values):
    objects = render(values)
    assert objects
    for obj in objects:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        if obj["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"]["namespace"] == RELEASE_NAMESPACE, obj["metadata"]["name"]
        assert obj["metadata"]["labels"]["app"] == "yunikorn"


def test_default_objects(render):
    objects = render()
    assert objects.names("Deployment") == {"yunikorn-scheduler", "yunikorn-admission-controller"}
    assert objects.names("Service") == {"yunikorn-service", "yunikorn-admission-controller-service"}
    assert objects.names("ConfigMap") == {"yunikorn-defaults"}
    assert objects.names("Secret") == {"admission-controller-secrets"}
    assert objects.names("ServiceAccount") == {"yunikorn-admin", "yunikorn-admission-controller"}


def _pod_spec(objects, name):
    return objects.one("Deployment", name)["spec"]["template"]["spec"]


def _container(objects, name):
    (container,) = _pod_spec(objects, name)["containers"]
    return container


def test_scheduler_deployment(render):
    objects = render()
    deployment = objects.one("Deployment", "yunikorn-scheduler")
    container = _container(objects, "yunikorn-scheduler")
    assert container["command"] == ["yunikorn-scheduler"]
    assert "--rest-port=9080" in container["args"] and "--health-port=9081" in container["args"]
    assert "--rest-allowed-origins=*" in container["args"]  # CORS as upstream's (see README, "Security")
    assert container["ports"] == [{"name": "http", "containerPort": 9080, "protocol": "TCP"},
                                  {"name": "health", "containerPort": 9081, "protocol": "TCP"}]
    assert {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}} in container["env"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/ws/v1/health/live", "port": "health"}
    assert container["resources"]["limits"] and container["resources"]["requests"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert _pod_spec(objects, "yunikorn-scheduler")["securityContext"]["runAsNonRoot"] is True
    service = objects.one("Service", "yunikorn-service")
    assert service["spec"]["ports"][0]["port"] == 9080
    assert service["spec"]["selector"].items() >= deployment["spec"]["template"]["metadata"]["labels"].items()


def test_scheduler_pair_with_leader_election_by_default(render):
    objects = render()
    deployment = objects.one("Deployment", "yunikorn-scheduler")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"] == {"type": "RollingUpdate",
                                              "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    container = _container(objects, "yunikorn-scheduler")
    assert container["args"][-5:] == ["--leader-elect", "--leader-elect-lease-duration=15s",
                                      "--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=2s",
                                      "--leader-elect-resource-name=yunikorn-scheduler"]
    assert {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in container["env"]
    # the kubelet counts a warm standby as ready (rollouts and the budget go on); the Service routes
    # only to the pod the leader labelled
    assert container["readinessProbe"]["httpGet"] == {"path": "/ws/v1/health/ready?standby=ready", "port": "health"}
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert objects.one("Service", "yunikorn-service")["spec"]["selector"] == {
        **pod_labels, "yunikorn.apache.org/leader": "true"}
    (term,) = _pod_spec(objects, "yunikorn-scheduler")["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"].items() <= pod_labels.items()
    budget = objects.one("PodDisruptionBudget", "yunikorn-scheduler")
    assert budget["spec"]["minAvailable"] == 1
    assert budget["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    role = objects.one("Role", "yunikorn-scheduler")
    assert {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
            "verbs": ["get", "watch", "create", "update"]} in role["rules"]
    assert {"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]} in role["rules"]


@pytest.mark.parametrize("values", [{"scheduler": {"leaderElection": {"enabled": False}}},
                                    {"scheduler": {"leaderElection": {"enabled": False}, "replicaCount": 1}}])
def test_one_scheduler_without_leader_election(render, values):
    objects = render(values)
    deployment = objects.one("Deployment", "yunikorn-scheduler")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    container = _container(objects, "yunikorn-scheduler")
    assert not [arg for arg in container["args"] if arg.startswith("--leader-elect")]
    assert "POD_NAME" not in {env["name"] for env in container["env"]}
    assert container["readinessProbe"]["httpGet"] == {"path": "/ws/v1/health/ready", "port": "health"}
    assert objects.one("Service", "yunikorn-service")["spec"]["selector"] == \
        deployment["spec"]["template"]["metadata"]["labels"]
    assert "affinity" not in _pod_spec(objects, "yunikorn-scheduler")
    assert "yunikorn-scheduler" not in objects.names("PodDisruptionBudget")
    assert not [rule for rule in objects.one("Role", "yunikorn-scheduler")["rules"]
                if "leases" in rule["resources"] or "pods" in rule["resources"]]


def test_three_scheduler_replicas_and_custom_lease_timing(render):
    election = {"enabled": True, "leaseDuration": "30s", "renewDeadline": "20s", "retryPeriod": "500ms",
                "resourceName": "yk-lease"}
    objects = render({"scheduler": {"replicaCount": 3, "leaderElection": election}})
    assert objects.one("Deployment", "yunikorn-scheduler")["spec"]["replicas"] == 3
    assert _container(objects, "yunikorn-scheduler")["args"][-4:] == [
        "--leader-elect-lease-duration=30s", "--leader-elect-renew-deadline=20s",
        "--leader-elect-retry-period=500ms", "--leader-elect-resource-name=yk-lease"]
    for obj in objects:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def test_rest_allowed_origins_reach_the_scheduler(render):
    args = _container(render({"scheduler": {"restAllowedOrigins": "https://ui.example.com, https://b.example"}}),
                      "yunikorn-scheduler")["args"]
    assert "--rest-allowed-origins=https://ui.example.com, https://b.example" in args


def test_the_scheduler_keeps_its_threads_on_one_cpu_unless_told_otherwise(render):
    assert "--cpu-affinity=one" in _container(render(), "yunikorn-scheduler")["args"]
    assert "--cpu-affinity=all" in _container(render({"scheduler": {"cpuAffinity": "all"}}), "yunikorn-scheduler")["args"]


def test_the_readers_share_reaches_the_scheduler_as_it_parses_it(render):
    for values, share in (({}, 0.05), ({"scheduler": {"restReadShare": 1}}, 1.0),
                          ({"scheduler": {"restReadShare": 0.2}}, 0.2)):
        args = [a for a in _container(render(values), "yunikorn-scheduler")["args"] if a.startswith("--rest-read-share")]
        assert parse_args(args).rest_read_share == share


@pytest.mark.parametrize("bad", [0, 1.5, "a tenth"])
def test_a_readers_share_out_of_range_is_refused(helm, bad, tmp_path):
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"scheduler": {"restReadShare": bad}}))
    done = run_helm(helm, "template", "yunikorn", str(CHART), "--values", str(values))
    assert done.returncode != 0 and "restReadShare" in done.stderr


def test_scheduler_placement_values_reach_the_pod(render):
    placement = {"nodeSelector": {"pool": "system"}, "priorityClassName": "system-cluster-critical",
                 "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "yk", "effect": "NoSchedule"}],
                 "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                     "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In",
                                                                  "values": ["a"]}]}]}}},
                 "livenessPath": "/live", "readinessPath": "/ready"}
    objects = render({"scheduler": placement})
    spec = _pod_spec(objects, "yunikorn-scheduler")
    for key in ("nodeSelector", "priorityClassName", "tolerations"):
        assert spec[key] == placement[key]
    assert spec["affinity"]["nodeAffinity"] == placement["affinity"]["nodeAffinity"]
    assert spec["affinity"]["podAntiAffinity"]  # the pair's own, added
    container = _container(objects, "yunikorn-scheduler")
    assert container["livenessProbe"]["httpGet"]["path"] == "/live"
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready?standby=ready"


def test_admission_controller_deployment(render):
    objects = render()
    deployment = objects.one("Deployment", "yunikorn-admission-controller")
    assert deployment["spec"]["replicas"] == 2
    spec = _pod_spec(objects, "yunikorn-admission-controller")
    assert "hostNetwork" not in spec
    assert {"operator": "Exists"} in spec["tolerations"]
    (term,) = spec["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term == {"labelSelector": {"matchExpressions": [SCHEDULER_LABEL]}, "topologyKey": "kubernetes.io/hostname"}
    scheduler_labels = objects.one("Deployment", "yunikorn-scheduler")["spec"]["template"]["metadata"]["labels"]
    assert scheduler_labels["component"] == "yunikorn-scheduler"
    container = _container(objects, "yunikorn-admission-controller")
    assert container["command"] == ["yunikorn-admission-controller"]
    assert "--listen=0.0.0.0:9089" in container["args"]
    # Placeholders are the scheduler's: the controller refuses them from any other user.
    assert "--scheduler-service-account=yunikorn-admin" in container["args"]
    assert _pod_spec(objects, "yunikorn-scheduler")["serviceAccountName"] == "yunikorn-admin"
    assert container["ports"][0]["containerPort"] == 9089
    for probe in ("startupProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"scheme": "HTTPS", "path": "/health", "port": "webhook-api"}
    service = objects.one("Service", "yunikorn-admission-controller-service")
    assert service["spec"]["ports"] == [{"name": "webhook-api", "port": 443, "targetPort": "webhook-api",
                                         "protocol": "TCP"}]
    secret = objects.one("Secret", "admission-controller-secrets")
    assert "data" not in secret and secret["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"


def test_affinity_and_tolerations_can_be_turned_off_or_extended(render):
    own_toleration = {"key": "gpu", "operator": "Exists"}
    own_affinity = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": {
            "matchLabels": {"component": "yunikorn-admission-controller"}}}}]}}
    spec = _pod_spec(render({"admissionController": {"tolerations": [own_toleration], "affinity": own_affinity}}),
                     "yunikorn-admission-controller")
    assert spec["tolerations"] == [{"operator": "Exists"}, own_toleration]
    assert spec["affinity"]["podAntiAffinity"] == own_affinity["podAntiAffinity"]
    assert spec["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    spec = _pod_spec(render(VARIANTS["host network, no co-location"]), "yunikorn-admission-controller")
    assert "affinity" not in spec and "tolerations" not in spec
    assert spec["hostNetwork"] is True and spec["dnsPolicy"] == "ClusterFirstWithHostNet"


@pytest.mark.parametrize("replicas", [1, 2, 3])
def test_pdb_only_with_more_than_one_replica(render, replicas):
    objects = render({"admissionController": {"replicaCount": replicas}})
    assert objects.one("Deployment", "yunikorn-admission-controller")["spec"]["replicas"] == replicas
    budgets = [b for b in objects.of_kind("PodDisruptionBudget") if b["metadata"]["name"] != "yunikorn-scheduler"]
    if replicas == 1:
        assert budgets == []
    else:
        (budget,) = budgets
        assert budget["spec"]["minAvailable"] == 1
        pod_labels = objects.one("Deployment", "yunikorn-admission-controller")["spec"]["template"]["metadata"]
        assert budget["spec"]["selector"]["matchLabels"].items() <= pod_labels["labels"].items()


def test_without_admission_controller_only_the_scheduler_is_deployed(render):
    objects = render({"embedAdmissionController": False})
    assert objects.names("Deployment") == {"yunikorn-scheduler"}
    assert objects.names("Service") == {"yunikorn-service"}
    assert objects.of_kind("Secret") == [] and objects.names("PodDisruptionBudget") == {"yunikorn-scheduler"}
    assert not any("admission" in obj["metadata"]["name"] for obj in objects)


def test_queues_and_defaults_configmaps(render):
    objects = render(VARIANTS["custom queues"])
    queues = yaml.safe_load(objects.one("ConfigMap", "yunikorn-configs")["data"]["queues.yaml"])
    assert queues["partitions"][0]["queues"][0]["queues"][0]["name"] == "batch"
    assert objects.one("ConfigMap", "yunikorn-defaults")["data"] == {"service.schedulingInterval": "2s",
                                                                     "log.level": "0"}


def test_rbac_has_no_wildcards(render):
    for obj in render().of_kind("ClusterRole") + render().of_kind("Role"):
        for rule in obj["rules"]:
            for field in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert "*" not in rule.get(field, []), (obj["metadata"]["name"], rule)
            assert not rule.get("nonResourceURLs"), obj["metadata"]["name"]


@pytest.mark.parametrize("values, complaint", [
    ({"admissionController": {"replicaCount": "two"}}, "/admissionController/replicaCount"),
    ({"admissionController": {"replicaCount": 0}}, "/admissionController/replicaCount"),
    ({"scheduler": {"logLevel": "LOUD"}}, "/scheduler/logLevel"),
    ({"scheduler": {"cpuAffinity": "two"}}, "/scheduler/cpuAffinity"),
    ({"scheduler": {"livenessPath": "health"}}, "/scheduler/livenessPath"),
    ({"schedular": {}}, "schedular"),
    ({"embedAdmissionController": "yes"}, "/embedAdmissionController"),
    ({"pluginMode": {"enabled": "yes"}}, "/pluginMode/enabled"),
    ({"pluginMode": {"httpTimeout": "five seconds"}}, "/pluginMode/httpTimeout"),
    ({"pluginMode": {"image": {"tag": 135}}}, "/pluginMode/image/tag"),
    ({"service": {"port": 70000}}, "/service/port"),
    ({"scheduler": {"replicaCount": 0}}, "/scheduler/replicaCount"),
    ({"scheduler": {"leaderElection": {"leaseDuration": "15"}}}, "/scheduler/leaderElection/leaseDuration"),
    ({"scheduler": {"leaderElection": {"enabled": False}, "replicaCount": 2}}, "needs scheduler.leaderElection"),
], ids=lambda value: str(value)[:40])
def test_bad_values_fail_at_template_time(helm, tmp_path, values, complaint):
    values_file = tmp_path / "values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    done = run_helm(helm, "template", "yunikorn", str(CHART), "--values", str(values_file))
    assert done.returncode != 0
    assert complaint in done.stderr, done.stderr
    assert done.stdout == ""
